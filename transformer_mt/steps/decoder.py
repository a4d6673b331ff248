"""The pipeline of steps a decode runs (`pipeline`), the `Decoder` the first decode and every re-decode go through,
and the entries every path decodes with (`decode`; `translate_masked`, the span-token and term steps alone)."""

import logging
import weakref

from ..engines import Engine
from ..engines.inputs import Hypotheses, tagged
from ..options import TranslationOptions
from ..quality import Flags
from ..text.spans import TOKEN, SpanReport, protected_spans
from ..trust import Aligner, Decoded, calibration_of, has_offsets, judge, languages_for
from .transforms import CaseStep, MarkupStep, Sentence, SpanRepairStep, SpanTokenStep, TermStep, records


logger = logging.getLogger(__name__)


_WARNED_SPANS = weakref.WeakSet()  # the engines whose missing span tokens were named once
_WARNED_TERMS = weakref.WeakSet()  # the engines whose missing term training was named once


def pipeline(engine: Engine, options: TranslationOptions, sources: list[str], markup: bool = True) -> list:
    """The steps a decode of `sources` runs, outermost first, from the options and the model (`markup`: whether
    html sentences are aligned for their inline markup; an element's own text is not)."""
    steps = [CaseStep(options, languages_for(engine, options))] if options.fold_case else []
    aligner = Aligner(engine, options) if has_offsets(engine.tokenizer) else None  # alignments need char offsets
    if aligner is not None and options.format == "html" and markup:
        steps.append(MarkupStep(aligner))
    steps.append(SpanRepairStep(aligner, options.repair_spans))
    if getattr(engine.config, "span_tokens", False):
        steps.append(SpanTokenStep())
    elif engine not in _WARNED_SPANS and any(map(protected_spans, sources)):
        _WARNED_SPANS.add(engine)
        logger.warning(
            "this model was not trained with span tokens: placeholders, URLs, paths and numbers are "
            "left to it, then checked and put back where it lost them (each one named)"
        )
    annotate = bool(options.glossary) and getattr(engine.config, "term_annotations", False)
    if options.glossary and not annotate and engine not in _WARNED_TERMS:
        _WARNED_TERMS.add(engine)
        logger.warning(
            "this model was not trained to follow term annotations (--term_annotation_share): the "
            "glossary is checked, not shown to it"
        )
    steps.append(TermStep(options, annotate))
    return steps


# the options a record's `before` halves depend on: a re-decode whose options keep them reuses the records
BEFORE_FIELDS = ("fold_case", "format", "glossary", "glossary_ignore_case", "repair_spans")


class Decoder:
    """An engine and the options of one decode: `decode` runs the pipeline of steps and the trust step over new
    sentences; `redecode` decodes some of them again with other options, through the same steps; `decode_other`
    decodes other sentences (a term alone, a term forced in) with other options. `prefixed`: whether forced
    beginnings were given (a list, even of None), which the engines are handed as given; `markup`: `pipeline`'s."""

    def __init__(self, engine: Engine, options: TranslationOptions, prefixed: bool = False, markup: bool = True):
        self.engine, self.options, self.prefixed, self.markup = engine, options, prefixed, markup
        self.sentences: list[Sentence] = []

    def decode(self, sources: list[str], names: list[str], prefixes: list[str | None] | None = None) -> list[Decoded]:
        """Each sentence's hypotheses as `Decoded`, with its alignments (html) and `quality.Flags`."""
        self.prefixed = prefixes is not None
        self.sentences = records(sources, names, prefixes)
        steps = pipeline(self.engine, self.scored(self.options), sources, self.markup)
        for step in steps:
            step.before(self.sentences)
        return self._finish(self.sentences, steps, self.options)

    def redecode(self, indices: list[int], options: TranslationOptions) -> list[Decoded]:
        """The sentences at `indices` decoded again with `options`, their `before` halves reused when the options
        keep what those depend on (BEFORE_FIELDS)."""
        if any(getattr(options, name) != getattr(self.options, name) for name in BEFORE_FIELDS):
            return self.decode_other(
                [self.sentences[i].source for i in indices],
                options,
                [self.sentences[i].name for i in indices],
                [self.sentences[i].prefix for i in indices] if self.prefixed else None,
            )
        again = [self.sentences[i].again() for i in indices]
        steps = pipeline(self.engine, self.scored(options), [sentence.source for sentence in again], self.markup)
        return self._finish(again, steps, options)

    def decode_other(
        self,
        sources: list[str],
        options: TranslationOptions,
        names: list[str],
        prefixes: list[str | None] | None = None,
    ) -> list[Decoded]:
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
            tagged([sentence.shown for sentence in sentences], options.source_prefix),
            scored,
            [sentence.name for sentence in sentences],
            [sentence.shown_prefix for sentence in sentences] if self.prefixed else None,
        )
        for sentence, hypotheses in zip(sentences, found, strict=True):
            sentence.hypotheses = hypotheses
        for step in reversed(steps):
            step.after(sentences)
        unknown = options.formality.startswith("prefer_") and not getattr(self.engine.config, "formality_tags", False)
        flags = [Flags(sentence.report, register_unknown=unknown) for sentence in sentences]
        # what the trust step reads and decodes again from
        over = Decoder(self.engine, scored, self.prefixed, self.markup)
        over.sentences = sentences
        judged = judge(
            over,
            [sentence.source for sentence in sentences],
            [sentence.hypotheses for sentence in sentences],
            flags,
            scored,
            [sentence.name for sentence in sentences],
            [sentence.prefix for sentence in sentences] if self.prefixed else None,
        )
        decoded = []
        for sentence, hypotheses, flag in zip(sentences, judged, flags):
            aligned = sentence.alignments
            if isinstance(hypotheses, Decoded):  # decoded again
                aligned = hypotheses.alignments
            elif flag.abstained and sentence.alignments is not None:
                aligned = [unchanged(sentence.source)] * len(hypotheses)
            if not options.scores:
                hypotheses = [(text, None) for text, _ in hypotheses]
            decoded.append(Decoded(hypotheses, aligned, flag))
        return decoded


def _only_tokens(sentence: str) -> bool:
    """Whether an HTML run's sentence holds nothing but the tokens of verbatim elements (`markup`): kept as is."""
    return not TOKEN.sub("", sentence).strip()


def unchanged(sentence: str) -> list[tuple[int, int]]:
    """The word alignment of a sentence to itself."""
    return [(i, i) for i in range(len(sentence.split()))]


def decode(
    engine: Engine,
    sentences: list[str],
    options: TranslationOptions,
    names: list[str],
    prefixes: list[str | None] | None = None,
    alone: list[bool] | None = None,
) -> list[Decoded]:
    """The engine's hypotheses for `sentences` (untagged; `options.source_prefix` begins each) through the steps
    around it and the trust step (`Decoder`), each sentence's as `Decoded` with its `quality.Flags` (and, with
    `format="html"`, aligned to it). What every entry decodes with. `alone`: whether each sentence is an inline
    element's own text (`translation.segment`), translated alone only as the hint for where the element goes:
    decoded without the guards (their re-decode, their warning) and without a word alignment, which nothing reads;
    below `min_confidence` it abstains as any sentence does, so that an abstained text keeps its elements' own
    texts too."""
    alone = alone or [False] * len(sentences)
    if options.format == "html" and any(map(_only_tokens, sentences)):  # a hashtag after the last full stop
        keep = [i for i, sentence in enumerate(sentences) if not _only_tokens(sentence)]
        decoded = iter(_decode_some(engine, keep, sentences, options, names, prefixes, alone))
        return [
            Decoded(
                [(sentence, None)] * options.num_return_sequences,
                [unchanged(sentence)] * options.num_return_sequences,
                Flags(SpanReport(carried=protected_spans(sentence))),
            )
            if _only_tokens(sentence)
            else next(decoded)
            for sentence in sentences
        ]
    if any(alone) and not all(alone):
        found = {}
        for group in ([i for i, own in enumerate(alone) if not own], [i for i, own in enumerate(alone) if own]):
            found.update(zip(group, _decode_some(engine, group, sentences, options, names, prefixes, alone)))
        return [found[i] for i in range(len(sentences))]
    if any(alone):  # min_confidence kept: an own text the model is unsure of is not written into the element
        return Decoder(engine, options.replace(guards=False), markup=False).decode(sentences, names, prefixes)
    return Decoder(engine, options).decode(sentences, names, prefixes)


def _decode_some(
    engine: Engine,
    indices: list[int],
    sentences: list[str],
    options: TranslationOptions,
    names: list[str],
    prefixes: list[str | None] | None,
    alone: list[bool],
) -> list[Decoded]:
    """`decode` of the sentences at `indices`."""
    return decode(
        engine,
        [sentences[i] for i in indices],
        options,
        [names[i] for i in indices],
        [prefixes[i] for i in indices] if prefixes else None,
        [alone[i] for i in indices],
    )


def translate_masked(
    engine: Engine,
    sentences: list[str],
    options: TranslationOptions,
    names: list[str],
    prefixes: list[str | None] | None,
) -> list[Hypotheses]:
    """The engine's hypotheses through the span-token and term steps alone (no case folding, repair or trust): what
    the model writes given what it was trained to read (the spans study compares the repair with it)."""
    held = records(sentences, names, prefixes)
    steps = [step for step in pipeline(engine, options, sentences) if isinstance(step, (SpanTokenStep, TermStep))]
    for step in steps:
        step.before(held)
    found = engine.translate_sentences(
        tagged([record.shown for record in held], options.source_prefix),
        options,
        names,
        [record.shown_prefix for record in held] if prefixes is not None else None,
    )
    for record, hypotheses in zip(held, found, strict=True):
        record.hypotheses = hypotheses
    for step in reversed(steps):
        step.after(held)
    return [record.hypotheses for record in held]


__all__ = ["BEFORE_FIELDS", "Decoder", "decode", "pipeline", "translate_masked", "unchanged"]
