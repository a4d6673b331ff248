"""The steps around the engine for a batch of sentences (`decode`), which every entry translates through: case
folded and given back (`transformer_mt.text.casing`), protected spans shown as span tokens and put back where the model
lost them (`transformer_mt.text.spans`), word alignments for inline markup (`format="html"`), and last the trust step
(`transformer_mt.trust.judge`: the calibrated confidence, the guards and their re-decode, abstaining, the glossary's
terms followed), which decodes again through these same steps.
"""

import logging
import weakref
from functools import partial

from .engines import Engine
from .engines.inputs import Hypotheses, tagged
from .options import TranslationOptions
from .quality import Flags
from .text.casing import fold_sentences, restore_hypotheses
from .text.glossary import strip_annotations
from .text.spans import TOKEN, SpanReport, lost_spans, mask, mask_as, protected_spans, repair_counted, unmask
from .trust import Decoded, annotated, calibration_of, has_offsets, judge


logger = logging.getLogger(__name__)


def _only_tokens(sentence: str) -> bool:
    """Whether an HTML run's sentence holds nothing but the tokens of verbatim elements (`markup`): kept as is."""
    return not TOKEN.sub("", sentence).strip()


def decode(engine: Engine, sentences: list[str], options: TranslationOptions, names: list[str],
           prefixes: list[str | None] | None = None) -> list[Hypotheses]:
    """The engine's hypotheses for `sentences` (untagged; `options.source_prefix` begins each), through the steps
    around it: an ALL CAPS or Title Case sentence shown to the engine in sentence case and its translation given the
    case back (`options.fold_case`, `transformer_mt.text.casing`); for a model trained with span tokens, its protected
    spans (placeholders, URLs, numbers, ...) shown as the tokens it learned to carry; the spans put back where the
    model lost them (`options.repair_spans`, `spans.repair_counted`, from the engine's word alignments; a model whose
    tokenizer gives no character offsets keeps what it wrote); then the trust step (`judge`: the calibrated
    confidence, the guards and their re-decode, abstaining below `options.min_confidence`, the glossary's terms
    checked). With
    `format="html"`, each sentence's hypotheses come aligned to it. Each sentence's come as `Decoded`, with its
    `quality.Flags`. What every entry decodes with."""
    if options.format == "html" and any(map(_only_tokens, sentences)):  # a hashtag after the last full stop
        keep = [i for i, sentence in enumerate(sentences) if not _only_tokens(sentence)]
        decoded = iter(decode(engine, [sentences[i] for i in keep], options, [names[i] for i in keep],
                              [prefixes[i] for i in keep] if prefixes else None))
        return [Decoded([(sentence, None)] * options.num_return_sequences, [_unchanged(sentence)]
                        * options.num_return_sequences, Flags(SpanReport(carried=protected_spans(sentence))))
                if _only_tokens(sentence) else next(decoded) for sentence in sentences]
    scored = options.replace(scores=True) if calibration_of(engine, options) is not None else options
    hypotheses, alignments, reports = _decode_steps(engine, sentences, scored, names, prefixes)
    flags = [Flags(report) for report in reports]
    hypotheses = judge(engine, sentences, hypotheses, flags, scored, names, lambda again, fallback: decode(
        engine, [sentences[i] for i in again], fallback, [names[i] for i in again],
        [prefixes[i] for i in again] if prefixes else None), partial(decode, engine), prefixes)
    decoded = []
    for i, sentence in enumerate(hypotheses):
        aligned = alignments[i] if alignments else None
        if isinstance(sentence, Decoded):  # decoded again
            aligned = sentence.alignments
        elif flags[i].abstained and alignments:
            aligned = [_unchanged(sentences[i])] * len(sentence)
        if not options.scores:
            sentence = [(text, None) for text, _ in sentence]
        decoded.append(Decoded(sentence, aligned, flags[i]))
    return decoded


def _unchanged(sentence: str) -> list[tuple[int, int]]:
    """The word alignment of a sentence to itself."""
    return [(i, i) for i in range(len(sentence.split()))]


def _decode_steps(engine: Engine, sentences: list[str], options: TranslationOptions, names: list[str],
                  prefixes: list[str | None] | None) -> tuple[list[Hypotheses], list | None, list[SpanReport]]:
    """`decode`'s steps before the trust step: the hypotheses, their alignments (html) and the spans' reports."""
    folded, cases = fold_sentences(sentences, titles=options.format != "html") if options.fold_case else (sentences,
                                                                                                         None)
    if cases is not None and prefixes is not None:  # a forced beginning is kept as it was given
        folded = [sentence if prefix else fold for sentence, fold, prefix in zip(sentences, folded, prefixes)]
        cases = [case if not prefix else "normal" for case, prefix in zip(cases, prefixes)]
    hypotheses = translate_masked(engine, folded, options, names, prefixes)
    alignments, reports = None, None
    if has_offsets(engine.tokenizer):
        def align(sources: list[str], targets: list[str]) -> list:
            """The pairs' alignments; none for a pair the model cannot read whole (a translation cut at the
            length bound, past a learned position table)."""
            try:
                return engine.align_pairs(sources, targets, options)
            except ValueError:
                return [_aligned_alone(engine, source, target, options) for source, target in zip(sources, targets)]

        if options.repair_spans:
            hypotheses, reports = repair_counted(folded, hypotheses, names, align)
        if options.format == "html":
            pairs = [(i, text) for i, sentence in enumerate(hypotheses) for text, _ in sentence if text]
            found = iter(align([folded[i] for i, _ in pairs], [text for _, text in pairs]) if pairs else [])
            alignments = [[next(found) if text else [] for text, _ in sentence] for sentence in hypotheses]
    if reports is None:  # nothing can be put back: what the model lost is reported
        reports = [SpanReport(lost=lost_spans(source, sentence[0][0])) if sentence else SpanReport()
                   for source, sentence in zip(folded, hypotheses)]
    if cases is not None:
        hypotheses = restore_hypotheses(hypotheses, cases)
    return hypotheses, alignments, reports


_WARNED = weakref.WeakSet()  # the engines whose missing span tokens were named once


def translate_masked(engine: Engine, sentences: list[str], options: TranslationOptions, names: list[str],
                      prefixes: list[str | None] | None) -> list[Hypotheses]:
    """The engine's hypotheses; a model trained with span tokens (`config.span_tokens`) sees each protected span
    as the reserved token `{k}` it learned to carry (`spans.mask`), and its translations get the spans back; a
    model trained with term annotations (`config.term_annotations`) sees each glossary term followed by its
    target term (`glossary.annotate`)."""
    spans = [[] for _ in sentences]
    if getattr(engine.config, "span_tokens", False):
        sentences, spans = map(list, zip(*(mask(sentence) for sentence in sentences))) if sentences else ([], [])
        if prefixes:  # a forced beginning shows the model its sentence's spans as their tokens too
            prefixes = [mask_as(prefix, found) if prefix else prefix for prefix, found in zip(prefixes, spans)]
    elif engine not in _WARNED and any(map(protected_spans, sentences)):
        _WARNED.add(engine)
        logger.warning("this model was not trained with span tokens: placeholders, URLs, paths and numbers are "
                       "left to it, then checked and put back where it lost them (each one named)")
    if options.glossary:
        if getattr(engine.config, "term_annotations", False):  # never inside a protected span
            sentences = [annotated(sentence, options)[0] for sentence in sentences]
        elif engine not in _WARNED_TERMS:
            _WARNED_TERMS.add(engine)
            logger.warning("this model was not trained to follow term annotations (--term_annotation_share): the "
                           "glossary is checked, not shown to it")
    hypotheses = engine.translate_sentences(tagged(sentences, options.source_prefix), options, names, prefixes)
    return [[(unmask(strip_annotations(text), found)[0] if found else strip_annotations(text), score)
             for text, score in sentence] for sentence, found in zip(hypotheses, spans)]


_WARNED_TERMS = weakref.WeakSet()  # the engines whose missing term training was named once


def _aligned_alone(engine: Engine, source: str, target: str, options: TranslationOptions) -> list:
    try:
        return engine.align_pairs([source], [target], options)[0]
    except ValueError:
        return []


__all__ = ["Decoded", "decode", "translate_masked"]
