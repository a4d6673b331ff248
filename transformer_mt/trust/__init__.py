"""The trust step after the engine (`judge`; `transformer_mt.quality` says what each part means): each sentence's
best translation given its calibrated confidence, checked by the guards, decoded once more with a fallback search
when a guard fires (no n-gram of 3 tokens repeated, a repetition penalty, twice the beams, through the same steps),
flagged with confidence 0 when it still fires, and left untranslated when its confidence is below
`options.min_confidence`; a glossary's terms checked and followed where the translation misses one (more beams, the
term in the place of the model's own word, the term forced in). `transformer_mt.steps` runs it after the steps
around the engine, and hands it the `steps.Decoder` it decodes again through (`redecode`: the same sentences with
other options; `decode_other`: other sentences) and whose records say how each sentence was shown to the engine.

By concern: `judge` (the verdict: confidence, guards and their re-decode, abstaining), `labels` (a copied short label
tried in its other forms), `terms` (a glossary's terms followed), `decoded` (what the step reads of a decode:
`Decoded`, word alignments from the engine, the calibration's inputs, the rules of the model's languages, the guards
a translation sets off).
"""

from .decoded import Aligner, Decoded, calibration_of, guards_fired, has_offsets, languages_for, sentence_features
from .judge import FALLBACK_CONFIDENCE_KEPT, FALLBACK_NO_REPEAT, FALLBACK_REPETITION_PENALTY, judge
from .terms import TERM_BEAMS, TERM_PLACES, annotated, found_terms


__all__ = [
    "FALLBACK_CONFIDENCE_KEPT",
    "FALLBACK_NO_REPEAT",
    "FALLBACK_REPETITION_PENALTY",
    "TERM_BEAMS",
    "TERM_PLACES",
    "Aligner",
    "Decoded",
    "annotated",
    "calibration_of",
    "found_terms",
    "guards_fired",
    "has_offsets",
    "judge",
    "languages_for",
    "sentence_features",
]
