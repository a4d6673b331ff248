"""The steps around the engine, declared (../shared/DESIGN.md, "steps"): every text transform a step with a half
before the engine and a half after it, over one record per sentence (`Sentence`), and one `Decoder` (an engine and
its options) through which the first decode and every re-decode go.

The pipeline (`pipeline`, built from the options and the model) runs each step's `before` in order, the engine, then
each step's `after` in reverse order, so that each step undoes what it did with the text the steps inside it left:

    step            before the engine                          after it
    CaseStep        ALL CAPS / Title Case folded                the source's case given back (text.casing)
    MarkupStep      -                                           each hypothesis aligned to its sentence (html)
    SpanRepairStep  -                                           spans the model lost put back from the word
                                                                alignment, and each sentence's span report
    SpanTokenStep   protected spans shown as the tokens `{k}`   the spans in place of their tokens (text.spans)
    TermStep        glossary terms annotated                    the annotation marks stripped (text.glossary)

and last the trust step (`trust.judge`: the calibrated confidence, the guards and their re-decode, abstaining below
`options.min_confidence`, the glossary's terms followed), which decodes again through the same `Decoder`: a
re-decode of the same sentences with other options reuses their records' `before` halves (the folding and the
annotation are done once), other sentences (a term alone, a term forced in) go through a pipeline of their own.
Adding a step is one class and one line in `pipeline`.
"""

import dataclasses
import logging
import weakref

from .engines import Engine
from .engines.inputs import Hypotheses, tagged
from .options import TranslationOptions
from .quality import Flags
from .text.casing import fold_sentences, restore
from .text.glossary import strip_annotations
from .text.spans import TOKEN, SpanReport, mask, mask_as, protected_spans, repair_counted, span_problems, unmask
from .trust import Aligner, Decoded, annotated, calibration_of, has_offsets, judge


logger = logging.getLogger(__name__)


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
    return [Sentence(source, name, prefix, folded=source, shown=source, shown_prefix=prefix)
            for source, name, prefix in zip(sources, names, prefixes or [None] * len(sources))]


class CaseStep:
    """An ALL CAPS or Title Case sentence shown in sentence case (`options.fold_case`; Title Case left as it is in
    html, where a label's case is the markup's), its translation given the case back; a sentence with a forced
    beginning of its own is shown as given."""

    def __init__(self, options: TranslationOptions):
        self.titles = options.format != "html"

    def before(self, sentences: list[Sentence]) -> None:
        folded, cases = fold_sentences([sentence.source for sentence in sentences], titles=self.titles)
        for sentence, text, case in zip(sentences, folded, cases):
            sentence.folded, sentence.case = (sentence.source, "normal") if sentence.prefix else (text, case)
            sentence.shown = sentence.folded

    def after(self, sentences: list[Sentence]) -> None:
        for sentence in sentences:
            sentence.hypotheses = [(restore(text, sentence.case), score) for text, score in sentence.hypotheses]


class MarkupStep:
    """With `format="html"`, each hypothesis aligned word by word to its (folded) sentence, so that the inline
    markup can be put back (`translation.assemble`)."""

    def __init__(self, aligner: "Aligner"):
        self.aligner = aligner

    def before(self, sentences: list[Sentence]) -> None:
        pass

    def after(self, sentences: list[Sentence]) -> None:
        pairs = [(sentence, text) for sentence in sentences for text, _ in sentence.hypotheses if text]
        found = iter(self.aligner([sentence.folded for sentence, _ in pairs], [text for _, text in pairs])
                     if pairs else [])
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
                sentence.report = SpanReport(lost=span_problems(sentence.folded, sentence.hypotheses[0][0])) \
                    if sentence.hypotheses else SpanReport()
            return
        repaired, reports = repair_counted([sentence.folded for sentence in sentences],
                                           [sentence.hypotheses for sentence in sentences],
                                           [sentence.name for sentence in sentences], self.aligner)
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


_WARNED_SPANS = weakref.WeakSet()  # the engines whose missing span tokens were named once
_WARNED_TERMS = weakref.WeakSet()  # the engines whose missing term training was named once


def pipeline(engine: Engine, options: TranslationOptions, sources: list[str]) -> list:
    """The steps a decode of `sources` runs, outermost first, from the options and the model."""
    steps = [CaseStep(options)] if options.fold_case else []
    aligner = Aligner(engine, options) if has_offsets(engine.tokenizer) else None  # alignments need char offsets
    if aligner is not None and options.format == "html":
        steps.append(MarkupStep(aligner))
    steps.append(SpanRepairStep(aligner, options.repair_spans))
    if getattr(engine.config, "span_tokens", False):
        steps.append(SpanTokenStep())
    elif engine not in _WARNED_SPANS and any(map(protected_spans, sources)):
        _WARNED_SPANS.add(engine)
        logger.warning("this model was not trained with span tokens: placeholders, URLs, paths and numbers are "
                       "left to it, then checked and put back where it lost them (each one named)")
    annotate = bool(options.glossary) and getattr(engine.config, "term_annotations", False)
    if options.glossary and not annotate and engine not in _WARNED_TERMS:
        _WARNED_TERMS.add(engine)
        logger.warning("this model was not trained to follow term annotations (--term_annotation_share): the "
                       "glossary is checked, not shown to it")
    steps.append(TermStep(options, annotate))
    return steps


# the options a record's `before` halves depend on: a re-decode whose options keep them reuses the records
BEFORE_FIELDS = ("fold_case", "format", "glossary", "glossary_ignore_case", "repair_spans")


class Decoder:
    """An engine and the options of one decode: `decode` runs the pipeline of steps and the trust step over new
    sentences; `redecode` decodes some of them again with other options, through the same steps; `decode_other`
    decodes other sentences (a term alone, a term forced in) with other options. `prefixed`: whether forced
    beginnings were given (a list, even of None), which the engines are handed as given."""

    def __init__(self, engine: Engine, options: TranslationOptions, prefixed: bool = False):
        self.engine, self.options, self.prefixed = engine, options, prefixed
        self.sentences: list[Sentence] = []

    def decode(self, sources: list[str], names: list[str], prefixes: list[str | None] | None = None) -> list[Decoded]:
        """Each sentence's hypotheses as `Decoded`, with its alignments (html) and `quality.Flags`."""
        self.prefixed = prefixes is not None
        self.sentences = records(sources, names, prefixes)
        steps = pipeline(self.engine, self.scored(self.options), sources)
        for step in steps:
            step.before(self.sentences)
        return self._finish(self.sentences, steps, self.options)

    def redecode(self, indices: list[int], options: TranslationOptions) -> list[Decoded]:
        """The sentences at `indices` decoded again with `options`, their `before` halves reused when the options
        keep what those depend on (BEFORE_FIELDS)."""
        if any(getattr(options, name) != getattr(self.options, name) for name in BEFORE_FIELDS):
            return self.decode_other([self.sentences[i].source for i in indices], options,
                                     [self.sentences[i].name for i in indices],
                                     [self.sentences[i].prefix for i in indices] if self.prefixed else None)
        again = [self.sentences[i].again() for i in indices]
        steps = pipeline(self.engine, self.scored(options), [sentence.source for sentence in again])
        return self._finish(again, steps, options)

    def decode_other(self, sources: list[str], options: TranslationOptions, names: list[str],
                     prefixes: list[str | None] | None = None) -> list[Decoded]:
        """Other sentences, with their own records and pipeline."""
        return decode(self.engine, sources, options, names, prefixes)

    def scored(self, options: TranslationOptions) -> TranslationOptions:
        """The options the engine decodes with: scores asked for when a calibration will rate them (the word
        alignments a caller asked for are its own, made after the decode: `translation.translate_stream`)."""
        if calibration_of(self.engine, options) is None:
            return options
        return options.replace(scores=True, alignments=False)

    def _finish(self, sentences: list[Sentence], steps: list, options: TranslationOptions) -> list[Decoded]:
        """The engine, the `after` halves in reverse order, then the trust step over `sentences`."""
        scored = self.scored(options)
        found = self.engine.translate_sentences(
            tagged([sentence.shown for sentence in sentences], options.source_prefix), scored,
            [sentence.name for sentence in sentences],
            [sentence.shown_prefix for sentence in sentences] if self.prefixed else None)
        for sentence, hypotheses in zip(sentences, found, strict=True):
            sentence.hypotheses = hypotheses
        for step in reversed(steps):
            step.after(sentences)
        flags = [Flags(sentence.report) for sentence in sentences]
        over = Decoder(self.engine, scored, self.prefixed)  # what the trust step reads and decodes again from
        over.sentences = sentences
        judged = judge(over, [sentence.source for sentence in sentences],
                       [sentence.hypotheses for sentence in sentences], flags, scored,
                       [sentence.name for sentence in sentences],
                       [sentence.prefix for sentence in sentences] if self.prefixed else None)
        decoded = []
        for sentence, hypotheses, flag in zip(sentences, judged, flags):
            aligned = sentence.alignments
            if isinstance(hypotheses, Decoded):  # decoded again
                aligned = hypotheses.alignments
            elif flag.abstained and sentence.alignments is not None:
                aligned = [_unchanged(sentence.source)] * len(hypotheses)
            if not options.scores:
                hypotheses = [(text, None) for text, _ in hypotheses]
            decoded.append(Decoded(hypotheses, aligned, flag))
        return decoded


def _only_tokens(sentence: str) -> bool:
    """Whether an HTML run's sentence holds nothing but the tokens of verbatim elements (`markup`): kept as is."""
    return not TOKEN.sub("", sentence).strip()


def _unchanged(sentence: str) -> list[tuple[int, int]]:
    """The word alignment of a sentence to itself."""
    return [(i, i) for i in range(len(sentence.split()))]


def decode(engine: Engine, sentences: list[str], options: TranslationOptions, names: list[str],
           prefixes: list[str | None] | None = None) -> list[Decoded]:
    """The engine's hypotheses for `sentences` (untagged; `options.source_prefix` begins each) through the steps
    around it and the trust step (`Decoder`), each sentence's as `Decoded` with its `quality.Flags` (and, with
    `format="html"`, aligned to it). What every entry decodes with."""
    if options.format == "html" and any(map(_only_tokens, sentences)):  # a hashtag after the last full stop
        keep = [i for i, sentence in enumerate(sentences) if not _only_tokens(sentence)]
        decoded = iter(decode(engine, [sentences[i] for i in keep], options, [names[i] for i in keep],
                              [prefixes[i] for i in keep] if prefixes else None))
        return [Decoded([(sentence, None)] * options.num_return_sequences, [_unchanged(sentence)]
                        * options.num_return_sequences, Flags(SpanReport(carried=protected_spans(sentence))))
                if _only_tokens(sentence) else next(decoded) for sentence in sentences]
    return Decoder(engine, options).decode(sentences, names, prefixes)


def translate_masked(engine: Engine, sentences: list[str], options: TranslationOptions, names: list[str],
                     prefixes: list[str | None] | None) -> list[Hypotheses]:
    """The engine's hypotheses through the span-token and term steps alone (no case folding, repair or trust): what
    the model writes given what it was trained to read (the spans study compares the repair with it)."""
    held = records(sentences, names, prefixes)
    steps = [step for step in pipeline(engine, options, sentences) if isinstance(step, (SpanTokenStep, TermStep))]
    for step in steps:
        step.before(held)
    found = engine.translate_sentences(tagged([record.shown for record in held], options.source_prefix), options,
                                       names, [record.shown_prefix for record in held] if prefixes is not None
                                       else None)
    for record, hypotheses in zip(held, found, strict=True):
        record.hypotheses = hypotheses
    for step in reversed(steps):
        step.after(held)
    return [record.hypotheses for record in held]


__all__ = ["Aligner", "CaseStep", "Decoded", "Decoder", "MarkupStep", "Sentence", "SpanRepairStep", "SpanTokenStep",
           "TermStep", "decode", "pipeline", "translate_masked"]
