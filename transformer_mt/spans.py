"""Placeholders a translation must carry unchanged (printf's `%s`, `%1$s`, `%(name)s`, Python's `{0}`, `{name}`),
found in a source and repaired in its translation where the model lost or changed one.

A small model rewrites what it rarely saw (`%s` -> `%`, `%(protocol)s` -> `%(protokolle)`). `repair` puts each
lost placeholder back where the word alignment says its source word went: into the aligned word when that word
holds a damaged placeholder (a `%` or `{` the model wrote), after it otherwise, at the end when nothing aligns.
Every repair is named in a warning. Imports nothing of the package: the translation layer hands it the engine's
aligner.
"""

import collections
import logging
import re
from collections.abc import Callable


logger = logging.getLogger(__name__)

# "%%" is matched (and dropped by `placeholders`) so that "100%% done" holds none; no space flag: "50% discount"
PLACEHOLDER = re.compile(r"%%|%(?:\d+\$)?(?:\([\w.]+\))?[-+#0]*\d*(?:\.\d+)?[sdifuxXeEgGcr]|\{[\w.:!]*\}")
_DAMAGED = re.compile(r"[%{][^\s]*?(?=[.,:;!?]*$)")  # a placeholder the model began, up to trailing punctuation


def placeholders(text: str) -> list[str]:
    """The placeholders of `text`, in order (a literal `%%` is none)."""
    return [span for span in PLACEHOLDER.findall(text) if span != "%%"]


def lost_placeholders(source: str, translation: str) -> list[str]:
    """The source's placeholders the translation does not hold as often as the source does, in source order."""
    missing = collections.Counter(placeholders(source)) - collections.Counter(placeholders(translation))
    lost = []
    for span in placeholders(source):
        if missing[span]:
            lost.append(span)
            missing[span] -= 1
    return lost


def put_back(source: str, translation: str, lost: list[str], alignment: list[tuple[int, int]]) -> str:
    """`translation` with each `lost` placeholder put back where `alignment` (Pharaoh pairs of whitespace words)
    takes the source word that holds it."""
    source_words, words = source.split(), translation.split()
    for span in lost:
        holder = next((i for i, word in enumerate(source_words) if span in word), None)
        targets = sorted(j for i, j in alignment if i == holder and j < len(words))
        damaged = [j for j in targets if _DAMAGED.search(words[j]) and not placeholders(words[j])]
        if damaged:
            words[damaged[0]] = _DAMAGED.sub(lambda _: span, words[damaged[0]], count=1)
        elif targets:
            words.insert(targets[0] + 1, span)
        else:
            words.append(span)
    return " ".join(words)


def repair(sources: list[str], hypotheses: list[list[tuple[str, float | None]]], names: list[str],
           align: Callable[[list[str], list[str]], list]) -> list[list[tuple[str, float | None]]]:
    """Each sentence's hypotheses with the placeholders its source holds put back where the model lost them;
    `align(sources, targets)` gives the word alignments of the pairs that need it, in one call."""
    todo = [(i, k, lost) for i, (source, sentence) in enumerate(zip(sources, hypotheses))
            for k, (text, _) in enumerate(sentence) if text and (lost := lost_placeholders(source, text))]
    if not todo:
        return hypotheses
    alignments = align([sources[i] for i, _, _ in todo], [hypotheses[i][k][0] for i, k, _ in todo])
    repaired = [list(sentence) for sentence in hypotheses]
    for (i, k, lost), alignment in zip(todo, alignments):
        text, score = repaired[i][k]
        repaired[i][k] = (put_back(sources[i], text, lost, alignment), score)
        logger.warning(f"Text {names[i]}: the model did not write {', '.join(lost)}; put back from the word "
                       f"alignment: {repaired[i][k][0]!r}")
    return repaired


__all__ = ["PLACEHOLDER", "lost_placeholders", "placeholders", "put_back", "repair"]
