"""The trust step's verdict on a decode (`judge`): each sentence's confidence, the guards and their re-decode, a copied
label's other forms (`labels`), a glossary's terms (`terms`), and abstaining below `options.min_confidence`."""

import logging

from ..engines.inputs import Hypotheses
from ..options import TranslationOptions
from ..quality import Flags
from .decoded import calibration_of, guards_fired, languages_for, sentence_features
from .labels import retry_copied_labels
from .terms import follow_terms


logger = logging.getLogger(__name__)


FALLBACK_NO_REPEAT = 3  # the re-decode forbids repeating any 3 tokens
FALLBACK_REPETITION_PENALTY = 1.2  # and makes every token already written less likely
# A re-decode is kept when no guard fires on it and its confidence keeps at least this share of the first's: on the
# validation splits, the shipped models' loops re-decoded so gained 50 (help-text) and 58 (broader) sentence chrF
# points in all, leaving 2 of 11 and 10 of 24 loops; demanding the same confidence (share 1) left 10 and 21.
FALLBACK_CONFIDENCE_KEPT = 0.5


def judge(
    decoder,
    sentences: list[str],
    hypotheses: list[Hypotheses],
    flags: list[Flags],
    options: TranslationOptions,
    names: list[str],
    prefixes: list[str | None] | None = None,
) -> list[Hypotheses]:
    """`hypotheses` (with scores when a calibration is used) after the trust step: `flags` filled in place (the
    confidence, the guards still firing, a re-decode, an abstention, the glossary's terms); `decoder` (a
    `steps.Decoder` over these sentences' records) decodes some of them again with other options
    (`redecode(indices, options)`) and other sentences (`decode_other`: a copied label's other forms, a glossary
    term alone, a sentence with a term forced in). A sentence below `options.min_confidence` keeps its source."""
    calibration = calibration_of(decoder.engine, options)
    hypotheses = list(hypotheses)
    if calibration is not None:
        rated = [i for i, sentence in enumerate(hypotheses) if sentence and sentence[0][1] is not None]
        found = sentence_features(
            decoder.engine,
            [sentences[i] for i in rated],
            [hypotheses[i][0][0] for i in rated],
            [hypotheses[i][0][1] for i in rated],
        )
        for i, values in zip(rated, found):
            flags[i].confidence = calibration.confidence(values)
    if options.guards:
        _guard(decoder, sentences, hypotheses, flags, options, calibration, names)
    if options.glossary:
        follow_terms(decoder, sentences, hypotheses, flags, options, calibration, prefixes)
    if options.min_confidence is not None:
        for i, sentence in enumerate(hypotheses):
            if sentence and flags[i].confidence is not None and flags[i].confidence < options.min_confidence:
                hypotheses[i] = [(sentences[i], score) for _, score in sentence]
                flags[i].abstained = True
    return hypotheses


def _guard(
    decoder,
    sentences: list[str],
    hypotheses: list[Hypotheses],
    flags: list[Flags],
    options: TranslationOptions,
    calibration,
    names: list[str],
) -> None:
    """The sentences whose best translation sets off a guard decoded again with the fallback search (`_fallback`),
    in place: a re-decoded translation replaces the first when no guard fires on it and, with a calibration, its
    confidence keeps FALLBACK_CONFIDENCE_KEPT of the first's (a fallback search can trade a loop for garbage); else
    the first stays, flagged with the guards it set off and confidence 0; a short label still flagged only as a copy
    is then tried in its other forms (`labels`). A sample (`do_sample`) is flagged, never decoded again: it is what
    was asked for, and its seed must give it again."""
    languages = languages_for(decoder.engine, options)
    fired = {
        i: guards_fired(sentences[i], hypotheses[i], flags[i], calibration, languages) for i in range(len(sentences))
    }
    fired = {i: guards for i, guards in fired.items() if guards}
    if fired and options.do_sample:  # a sample is what was asked for (and a seed must give it again): flagged
        for i, guards in fired.items():
            flags[i].guards = guards
        return
    if not fired:
        return
    again = sorted(fired)
    redecoded = decoder.redecode(again, _fallback(decoder.engine, options))
    for i, sentence in zip(again, redecoded, strict=True):
        still = guards_fired(sentences[i], sentence, sentence.flags, calibration, languages)
        worse = (
            calibration is not None
            and sentence.flags.confidence is not None
            and flags[i].confidence is not None
            and sentence.flags.confidence < FALLBACK_CONFIDENCE_KEPT * flags[i].confidence
        )
        if still or worse:  # the first translation stays, flagged
            flags[i].guards, flags[i].redecoded = fired[i], True
            flags[i].confidence = 0.0 if calibration is not None else None
        else:
            hypotheses[i], flags[i] = sentence, sentence.flags
            flags[i].redecoded = True
    labels = retry_copied_labels(decoder, sentences, hypotheses, flags, again, options, calibration)
    still = [i for i in again if flags[i].guards]
    logger.warning(
        f"{len(fired)} translation(s) looped, copied the source, had an unlikely length or broken characters and were "
        f"decoded again{f' ({labels} copied label(s) in another form)' if labels else ''}: "
        + ", ".join(f"{names[i]} ({'/'.join(fired[i])})" for i in again)
        + f"; {len(still)} still did (flagged)"
        + (f": {', '.join(names[i] for i in still)}" if still else "")
    )


def _fallback(engine, options: TranslationOptions) -> TranslationOptions:
    """The re-decode's options: no 3 tokens repeated, a repetition penalty of FALLBACK_REPETITION_PENALTY, twice the
    beams (at least 4) unless sampling or the model's generation config stops beams otherwise than with
    `early_stopping=True` (the models this package writes do; CTranslate2 decodes no other beam search); no guards, no
    minimum (the caller judges the result)."""
    changes = {
        "no_repeat_ngram_size": options.no_repeat_ngram_size or FALLBACK_NO_REPEAT,
        "guards": False,
        "min_confidence": None,
        "repetition_penalty": options.repetition_penalty or FALLBACK_REPETITION_PENALTY,
    }
    if not options.do_sample and getattr(engine.generation_config, "early_stopping", None) is True:
        changes["num_beams"] = max(4, 2 * options.beams(engine.generation_config))  # else greedily (CTranslate2)
    return options.replace(**changes)


__all__ = ["FALLBACK_CONFIDENCE_KEPT", "FALLBACK_NO_REPEAT", "FALLBACK_REPETITION_PENALTY", "judge"]
