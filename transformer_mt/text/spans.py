"""Protected spans: what a translation must carry unchanged (placeholders, URLs, e-mail addresses, file paths,
inline code, numbers, emoji), put back where the model lost or changed one, and shown as reserved tokens to a model
trained with them. What a span is, where a text holds them and what a translation lost of them or holds more come
from `span_finding` (`Span`, `KINDS`, `protected_spans`, `lost_spans`, `extra_placeholders`, ...), whose names are
importable from here too.

A small model rewrites what it rarely saw (`%s` -> `%`, `%(protocol)s` -> `%(protokolle)`, `1.5` -> `1,6`).
`repair_counted` puts each lost span back where the word alignment says its source word went: into the aligned
word when that word holds a damaged copy (a `%` or `{` the model began, a URL, path or number of its own), after it
otherwise, at the end when nothing aligns; then checks again, and counts per sentence what the model carried, what
was repaired and what is still lost. Placeholders are compared as multisets: one the translation holds more often
than its source (written twice, or invented) is removed (`drop_extra`), its later occurrences first. So that a
printf message still formats, printf's unnumbered placeholders are written in the source's order
(`in_source_order`) and a bare `%` as `%%` (`escape_percents`). Every repair, every removal, every reordering and
every loss is named in a warning. Imports nothing of the package but `span_finding`: the translation layer hands it
the engine's aligner.

A model trained with span tokens (training's `--span_token_share`) is shown its spans as reserved tokens instead:
`mask` replaces each by `{0}`, `{1}`, ... and `unmask` puts them back; `mask_shared` masks a training pair's spans
that both sides hold, with one numbering on both sides. The three number their tokens alike (`_masked`).
"""

import collections
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from .span_finding import (
    KINDS,
    PLACEHOLDER,
    Span,
    _found,
    _lost,
    _missing,
    extra_placeholders,
    lost_placeholders,
    lost_spans,
    placeholders,
    protected_ranges,
    protected_spans,
    span_problems,
)


logger = logging.getLogger(__name__)

# printf's unnumbered placeholders (`%s`, `%-5.2f`, `%*d`), which take their arguments in the order they are written
_SEQUENTIAL = re.compile(r"%[-+#0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|L|z|j|t|q)?[sdifuxXeEgGcrop]")
TOKEN = re.compile(r"\{(\d+)\}")  # a reserved token `{k}`: a masked span, or a format field of the text
_DAMAGED = re.compile(r"[%{][^\s]*?(?=[.,:;!?]*$)")  # a placeholder the model began, up to trailing punctuation


@dataclass
class SpanReport:
    """One sentence's spans (of its best hypothesis): carried by the model, put back by `repair`, still lost."""

    carried: list[Span] = field(default_factory=list)
    repaired: list[Span] = field(default_factory=list)
    lost: list[Span] = field(default_factory=list)  # missing, or (unrepaired) a placeholder more than the source's
    removed: list[Span] = field(default_factory=list)  # placeholders the translation held more often than its source


def _masked(texts: list[str], found: list[list[tuple[Span, int]]]) -> list[str]:
    """Each text with its found spans (with where each begins) replaced by reserved tokens: the i-th span of every
    list by one `{k}`, k counting from 0 and skipping the numbers a text holds as `{n}` outside those spans."""
    rests = [_replaced(text, spans, [" "] * len(spans)) for text, spans in zip(texts, found)]
    taken = {int(number) for rest in rests for number in TOKEN.findall(rest)}
    numbers = [k for k in range(len(found[0]) + len(taken)) if k not in taken][: len(found[0])]
    return [_replaced(text, spans, [f"{{{k}}}" for k in numbers]) for text, spans in zip(texts, found)]


def _replaced(text: str, found: list[tuple[Span, int]], tokens: list[str]) -> str:
    """`text` with each found span (with where it begins) replaced by its token."""
    pieces, end = [], 0
    for (span, start), token in sorted(zip(found, tokens), key=lambda item: item[0][1]):
        pieces += [text[end:start], token]
        end = start + len(span.text)
    return "".join(pieces) + text[end:]


def mask(text: str) -> tuple[str, list[Span]]:
    """`text` with each protected span replaced by a reserved token `{k}` (k = 0, 1, ... in order, skipping
    numbers the text holds as `{n}` outside its spans: none, since such a `{n}` is a span itself), and the spans in
    token order: `{i}` stands for the i-th. `unmask` puts them back."""
    found = _found(text)
    return _masked([text], [found])[0], [span for span, _ in found]


def mask_as(text: str, spans: list[Span]) -> str:
    """`text` (a forced beginning of a translation) with each protected span it holds that is one of a masked
    sentence's `spans` (`mask`) replaced by that span's token, each span once, in order; the rest kept."""
    free = list(enumerate(spans))
    found, tokens = [], []
    for span, start in _found(text):
        n = next((n for n, (_, known) in enumerate(free) if known.text == span.text), None)
        if n is not None:
            found.append((span, start))
            tokens.append(f"{{{free.pop(n)[0]}}}")
    return _replaced(text, found, tokens)


def unmask(translation: str, spans: list[Span]) -> tuple[str, list[Span]]:
    """`translation` with each reserved token `{i}` replaced by the text of `mask`'s i-th span, and the spans whose
    token it does not hold (lost). A token it writes twice gives its span twice; `{n}` past the spans stays."""
    held = {int(number) for number in TOKEN.findall(translation)}
    text = TOKEN.sub(lambda token: spans[int(token[1])].text if int(token[1]) < len(spans) else token[0], translation)
    return text, [span for i, span in enumerate(spans) if i not in held]


def mask_shared(source: str, target: str) -> tuple[str, str, list[Span]]:
    """A training pair with each protected span both sides hold (numbers by their digits, the rest by their text;
    the n-th of a source's key with the n-th of the target's) replaced on both sides by one reserved token `{k}`,
    numbered in source order as `mask` numbers them; and the source's masked spans in token order."""
    targets = collections.defaultdict(collections.deque)
    for span, start in _found(target):
        targets[span.key].append((span, start))
    shared = [(found, targets[found[0].key].popleft()) for found in _found(source) if targets[found[0].key]]
    in_source, in_target = [found for found, _ in shared], [found for _, found in shared]
    masked_source, masked_target = _masked([source, target], [in_source, in_target])
    return masked_source, masked_target, [span for span, _ in in_source]


def drop_extra(source: str, translation: str) -> tuple[str, list[Span]]:
    """`translation` without the placeholders it holds more often than `source` (with the space before each, or
    after one that begins the text), and those removed; again while a removal leaves a new one (`{{}}` less its
    `{}` is `{}`)."""
    removed = []
    while extra := extra_placeholders(source, translation):
        for _, start, end in reversed(extra):
            if start and translation[start - 1] == " ":
                start -= 1
            elif end < len(translation) and translation[end] == " ":
                end += 1
            translation = translation[:start] + translation[end:]
        removed += [span for span, _, _ in extra]
    return translation, removed


def in_source_order(source: str, translation: str) -> str:
    """`translation` with printf's unnumbered placeholders (`_SEQUENTIAL`) written in the order `source` writes
    them, where it holds the same ones in another order: printf takes their arguments in that order, so "%u (%llu"
    for "%llu (%u" would print garbage. Unchanged when the source numbers any (`%1$s`: a translation may move
    those) or the two hold different ones."""
    wanted = [span for span in placeholders(source) if _SEQUENTIAL.fullmatch(span)]
    found = [match for match in PLACEHOLDER.finditer(translation) if _SEQUENTIAL.fullmatch(match[0])]
    if (
        [match[0] for match in found] == wanted
        or sorted(match[0] for match in found) != sorted(wanted)
        or re.search(r"%\d+\$", source)
    ):
        return translation
    pieces, end = [], 0
    for match, span in zip(found, wanted):
        pieces += [translation[end : match.start()], span]
        end = match.end()
    return "".join(pieces) + translation[end:]


def escape_percents(source: str, translation: str) -> str:
    """`translation` with each `%` that begins no placeholder written `%%`, where `source` is a printf message (it
    holds one of printf's placeholders or a literal `%%`): "%d %" or "% (" would not format."""
    if not (_SEQUENTIAL.search(source) or "%%" in source or re.search(r"%(?:\d+\$|\([\w.]+\))", source)):
        return translation
    covered = [(match.start(), match.end()) for match in PLACEHOLDER.finditer(translation)] + [
        (start, start + len(span.text)) for span, start in _found(translation)
    ]  # a URL's `%2F` too
    pieces, end = [], 0
    for at in (at for at, character in enumerate(translation) if character == "%"):
        if not any(start <= at < stop for start, stop in covered):
            pieces += [translation[end:at], "%%"]
            end = at + 1
    return "".join(pieces) + translation[end:]


def _word_of(text: str, start: int) -> int:
    """The index of the whitespace word of `text` that holds the character at `start`."""
    before = len(text[:start].split())
    return before - 1 if start and not text[start - 1].isspace() else before


def _located(source: str, lost: list[Span | str]) -> list[tuple[Span, int]]:
    """Each lost span (a bare string is a placeholder) with the source word that holds it: the n-th lost of a key
    is the key's n-th occurrence in the source."""
    found, seen, located = _found(source), collections.Counter(), []
    for span in lost:
        span = span if isinstance(span, Span) else Span("placeholder", span)
        starts = [start for other, start in found if other.key == span.key] or [source.find(span.text)]
        start = starts[min(seen[span.key], len(starts) - 1)]
        seen[span.key] += 1
        located.append((span, _word_of(source, start) if start >= 0 else None))
    return located


def _fix(
    span: Span, words: list[str], targets: list[int], extra: collections.Counter, known: set[str]
) -> tuple[int, str] | None:
    """Where `span` goes into a damaged word, and that word mended: a placeholder into an aligned word holding one
    the model began (a `%` or `{`, and none of the `known` source placeholders); any kind into a word holding one
    of its kind the source lacks (`extra`; an aligned word first, else the one nearest the aligned place)."""
    if span.kind == "placeholder":
        damaged = [j for j in targets if _DAMAGED.search(words[j]) and not known.intersection(placeholders(words[j]))]
        if damaged:
            return damaged[0], _DAMAGED.sub(lambda _: span.text, words[damaged[0]], count=1)
    near = targets[0] if targets else len(words)
    order = targets + sorted(set(range(len(words))) - set(targets), key=lambda j: abs(j - near))
    for j in order:
        wrong = [other for other in protected_spans(words[j]) if other.kind == span.kind and extra[other.key] > 0]
        if wrong:
            extra[wrong[0].key] -= 1
            return j, words[j].replace(wrong[0].text, span.text, 1)
    return None


def put_back(source: str, translation: str, lost: list[Span | str], alignment: list[tuple[int, int]]) -> str:
    """`translation` with each `lost` span put back where `alignment` (Pharaoh pairs of whitespace words) takes the
    source word that holds it: into a damaged word, else after the aligned word, else at the end."""
    words = translation.split()
    slots, tail = [[word] for word in words], []  # a word and what goes after it; alignment indices stay valid
    extra = collections.Counter(span.key for span in protected_spans(translation))
    extra.subtract(span.key for span in protected_spans(source))
    known = set(placeholders(source))
    for span, holder in _located(source, lost):
        targets = sorted(j for i, j in alignment if i == holder and j < len(words))
        fixed = _fix(span, [slot[0] for slot in slots], targets, extra, known)
        if fixed:
            slots[fixed[0]][0] = fixed[1]
        elif targets:
            slots[targets[0]].append(span.text)
        else:
            tail.append(span.text)
    return " ".join([word for slot in slots for word in slot] + tail)


def repair_counted(
    sources: list[str],
    hypotheses: list[list[tuple[str, float | None]]],
    names: list[str],
    align: Callable[[list[str], list[str]], list] | None,
) -> tuple[list[list[tuple[str, float | None]]], list[SpanReport]]:
    """Each sentence's hypotheses with the spans its source holds put back where the model lost them and the
    placeholders it holds more often than its source removed (`drop_extra`), printf's unnumbered ones in the
    source's order and a bare `%` escaped (`in_source_order`, `escape_percents`), and one `SpanReport` per sentence
    for its best hypothesis; `align(sources, targets)` gives the word alignments of the pairs that need it, in one
    call (None: nothing is put back; the rest is still done). Each repair, removal, reordering and loss is named in a
    warning."""
    found = [_found(source) for source in sources]
    lost = {
        (i, k): _lost(found[i], text) for i, sentence in enumerate(hypotheses) for k, (text, _) in enumerate(sentence)
    }
    todo = [(i, k) for (i, k), spans in lost.items() if spans and hypotheses[i][k][0]] if align else []
    repaired = [list(sentence) for sentence in hypotheses]
    still = dict(lost)
    alignments = align([sources[i] for i, _ in todo], [hypotheses[i][k][0] for i, k in todo]) if todo else []
    for (i, k), alignment in zip(todo, alignments):
        text, score = repaired[i][k]
        repaired[i][k] = (put_back(sources[i], text, [span for span, _ in lost[i, k]], alignment), score)
        still[i, k] = _lost(lost[i, k], repaired[i][k][0])
        if put := [span.text for span, _ in _missing(lost[i, k], still[i, k], lambda item: item)]:
            logger.warning(
                f"Text {names[i]}: the model did not write {', '.join(put)}; put back from the word "
                f"alignment: {repaired[i][k][0]!r}"
            )
    removed = {}
    for i, sentence in enumerate(repaired):
        for k, (text, score) in enumerate(sentence):
            kept, removed[i, k] = drop_extra(sources[i], text)
            if removed[i, k]:
                logger.warning(
                    f"Text {names[i]}: the model wrote {', '.join(span.text for span in removed[i, k])} "
                    f"more often than the source holds; removed: {kept!r}"
                )
            if (ordered := in_source_order(sources[i], kept)) != kept:
                logger.warning(f"Text {names[i]}: printf's placeholders written in the source's order: {ordered!r}")
            if (escaped := escape_percents(sources[i], ordered)) != ordered:
                logger.warning(f"Text {names[i]}: a bare % written %% as the printf message needs: {escaped!r}")
            sentence[k] = (escaped, score)
    for (i, k), spans in still.items():
        if spans:
            logger.warning(
                f"Text {names[i]}: the model did not write {', '.join(span.text for span, _ in spans)}, "
                f"and it could not be put back: {repaired[i][k][0]!r}"
            )
    reports = []
    for i, spans in enumerate(found):
        before, after = lost.get((i, 0), []), still.get((i, 0), [])
        reports.append(
            SpanReport(
                carried=[span for span, _ in _missing(spans, before, lambda item: item)],
                repaired=[span for span, _ in _missing(before, after, lambda item: item)],
                lost=[span for span, _ in after],
                removed=removed.get((i, 0), []),
            )
        )
    return repaired, reports


def repair(
    sources: list[str],
    hypotheses: list[list[tuple[str, float | None]]],
    names: list[str],
    align: Callable[[list[str], list[str]], list],
) -> list[list[tuple[str, float | None]]]:
    """Each sentence's hypotheses with the spans its source holds put back where the model lost them
    (`repair_counted` without its counts)."""
    return repair_counted(sources, hypotheses, names, align)[0]


__all__ = [
    "KINDS",
    "PLACEHOLDER",
    "TOKEN",
    "Span",
    "SpanReport",
    "drop_extra",
    "escape_percents",
    "extra_placeholders",
    "in_source_order",
    "lost_placeholders",
    "lost_spans",
    "mask",
    "mask_as",
    "mask_shared",
    "placeholders",
    "protected_ranges",
    "protected_spans",
    "put_back",
    "repair",
    "repair_counted",
    "span_problems",
    "unmask",
]
