"""Copied short labels tried again (part of the guards, `judge`): a short label the model gave back as it was and
the fallback search did not change ("Summary", "Breadcrumbs", "Latvian"), flagged as a copy, is decoded in its other
forms (`text.labels.label_forms`: capitalised, lower-cased, its words alone, as the source language allows) through
the `steps.Decoder` (`decode_other`); the first form whose translation, in the label's case (as the target language
writes it), is no copy, sets off no guard and is rated at least COPY_CONFIDENCE (the model has a translation for the
word at all: a guess rated lower is no better than the copy it would replace) takes its place; otherwise the copy
stays, flagged. A label kept confidently (a name: "Linux") sets off no guard, so it is never tried; without a
calibration no short copy is flagged, so none is.

On en-de-ui's validation labels and `identical.tsv`, without that floor the tiny shipped models turned their copies
into other words that were never the reference, and changed 4-7% more of the names that should stay
(docs/results/labels/: `experiments.label_study`)."""

from ..engines.inputs import Hypotheses
from ..options import TranslationOptions
from ..quality import COPY_CONFIDENCE, COPY_MIN_WORDS, Calibration, Flags
from ..text.labels import as_label, label_forms
from .decoded import Aligner, Decoded, guards_fired, languages_for, sentence_features


def retry_copied_labels(
    decoder,
    sentences: list[str],
    hypotheses: list[Hypotheses],
    flags: list[Flags],
    indices: list[int],
    options: TranslationOptions,
    calibration: Calibration | None,
) -> int:
    """Each sentence at `indices` still flagged only as a copy and of at most COPY_MIN_WORDS words tried in its
    label forms, one decode for all; `hypotheses` and `flags` changed in place where a form wins (the guards
    cleared, the confidence that of the form's translation). How many won."""
    todo = [
        i
        for i in indices
        if flags[i].guards == ("copy",) and hypotheses[i] and len(sentences[i].split()) <= COPY_MIN_WORDS
    ]
    languages = languages_for(decoder.engine, options)
    tried = [(i, form) for i in todo for form in label_forms(sentences[i], languages.source)]
    if not tried:
        return 0
    plain = options.replace(guards=False, min_confidence=None, num_return_sequences=1, alignments=False, format="text")
    outputs = decoder.decode_other(
        [form.text for _, form in tried], plain, [f"sentence {i + 1} as {form.text!r}" for i, form in tried]
    )
    won = {}
    for (i, form), output in zip(tried, outputs, strict=True):
        if i in won or not output or not output[0][0].strip():
            continue
        text, score = as_label(sentences[i], form, output[0][0], languages.target), output[0][1]
        confidence = None
        if calibration is not None and score is not None:
            confidence = calibration.confidence(sentence_features(decoder.engine, [sentences[i]], [text], [score])[0])
        rated = confidence is None or confidence >= COPY_CONFIDENCE
        if rated and not guards_fired(
            sentences[i], [(text, score)], Flags(confidence=confidence), calibration, languages
        ):
            won[i] = (text, score, confidence)
    for i, (text, score, confidence) in won.items():
        flags[i].guards, flags[i].confidence = (), confidence
        aligned = decoder.sentences[i].alignments
        realigned = Aligner(decoder.engine, options)([sentences[i]], [text]) + aligned[1:] if aligned else None
        scored = score if hypotheses[i][0][1] is not None else None
        hypotheses[i] = Decoded([(text, scored), *hypotheses[i][1:]], realigned, flags[i])
    return len(won)


__all__ = ["retry_copied_labels"]
