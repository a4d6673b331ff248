"""Inline markup carried through a translation: each inline element of a text put back, exactly once, around the
translation of the words it held, by the word alignment of the text and its translation (as Bergamot carries HTML
through Firefox Translations).

The caller (`text.markup` for HTML, and through it `documents.files` for XLIFF and .po) hands over
the text the engine translated, its inline elements as `Inline` spans over it, the translation, the alignment
(Pharaoh pairs of whitespace words) and, where it has them, each element's own text translated on its own
(`hints`); `place` answers where each element goes in the translation (`markup.nest` turns that into a tree).
Element by element in document order, so that a parent is placed before what it holds:

- `wrap` (`<a>`, `<b>`, `<kbd>`, XLIFF `<g>`), within its parent's placement and outside what its earlier siblings
  took, the first of (`text.wrapping`): its text as it was, where the translation kept it (a path, a name; reserved
  for it against the others' alignments); its own translation, or words that much alike (difflib, `HINT_SIMILARITY`);
  the same part of one word cut alike ("<kbd>Ctrl</kbd>+<kbd>C</kbd>" in "Strg+C", "H<sub>2</sub>O"); the longest run
  of the words aligned to its words. Punctuation at the edges stays outside unless the element held it
  ("<a>partitions</a>." gives "<a>Partitionen</a>."). A UI label ("Copy List", capitalised) that the sentence left
  untranslated, or placed only by the alignment, takes its own translation in those words' place: labels are what a
  small model translates best alone (the markup study: docs/results/markup/).
- `verbatim` (`<code>`, a Mastodon hashtag, `translate="no"`, XLIFF `<x/>`, `<ph>`): the engine saw a placeholder
  `token` in its place and the element goes where the translation holds that token.
- `point` (a void element, `<img>`, a comment): after the translation of the source word before it.

An element with no aligned word left to it (or a verbatim one whose token the translation lost) is a fallback: it
goes where a point would go (but never past a sibling placed after it in the source, nor before one placed before
it), holding its own translation where one is given (else its source content as it was;
a lost token is written back), parted by a space from a word it meets where the source parted it by one, and it is
counted, so that a reader of the output can find it. Siblings never cross
and children stay inside their parent, so the tree is always well-formed.
"""

import dataclasses
import re

from .wrapping import EDGE_PUNCTUATION, copied, wrap


WRAP, VERBATIM, POINT = "wrap", "verbatim", "point"


@dataclasses.dataclass(frozen=True)
class Inline:
    """One inline element over a text: its characters `start:end` (for a verbatim element, those of its token),
    the index of the element it lies in (None: the text itself), its kind, and a verbatim element's token."""

    start: int
    end: int
    parent: int | None = None
    kind: str = WRAP
    token: str | None = None
    spaced: bool = False  # a point the source parted from both neighbours by whitespace ("the <img> icon")


@dataclasses.dataclass
class Placement:
    """Where each element goes in a translation: `spans[k]`, its characters there (start == end for a point or a
    fallback); `fallback[k]`, whether it went by the fallback rule; None for an element inside a fallback (it
    stays with its parent's source content)."""

    spans: list[tuple[int, int] | None]
    fallback: list[bool]
    translation: str = ""

    @property
    def fallbacks(self) -> int:
        return sum(self.fallback)


def words(text: str) -> list[tuple[int, int]]:
    """The character spans of the whitespace-separated words of `text` (the alignment's words)."""
    return [match.span() for match in re.finditer(r"\S+", text)]


def place(
    source: str,
    elements: list[Inline],
    translation: str,
    alignment: list[tuple[int, int]],
    hints: list[str | None] | None = None,
) -> Placement:
    """Each of `elements` (over `source`, parents before children) placed in `translation` by `alignment`, and
    by `hints` where given: each element's own text translated on its own (see `wrapping.wrap`)."""
    source_words, target_words = words(source), words(translation)
    targets_of: dict[int, set[int]] = {}
    for i, j in alignment:
        if j < len(target_words):
            targets_of.setdefault(i, set()).add(j)
    hints = hints or [None] * len(elements)
    spans: list[tuple[int, int] | None] = []
    fallback, settled = [], set()
    taken: dict[int | None, list[tuple[int, int]]] = {}  # per parent: the characters its placed children hold
    copies = {
        k: copied(translation, source[e.start : e.end], (0, len(translation)), [], [])
        for k, e in enumerate(elements)
        if e.kind == WRAP
    }  # kept as they were: reserved for their element
    token_from = 0
    for k, element in enumerate(elements):
        if element.parent is not None and (spans[element.parent] is None or fallback[element.parent]):
            spans.append(None)
            fallback.append(False)
            continue
        bounds = _bounds(spans, element.parent, len(translation))
        siblings = taken.setdefault(element.parent, [])
        span = None
        if element.kind == VERBATIM:
            found = translation.find(element.token, *bounds)
            found = found if found >= 0 else translation.find(element.token, token_from)
            if found >= 0:
                token_from = found + len(element.token)
                span = (found, token_from)
        elif element.kind == WRAP:
            aligned = sorted(
                {
                    j
                    for i, (start, end) in enumerate(source_words)
                    if start < element.end and end > element.start
                    for j in targets_of.get(i, ())
                    if target_words[j][0] < bounds[1] and target_words[j][1] > bounds[0]
                }
            )
            others = siblings + [copy for other, copy in copies.items() if copy and other != k]
            clipped = [(max(target_words[j][0], bounds[0]), min(target_words[j][1], bounds[1])) for j in aligned]
            span, kept = wrap(
                source,
                (element.start, element.end),
                translation,
                source_words,
                clipped,
                target_words,
                bounds,
                siblings,
                others,
                hints[k],
            )
            if kept:
                settled.add(k)
        if span is not None:
            siblings.append(span)
            spans.append(span)
            fallback.append(False)
            continue
        point = _point(source, element.start, source_words, targets_of, target_words, bounds, translation)
        spans.append((point, point))
        fallback.append(element.kind != POINT)
    _keep_source_order(elements, spans, fallback)
    swaps = _swaps(source, elements, spans, fallback, settled, hints)
    translation, spans = _swap_in(translation, spans, swaps, elements)
    translation, spans = _parted(source, elements, translation, spans, fallback, swaps)
    return Placement(spans, fallback, translation)


def _parted(
    source: str, elements: list[Inline], translation: str, spans: list, fallback: list[bool], swaps: dict
) -> tuple[str, list]:
    """`_spaced` over every fallback that keeps its source text and every void element the source parted by spaces,
    from the end of the translation; at one point, the later in the source first."""
    parted = [
        k
        for k, e in enumerate(elements)
        if ((fallback[k] and e.kind == WRAP) or (e.kind == POINT and e.spaced)) and k not in swaps and spans[k]
    ]
    for k in sorted(parted, key=lambda k: (-spans[k][0], -k)):
        earlier = any(j < k and spans[j] == spans[k] for j in parted)  # one that goes before it at that point
        translation, spans = _spaced(source, elements, translation, spans, k, earlier)
    return translation, spans


def _spaced(
    source: str, elements: list[Inline], translation: str, spans: list, k: int, earlier: bool
) -> tuple[str, list]:
    """`translation` with a fallback that keeps its source content (no own translation took its point) parted by a
    space from a word it meets on a side where the source parted it by a space or the text's edge
    ("drücken.<b>Add</b>" would read "drücken.Add"), and every span moved with the text: one that ends at the point
    stays before it, one that begins there (or a zero-width one later in the source) goes after it, and an element
    holding the fallback keeps it inside. `earlier`: another such fallback goes at the same point before it (a word
    it meets too)."""
    point, element = spans[k][0], elements[k]
    meets = earlier or (point > 0 and not translation[point - 1].isspace())
    parted_before = element.start == 0 or source[element.start - 1].isspace() or element.spaced  # an edge too
    parted_after = element.end == len(source) or source[element.end].isspace() or element.spaced
    before = meets and parted_before
    after = point < len(translation) and not translation[point].isspace() and parted_after
    added = before + after
    holders = set()
    parent = element.parent
    while parent is not None:
        holders.add(parent)
        parent = elements[parent].parent

    def moved(j: int, span: tuple[int, int] | None) -> tuple[int, int] | None:
        if j == k:
            return (point + before, point + before)
        if span is None or not added:
            return span
        start, end = span
        if start == end:  # zero-width: one at the point stays before it only if it comes first in the source
            return span if start < point or (start == point and j < k) else (start + added, end + added)
        shifted_start = start + added if start > point or (start == point and j not in holders) else start
        grown = before if j in holders else 0  # a holder ending at the point keeps the fallback, not the space after
        return (shifted_start, end + added if end > point else end + grown if end == point else end)

    spaced = translation[:point] + " " * before + " " * after + translation[point:]
    return spaced, [moved(j, span) for j, span in enumerate(spans)]


def _swaps(
    source: str, elements: list[Inline], spans: list, fallback: list[bool], settled: set[int], hints: list[str | None]
) -> dict[int, str]:
    """What takes the place of an element's words or point: its own translation, for a label or a name whose words
    are not settled (`_label_or_name`), and a lost token, written back (and counted as a fallback)."""
    swaps = {
        k: hints[k]
        for k in _outermost_of_same_text(elements, source)
        if hints[k]
        and spans[k] is not None
        and k not in settled
        and _label_or_name(source[elements[k].start : elements[k].end], hints[k])
    }
    swaps.update({k: element.token for k, element in enumerate(elements) if element.kind == VERBATIM and fallback[k]})
    return swaps


def _keep_source_order(elements: list[Inline], spans: list, fallback: list[bool]) -> None:
    """Each fallback's point (a guess: after the translation of the word before it) moved, where the guess put it
    past a sibling that follows it in the source or before one that precedes it, to that sibling's edge (a guess
    never reorders elements that the alignment placed), and never left inside a sibling's words."""
    for k, element in enumerate(elements):
        if not fallback[k]:
            continue
        placed = [
            j
            for j, other in enumerate(elements)
            if other.parent == element.parent
            and j != k
            and spans[j] is not None
            and not fallback[j]
            and spans[j][1] > spans[j][0]
        ]
        before = max((spans[j][1] for j in placed if j < k), default=None)
        after = min((spans[j][0] for j in placed if j > k), default=None)
        point = spans[k][0]
        if before is None or after is None or before <= after:  # else the placed siblings cross: no order to keep
            point = min(point, after) if after is not None else point
            point = max(point, before) if before is not None else point
        point = next((spans[j][1] for j in placed if spans[j][0] < point < spans[j][1]), point)
        spans[k] = (point, point)


def _label(text: str) -> bool:
    """Whether an element's text reads as a UI label ("Copy List", "Templates", "Tools - Options"): it begins with
    a capital and holds a word of two letters or more. Running text under a link ("partitions are") is none."""
    text = text.strip(EDGE_PUNCTUATION + " ")
    return text[:1].isupper() and re.search(r"[^\W\d_]{2}", text) is not None


def _label_or_name(text: str, hint: str) -> bool:
    """Whether an element's words may take its own translation, `hint`: a UI label (`_label`), or a text the model
    writes as it is when it translates it alone (a name, a number, a symbol: "dbus-daemon", "2", ";"), which a
    sentence may have rewritten ("Dbus-daemon", a formula's digits garbled)."""
    return _label(text) or hint.strip() == text.strip()


def _outermost_of_same_text(elements: list[Inline], source: str) -> list[int]:
    """The wrapping elements whose words may take their own translation: those holding nothing but text, or one
    wrapping element over the same words (`<a><em>Copy List</em></a>`), and not inside another such."""
    children: dict[int, list[int]] = {}
    for k, element in enumerate(elements):
        if element.parent is not None:
            children.setdefault(element.parent, []).append(k)

    def plain(k: int) -> bool:
        inner = children.get(k, [])
        if elements[k].kind != WRAP:
            return False
        if not inner:
            return True
        only = elements[inner[0]]
        same = source[only.start : only.end].strip() == source[elements[k].start : elements[k].end].strip()
        return len(inner) == 1 and same and plain(inner[0])

    found = []
    for k, element in enumerate(elements):
        parent = element.parent
        if plain(k) and (parent is None or not plain(parent)):
            found.append(k)
    return found


def _swap_in(translation: str, spans: list, hints: dict[int, str], elements: list[Inline]) -> tuple[str, list]:
    """`translation` with each of `hints`' elements' span (its words, or a fallback's point) holding that
    element's own translation instead, the elements inside it over the same text, and every span moved with the
    text. A point inside words that an earlier element's own translation replaced goes after that translation
    (never into the middle of a word the replacement moved there); a span that overlaps one keeps its words."""
    edits = sorted((spans[k][0], spans[k][1], k) for k in hints)
    pieces, moved, position = [], {}, 0
    replaced: list[tuple[int, int, int, int]] = []  # (start, end) in the translation -> (start, end) in the result
    for start, end, k in edits:
        if start < position:
            if start != end:
                continue
            start = end = position  # a point the previous replacement swallowed: after it
        text = hints[k]
        if start == end:  # a fallback's point: the text gets a space where it meets a word
            before = pieces[-1][-1:] if start == position and pieces else translation[start - 1 : start]
            text = (
                (" " if before and not before.isspace() else "")
                + text
                + (" " if start < len(translation) and not translation[start].isspace() else "")
            )
        pieces += [translation[position:start], text]
        new_start = sum(map(len, pieces)) - len(text)
        inner = text.strip()
        moved[k] = (new_start + text.index(inner), new_start + text.index(inner) + len(inner))
        replaced.append((start, end, new_start, new_start + len(text)))
        position = end
    pieces.append(translation[position:])

    def move(at: int) -> int:
        for start, end, new_start, new_end in replaced:
            if start < at < end:  # inside replaced words: after their replacement
                return new_end
        return at + sum(
            new_end - new_start - (end - start) for start, end, new_start, new_end in replaced if end <= at
        )

    def swapped(k: int) -> int | None:
        while k is not None and k not in moved:
            k = elements[k].parent
        return k

    return "".join(pieces), [
        moved[swapped(k)] if swapped(k) is not None else span if span is None else (move(span[0]), move(span[1]))
        for k, span in enumerate(spans)
    ]


def _bounds(spans, parent: int | None, length: int) -> tuple[int, int]:
    return (0, length) if parent is None else spans[parent]


def _point(
    source: str, position: int, source_words, targets_of, target_words, bounds: tuple[int, int], translation: str
) -> int:
    """Where a zero-width element at source character `position` goes: after the last translation word aligned to
    the source word before it (and after the space there, when the source had one before the element), else at
    the start of its parent's placement; always within `bounds`."""
    before = [i for i, (_, end) in enumerate(source_words) if end <= position]
    for i in reversed(before):
        inside = [target_words[j][1] for j in targets_of.get(i, ()) if bounds[0] <= target_words[j][1] <= bounds[1]]
        if inside:
            point = max(inside)
            spaced = source[position - 1 : position].isspace() and translation[point : point + 1].isspace()
            return point + 1 if spaced and point < bounds[1] else point
    return bounds[0]


__all__ = ["EDGE_PUNCTUATION", "Inline", "POINT", "Placement", "VERBATIM", "WRAP", "place", "words"]
