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
annotation are done once), other sentences (a copied label's other forms, a term alone, a term forced in) go
through a pipeline of their own.
Adding a step is one class and one line in `pipeline`.

A pair no model translates is decoded by two through English (`pivot`): each hop through its own pipeline, the
hops joined per sentence (alignments composed, glossary terms carried, confidences multiplied); `decode` is the
entry for both.

By concern: `transforms` (the record and the steps, each one class), `decoder` (`pipeline`, the `Decoder`, one
engine's `decode`), `pivot` (`Pivot`, two engines' `decode`).
"""

from ..trust import Aligner, Decoded
from .decoder import BEFORE_FIELDS, Decoder, pipeline, translate_masked
from .pivot import PIVOT, Pivot, decode
from .transforms import CaseStep, MarkupStep, Sentence, SpanRepairStep, SpanTokenStep, TermStep, records


__all__ = [
    "BEFORE_FIELDS",
    "Aligner",
    "CaseStep",
    "Decoded",
    "Decoder",
    "MarkupStep",
    "PIVOT",
    "Pivot",
    "Sentence",
    "SpanRepairStep",
    "SpanTokenStep",
    "TermStep",
    "decode",
    "pipeline",
    "records",
    "translate_masked",
]
