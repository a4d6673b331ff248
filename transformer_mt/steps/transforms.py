"""One record per sentence on its way through the steps around the engine (`Sentence`), and the steps, each a class
with a half before the engine and a half after it over those records (`transformer_mt.steps` says in which order
`pipeline` runs them)."""

import dataclasses

from ..engines.inputs import Hypotheses
from ..options import TranslationOptions
from ..quality import Flags
from ..text.casing import fold_sentences, restore
from ..text.glossary import strip_annotations
from ..text.languages import Languages
from ..text.spans import SpanReport, mask, mask_as, repair_counted, span_problems, unmask
from ..trust import Aligner, annotated


@dataclasses.dataclass
class Sentence:
    """One sentence on its way through the steps: what the `before` halves made of it (`folded`, `shown`, its
    `case`, its masked `spans`, its forced beginning as the engine sees it) and what the engine and the `after`
    halves made of its translation (`hypotheses`, their `alignments` with html, its span `report`, its `flags`)."""

    source: str  # as given (untagged; `options.source_prefix` begins what the engine reads)
    name: str  # what warnings call it ("Text 3, sentence 2")
    prefix: str | None = None  # its forced beginning as given
    folded: str = ""  # in the case the model reads (CaseStep); the source of span repair and markup alignment
    case: str | None = None  # casing.case_of's case, None when case folding is off
    shown: str = ""  # what the engine reads: folded, then masked (SpanTokenStep), then annotated (TermStep)
    shown_prefix: str | None = None  # the forced beginning as the engine reads it
    spans: list = dataclasses.field(default_factory=list)  # the protected spans shown as tokens
    terms: list | None = None  # the glossary's terms found in the source, (as found, target): trust.found_terms
    hypotheses: Hypotheses = dataclasses.field(default_factory=list)
    alignments: list | None = None
    report: SpanReport | None = None
    flags: Flags = dataclasses.field(default_factory=Flags)

    def again(self) -> "Sentence":
        """The record as the `before` halves left it, for a re-decode."""
        return dataclasses.replace(self, hypotheses=[], alignments=None, report=None, flags=Flags())


def records(sources: list[str], names: list[str], prefixes: list[str | None] | None = None) -> list[Sentence]:
    """A new record per sentence, shown to the engine as given until a step changes it."""
    return [
        Sentence(source, name, prefix, folded=source, shown=source, shown_prefix=prefix)
        for source, name, prefix in zip(sources, names, prefixes or [None] * len(sources))
    ]


class CaseStep:
    """An ALL CAPS or Title Case sentence shown in sentence case (`options.fold_case`; Title Case told by the source
    language's rules, and left as it is in html, where a label's case is the markup's), its translation given the
    case back by the target language's; a sentence with a forced beginning of its own is shown as given."""

    def __init__(self, options: TranslationOptions, languages: Languages):
        self.titles, self.languages = options.format != "html", languages

    def before(self, sentences: list[Sentence]) -> None:
        folded, cases = fold_sentences(
            [sentence.source for sentence in sentences], self.languages.source, titles=self.titles
        )
        for sentence, text, case in zip(sentences, folded, cases):
            sentence.folded, sentence.case = (sentence.source, "normal") if sentence.prefix else (text, case)
            sentence.shown = sentence.folded

    def after(self, sentences: list[Sentence]) -> None:
        for sentence in sentences:
            sentence.hypotheses = [
                (restore(text, sentence.case, self.languages.target), score) for text, score in sentence.hypotheses
            ]


class MarkupStep:
    """With `format="html"`, each hypothesis aligned word by word to its (folded) sentence, so that the inline
    markup can be put back (`translation.assemble`)."""

    def __init__(self, aligner: "Aligner"):
        self.aligner = aligner

    def before(self, sentences: list[Sentence]) -> None:
        pass

    def after(self, sentences: list[Sentence]) -> None:
        pairs = [(sentence, text) for sentence in sentences for text, _ in sentence.hypotheses if text]
        found = iter(
            self.aligner([sentence.folded for sentence, _ in pairs], [text for _, text in pairs]) if pairs else []
        )
        for sentence in sentences:
            sentence.alignments = [next(found) if text else [] for text, _ in sentence.hypotheses]


class SpanRepairStep:
    """With `options.repair_spans`, the protected spans (placeholders, URLs, numbers, ...) a translation lost put
    back where the engine's word alignment takes their source words (`aligner`; none without a tokenizer's
    character offsets) and the placeholders it holds more often than its source removed (`spans.repair_counted`);
    each sentence's `SpanReport` either way (unrepaired, a missing span and an extra placeholder count as lost)."""

    def __init__(self, aligner: "Aligner | None", repair: bool):
        self.aligner, self.repair = aligner, repair

    def before(self, sentences: list[Sentence]) -> None:
        pass

    def after(self, sentences: list[Sentence]) -> None:
        if not self.repair:
            for sentence in sentences:
                sentence.report = (
                    SpanReport(lost=span_problems(sentence.folded, sentence.hypotheses[0][0]))
                    if sentence.hypotheses
                    else SpanReport()
                )
            return
        repaired, reports = repair_counted(
            [sentence.folded for sentence in sentences],
            [sentence.hypotheses for sentence in sentences],
            [sentence.name for sentence in sentences],
            self.aligner,
        )
        for sentence, hypotheses, report in zip(sentences, repaired, reports):
            sentence.hypotheses, sentence.report = hypotheses, report


class SpanTokenStep:
    """For a model trained with span tokens (`config.span_tokens`), each protected span shown as the reserved token
    `{k}` it learned to carry (a forced beginning too), and put back in its translations."""

    def before(self, sentences: list[Sentence]) -> None:
        for sentence in sentences:
            sentence.shown, sentence.spans = mask(sentence.shown)
            if sentence.shown_prefix:
                sentence.shown_prefix = mask_as(sentence.shown_prefix, sentence.spans)

    def after(self, sentences: list[Sentence]) -> None:
        for sentence in sentences:
            if sentence.spans:
                sentence.hypotheses = [(unmask(text, sentence.spans)[0], score) for text, score in sentence.hypotheses]


class TermStep:
    """For a model trained with term annotations (`config.term_annotations`) given a glossary, each term outside
    the protected spans followed by its target term in annotation marks (`trust.annotated`); the marks a
    translation holds are stripped whatever the model."""

    def __init__(self, options: TranslationOptions, annotate: bool):
        self.options, self.annotate = options, annotate

    def before(self, sentences: list[Sentence]) -> None:
        if self.annotate:
            for sentence in sentences:
                sentence.shown = annotated(sentence.shown, self.options)[0]

    def after(self, sentences: list[Sentence]) -> None:
        for sentence in sentences:
            sentence.hypotheses = [(strip_annotations(text), score) for text, score in sentence.hypotheses]


__all__ = ["CaseStep", "MarkupStep", "Sentence", "SpanRepairStep", "SpanTokenStep", "TermStep", "records"]
