"""A glossary: source terms and the target terms a translation must use, as inline annotations the model learned
to follow (Dinu et al., ACL 2019, "Training Neural Machine Translation to Apply Terminology Constraints"): each
source term found in a sentence is followed by its target term in annotation marks, `Click Save ⟦Sichern⟧ to keep
it.`, and a model trained on a share of pairs annotated so (training's `--term_annotation_share`, with terms mined
from its own training data: `mine_terms`) writes the annotated term, inflected as the sentence needs. A term with
no target term is a name that stays as it is: annotated with itself.

Terms match on word boundaries, case-sensitively unless asked otherwise; the longest term wins where two overlap.
A term counts as *used* by a translation (`term_used`) when each of its words appears in it as a word that begins
with that word less its last letters and is not much longer, case-insensitive, by the target language's
inflection (`LanguageRules.stem_cut`, `stem_min`, `form_extra`): in German, less its last two letters (at least
four kept) and no longer than it plus three, so `Datei` is used by `Dateien`, `Speichern` by `Speichern`, `Ordner`
by `Ordnern`; in English, less its last letter ("saving" uses "save", "folding" does not use "folder"); French and
Spanish as German ("journaux" uses "journal", "funciones" "función"); a language without rules of its own only as
written.

Imports nothing of the package but `languages`' rules.
"""

import collections
import re
from collections.abc import Iterable

from .languages import LanguageRules


OPEN, CLOSE = "\u27e6", "\u27e7"  # ⟦ ⟧: marks no real text uses, kept whole by byte-level BPE as they are
_ANNOTATION = re.compile(rf"\s*{OPEN}[^{CLOSE}]*{CLOSE}?|{CLOSE}")
_WORD = re.compile(r"\w+")

Glossary = tuple[tuple[str, str | None], ...]


def read_glossary(path: str) -> Glossary:
    """A glossary TSV: a source term, a tab, its target term (none, or an empty column: the term stays as it is),
    a line; blank lines and lines starting with # skipped. A ValueError names the line that cannot be one."""
    entries = []
    with open(path, encoding="utf-8-sig") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n\r")
            if not line.strip() or line.startswith("#"):
                continue
            cells = line.split("\t")
            if len(cells) > 2 or not cells[0].strip():
                raise ValueError(
                    f"{path}, line {number}: a glossary line is a source term, a tab and its target "
                    f"term (or none), got {line!r}"
                )
            entries.append((cells[0].strip(), cells[1].strip() or None if len(cells) == 2 else None))
    return tuple(entries)


def check_glossary(entries) -> Glossary:
    """`entries` as a Glossary: (source, target or None) pairs, or a mapping source -> target; a ValueError says
    what an entry must be."""
    pairs = entries.items() if isinstance(entries, dict) else entries
    checked = []
    for entry in pairs:
        if (
            not isinstance(entry, (tuple, list))
            or len(entry) != 2
            or not isinstance(entry[0], str)
            or not entry[0].strip()
            or not (entry[1] is None or isinstance(entry[1], str))
        ):
            raise ValueError(f"holds {entry!r}: an entry is a source term and its target term (or None)")
        if OPEN in entry[0] + (entry[1] or "") or CLOSE in entry[0] + (entry[1] or ""):
            raise ValueError(f"holds {entry!r}: a term holds no {OPEN} or {CLOSE}")
        checked.append((entry[0].strip(), (entry[1] or "").strip() or None))
    return tuple(checked)


def find_terms(sentence: str, glossary: Glossary, ignore_case: bool = False) -> list[tuple[int, int, str | None]]:
    """(start, end, target) of each glossary term found in `sentence` as a whole word or phrase, longest terms
    first, none overlapping one found before; target None for a term kept as written."""
    flags = re.IGNORECASE if ignore_case else 0
    found = []
    for source, target in sorted(glossary, key=lambda entry: -len(entry[0])):
        for match in re.finditer(rf"(?<!\w){re.escape(source)}(?!\w)", sentence, flags):
            if not any(start < match.end() and match.start() < end for start, end, _ in found):
                found.append((match.start(), match.end(), target))
    return found


def annotate(sentence: str, glossary: Glossary, ignore_case: bool = False) -> tuple[str, list[tuple[str, str]]]:
    """`sentence` with each glossary term found in it followed by ` ⟦target⟧`, and the (as found, target) pairs."""
    if not glossary:
        return sentence, []
    found = [
        (start, end, target or sentence[start:end])
        for start, end, target in find_terms(sentence, glossary, ignore_case)
    ]
    annotated, last, used = [], 0, []
    for start, end, target in sorted(found):
        annotated += [sentence[last:end], f" {OPEN}{target}{CLOSE}"]
        used.append((sentence[start:end], target))
        last = end
    return "".join(annotated) + sentence[last:], used


def strip_annotations(text: str) -> str:
    """A translation without annotation marks (a model may copy one)."""
    return _ANNOTATION.sub("", text) if OPEN in text or CLOSE in text else text


def _stem(word: str, rules: LanguageRules) -> str:
    """What every inflected form of `word` begins with, by `rules` (its language's)."""
    return word[: max(rules.stem_min, len(word) - rules.stem_cut)] if len(word) > rules.stem_min else word


def _inflects(word: str, part: str, rules: LanguageRules) -> bool:
    """Whether a case-folded `word` is the case-folded `part` or an inflected form of it (the module's rule)."""
    return word.startswith(_stem(part, rules)) and len(word) <= len(part) + rules.form_extra


def term_used(translation: str, term: str, rules: LanguageRules) -> bool:
    """Whether `translation` uses `term` or an inflected form of it (the rule in the module's docstring; `rules`:
    the translation's language's)."""
    words = [word.casefold() for word in _WORD.findall(translation)]
    return all(
        any(_inflects(word, part, rules) for word in words)
        for part in (piece.casefold() for piece in _WORD.findall(term))
    )


def mine_terms(pairs: Iterable[tuple[str, str]], max_words: int = 3, min_count: int = 2) -> Glossary:
    """Terms from a corpus's own short pairs (dictionary entries, UI labels: up to `max_words` words a side, no
    sentence punctuation), each source (case-folded) with its most frequent target, kept when seen `min_count`
    times or more and that target is most of its source's; a term whose target equals its source is left out (the
    model copies those anyway), and so is one of under four characters a side (`you` -> `Sie`, `for` -> `für`:
    words, not terms)."""
    targets = collections.defaultdict(collections.Counter)
    shown = {}
    for source, target in pairs:
        source, target = source.strip(), target.strip()
        if not (0 < len(source.split()) <= max_words and 0 < len(target.split()) <= max_words):
            continue
        if re.search(r"[.!?:;,()\[\]{}%/<>\"=]|\d", source + target) or OPEN in source + target:
            continue
        key = source.casefold()
        targets[key][target] += 1
        shown.setdefault(key, source)
    mined = []
    for key, counted in targets.items():
        target, count = counted.most_common(1)[0]
        if (
            count >= min_count
            and count * 2 > sum(counted.values())
            and target.casefold() != key
            and len(key) >= 4
            and len(target) >= 4
        ):
            mined.append((shown[key], target))
    return tuple(sorted(mined))


def annotate_pair(
    source: str,
    target: str,
    index: dict[str, list[tuple[str, str]]],
    rules: LanguageRules,
    limit: int = 2,
    substitute: str | None = None,
) -> tuple[str, str, int]:
    """A training pair annotated with up to `limit` terms of `index` (`term_index`) whose source occurs in it
    (case-insensitive, on word boundaries) and whose target the pair's target uses: the source annotated, the
    target, and how many. With `substitute` (another term's target), the first one-word term's target word in the
    target is replaced by it and the annotation says it: the model learns to write what the annotation says even
    where it would have written another word (a required term it has never seen as this source's translation).
    `rules`: the target's language's (`term_used`)."""
    words = {word.casefold() for word in _WORD.findall(source)}
    candidates = [
        (term, translation)
        for word in words
        for term, translation in index.get(word, ())
        if term_used(target, translation, rules)
    ]
    chosen = sorted(set(candidates), key=lambda entry: (-len(entry[0]), entry))[:limit]
    if not chosen:
        return source, target, 0
    if substitute:
        single = [entry for entry in chosen if len(_WORD.findall(entry[1])) == 1]
        if single:
            term, translation = single[0]
            stem = _stem(translation.casefold(), rules)
            replaced = re.sub(
                rf"(?<!\w)(?i:{re.escape(stem)})\w{{0,{len(translation) - len(stem) + rules.form_extra}}}(?!\w)",
                lambda _: substitute,
                target,
                count=1,
            )
            if replaced != target:
                chosen = [(term, substitute) if entry == (term, translation) else entry for entry in chosen]
                target = replaced
    annotated, used = annotate(source, tuple(chosen), ignore_case=True)
    return annotated, target, len(used)


EDGES = ".,;:!?¿¡\"'()[]«»„“”‚‘’…"  # punctuation at a replaced run's edges, kept outside the term


def _alike(word: str, part: str, rules: LanguageRules) -> bool:
    """Whether a translation word is `part` or an inflected form of it (`term_used`'s rule; a part no longer than
    the shortest stem only as it is: German "wo" is not "wobei")."""
    word, part = word.strip(EDGES).casefold(), part.strip(EDGES).casefold()
    return word == part if len(part) <= rules.stem_min else _inflects(word, part, rules)


def place_term(
    source: str,
    translation: str,
    alignment: list[tuple[int, int]],
    found: str,
    own: str,
    target: str,
    rules: LanguageRules,
    protected: Iterable[tuple[int, int]] = (),
) -> str:
    """`translation` with the model's own word for a term replaced by the term's required `target`: `own` is the
    term (`found`, as it occurs in `source` outside the `protected` character ranges) translated alone, and the
    run of translation words alike it (`_alike`, word by word, by `rules`: the translation's language's) is
    replaced, edge punctuation kept: the run the alignment (Pharaoh pairs of whitespace words) gives the term's
    words where there is one, else the first.
    Unchanged where the translation holds no such run: a word the alignment alone points at is too often another
    (a verb for a noun), so it is never replaced."""
    parts = own.split()
    words = [match.span() for match in re.finditer(r"\S+", translation)]
    runs = [
        k
        for k in range(len(words) - len(parts) + 1)
        if parts and all(_alike(translation[slice(*words[k + n])], part, rules) for n, part in enumerate(parts))
    ]
    protected = list(protected)
    match = next(
        (
            match
            for match in re.finditer(rf"(?<!\w){re.escape(found)}(?!\w)", source)
            if not any(start < match.end() and match.start() < end for start, end in protected)
        ),
        None,
    )
    source_words = [word.span() for word in re.finditer(r"\S+", source)]
    held = {
        i
        for i, (start, end) in enumerate(source_words)
        if match is not None and start < match.end() and end > match.start()
    }
    aligned = {j for i, j in alignment if i in held and j < len(words)}
    if runs:
        k = next((k for k in runs if aligned & set(range(k, k + len(parts)))), runs[0])
        start, end = words[k][0], words[k + len(parts) - 1][1]
    elif (
        aligned
        and max(aligned) - min(aligned) + 1 == len(target.split())
        and (translation[words[min(aligned)][0] : words[min(aligned)][0] + 1].isupper() == target[:1].isupper())
    ):
        start, end = words[min(aligned)][0], words[max(aligned)][1]
    else:
        return translation
    while start < end and translation[start] in EDGES:
        start += 1
    while end > start and translation[end - 1] in EDGES:
        end -= 1
    term = target[:1].upper() + target[1:] if start == 0 and translation[:1].isupper() else target
    return translation[:start] + term + translation[end:]


def term_index(glossary: Glossary) -> dict[str, list[tuple[str, str]]]:
    """The glossary's terms with a target, by the case-folded first word of their source."""
    index = collections.defaultdict(list)
    for source, target in glossary:
        words = _WORD.findall(source)
        if target and words:
            index[words[0].casefold()].append((source, target))
    return dict(index)


__all__ = [
    "CLOSE",
    "Glossary",
    "OPEN",
    "annotate",
    "annotate_pair",
    "check_glossary",
    "find_terms",
    "mine_terms",
    "place_term",
    "read_glossary",
    "strip_annotations",
    "term_index",
    "term_used",
]
