"""Where a wrapping inline element's words are in a translation (`wrap`, for `inline.place`): its text kept as it
was (`copied`), words like its own translation (difflib, `HINT_SIMILARITY`), the same part of one word cut alike,
or the longest free run of the words the alignment gives it; edge punctuation it did not hold left outside
(`EDGE_PUNCTUATION`). Character spans throughout: the element's in the source, the candidates' in the translation.
"""

import difflib
import re


EDGE_PUNCTUATION = ".,;:!?\"'()[]«»„“”‚‘’…"  # kept outside a placed element unless the element held it there


def wrap(
    source: str,
    at: tuple[int, int],
    translation: str,
    source_words,
    aligned: list[tuple[int, int]],
    target_words,
    bounds,
    siblings,
    others,
    hint: str | None,
) -> tuple[tuple[int, int] | None, bool]:
    """A wrapping element's span in the translation (`at`: its characters in `source`), and whether its words are
    settled (else its own text's translation, `hint`, may take their place). Tried in order: its text kept as it
    was (a path, a name: settled when the hint keeps it too); words like the hint; the same part of a word
    ("<kbd>Ctrl</kbd>+C"); the longest run of aligned words (as the alignment gives them; the hint may replace
    them)."""
    element_start, element_end = at
    held = source[element_start:element_end]
    span = copied(translation, held, bounds, siblings, aligned)
    if span is not None:
        return span, hint is None or difflib.SequenceMatcher(None, hint.strip(), held.strip()).ratio() >= 0.9
    if hint:
        span = copied(translation, hint, bounds, others, aligned)
        if span is not None:
            return span, True
        span = _like_hint(translation, target_words, aligned, bounds, others, hint, held)
        if span is not None:  # alike: a label there takes its own translation's exact words
            return span, False
    covered = [word for word in source_words if word[0] < element_end and word[1] > element_start]
    if len(covered) == 1:
        span = _within_word(source, covered[0], at, translation, target_words, aligned, bounds, others)
        if span is not None:
            return span, True
    run = _longest_free_run(aligned, others)
    return (None if run is None else _trim(translation, *run, held)), False


def _longest_free_run(aligned: list[tuple[int, int]], taken: list[tuple[int, int]]) -> tuple[int, int] | None:
    """The characters from the first to the last of the longest run of `aligned` words (character spans, in
    order) that no `taken` span overlaps or interrupts."""
    runs: list[list[tuple[int, int]]] = []
    for start, end in aligned:
        if any(first < end and last > start for first, last in taken):
            continue
        if runs and not any(runs[-1][-1][1] <= first < start for first, _ in taken):
            runs[-1].append((start, end))
        else:
            runs.append([(start, end)])
    if not runs:
        return None
    best = max(runs, key=len)  # the first of the longest
    return best[0][0], best[-1][1]


def copied(translation: str, held: str, bounds, taken, aligned: list[tuple[int, int]]) -> tuple[int, int] | None:
    """Where the translation holds the element's text as it was (a path, a number, a name the model kept), as
    whole words, free, within `bounds`: the occurrence that overlaps an aligned word first, else the first."""
    held = held.strip(EDGE_PUNCTUATION + " ")
    if not held:
        return None
    found = [
        match.span()
        for match in re.finditer(rf"(?<!\w){re.escape(held)}(?!\w)", translation)
        if bounds[0] <= match.start()
        and match.end() <= bounds[1]
        and not any(first < match.end() and last > match.start() for first, last in taken)
    ]
    aligned_first = sorted(found, key=lambda span: not any(a < span[1] and b > span[0] for a, b in aligned))
    return aligned_first[0] if aligned_first else None


HINT_SIMILARITY = 0.9  # difflib's ratio of a candidate run of words to the hint, at least
PIECE = re.compile(r"[^\W\d_]+|\d+|\W|_")  # letters, digits, one other character: "H2O" is H, 2, O


def _like_hint(
    translation: str, target_words, aligned: list[tuple[int, int]], bounds, taken, hint: str, held: str
) -> tuple[int, int] | None:
    """The run of free words in `bounds` most like `hint` (difflib's ratio, lower-cased, edge punctuation aside),
    the share of its words that the alignment gives the element breaking ties and near-ties; None when no run is
    `HINT_SIMILARITY` alike."""
    hint = hint.strip(EDGE_PUNCTUATION + " ").lower()
    free = [
        j
        for j, (start, end) in enumerate(target_words)
        if bounds[0] <= start and end <= bounds[1] and not any(first < end and last > start for first, last in taken)
    ]
    longest = len(hint.split()) + 2
    best, best_score = None, HINT_SIMILARITY
    for k, first in enumerate(free):
        for last in free[k : k + longest]:
            if last - first != free.index(last) - k:  # a taken word between
                break
            span = _trim(translation, target_words[first][0], target_words[last][1], held)
            similarity = difflib.SequenceMatcher(None, translation[span[0] : span[1]].lower(), hint).ratio()
            share = sum(target_words[j] in aligned for j in range(first, last + 1)) / (last - first + 1)
            if similarity >= HINT_SIMILARITY and similarity + 0.3 * share > best_score:
                best, best_score = span, similarity + 0.3 * share
    return best


def _within_word(
    source: str,
    word: tuple[int, int],
    at: tuple[int, int],
    translation: str,
    target_words,
    aligned: list[tuple[int, int]],
    bounds,
    taken: list[tuple[int, int]],
) -> tuple[int, int] | None:
    """For an element that holds part of one source word ("<kbd>Ctrl</kbd>+<kbd>C</kbd>", "x<sub>2</sub>"), the
    same part of a translation word cut alike: the same word kept as it was first, else an aligned word cut by the
    same punctuation ("Strg+C"); for part of one run of letters ("x<sub>i</sub>"), the same characters of the same
    word kept as it was, and no other. None when no such word is free."""
    element_start, element_end = at
    trimmed = _trim(source, *word, "")
    if element_start <= trimmed[0] and element_end >= trimmed[1]:  # the whole word but its punctuation
        return None
    same = [
        span
        for span in target_words
        if bounds[0] <= span[0]
        and span[1] <= bounds[1]
        and translation[slice(*_trim(translation, *span, ""))] == source[slice(*_trim(source, *word, ""))]
    ]
    aligned = same + aligned
    word = _trim(source, *word, "")
    pieces = [match.span() for match in re.finditer(PIECE, source[word[0] : word[1]])]
    held = [
        k for k, (start, end) in enumerate(pieces) if word[0] + start < element_end and word[0] + end > element_start
    ]
    if any(word[0] + pieces[k][0] < element_start or word[0] + pieces[k][1] > element_end for k in held):
        # part of one run of letters ("x<sub>i</sub>"): the same characters of the same word kept as it was
        for target_start, target_end in same:
            start = _trim(translation, target_start, target_end, "")[0] + element_start - word[0]
            span = (start, start + element_end - element_start)
            if not any(first < span[1] and last > span[0] for first, last in taken):
                return span
        return None
    for target_start, target_end in aligned:
        target_start, target_end = _trim(translation, target_start, target_end, "")
        target_pieces = [match.span() for match in re.finditer(PIECE, translation[target_start:target_end])]
        if (
            len(target_pieces) != len(pieces)
            or not held
            or any(
                not source[word[0] + a : word[0] + b].isalnum()
                and source[word[0] + a : word[0] + b] != translation[target_start + c : target_start + d]
                for (a, b), (c, d) in zip(pieces, target_pieces)
            )
        ):
            continue
        span = (target_start + target_pieces[held[0]][0], target_start + target_pieces[held[-1]][1])
        if not any(first < span[1] and last > span[0] for first, last in taken):
            return span
    return None


def _trim(translation: str, start: int, end: int, held: str) -> tuple[int, int]:
    """`start:end` without the edge punctuation the element did not hold at that edge (never empty)."""
    first, last = start, end
    if not held[:1] or held[0] not in EDGE_PUNCTUATION:
        while first < last and translation[first] in EDGE_PUNCTUATION:
            first += 1
    if not held[-1:] or held[-1] not in EDGE_PUNCTUATION:
        while last > first and translation[last - 1] in EDGE_PUNCTUATION:
            last -= 1
    return (first, last) if first < last else (start, end)


__all__ = ["EDGE_PUNCTUATION", "HINT_SIMILARITY", "copied", "wrap"]
