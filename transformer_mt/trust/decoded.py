"""What the trust step reads of a decode: each sentence's hypotheses with their alignments and flags (`Decoded`), how
the engine aligns them (`Aligner`, `has_offsets`), the calibration that rates them (`calibration_of`,
`sentence_features`), the rules of the languages it reads and writes (`languages_for`) and the guards the best one
sets off (`guards_fired`)."""

from ..engines import Engine
from ..engines.alignment import check_tokenizer
from ..engines.inputs import Hypotheses
from ..options import OptionError, TranslationOptions
from ..quality import BROKEN, Calibration, Flags, features, is_copy, is_loop
from ..text.languages import Languages, languages_of
from ..tokenization import target_side


class Decoded(list):
    """A sentence's hypotheses (a `Hypotheses` list) as `decode` gives them, or a text's as `translate_texts` does,
    with what is known of them: the word alignment of each to the sentence (`alignments`, with `format="html"`, so
    that `assemble` can place the inline markup; else None) and the `quality.Flags` of the best one (its protected
    spans, confidence, guards, re-decode, abstention)."""

    def __init__(self, hypotheses: Hypotheses, alignments: list | None = None, flags: Flags | None = None):
        super().__init__(hypotheses)
        self.alignments, self.flags = alignments, flags or Flags()


def has_offsets(tokenizer) -> bool:
    """Whether the tokenizer gives character offsets, which word alignments need (a converted Opus-MT model's
    SentencePiece tokenizer does not: its translations keep what the model wrote)."""
    try:
        check_tokenizer(tokenizer)
    except ValueError:
        return False
    return True


class Aligner:
    """Word alignments of (source, translation) pairs from the engine; none for a pair the model cannot read whole
    (a translation cut at the length bound, past a learned position table)."""

    def __init__(self, engine: Engine, options: TranslationOptions):
        self.engine, self.options = engine, options

    def __call__(self, sources: list[str], targets: list[str]) -> list:
        try:
            return self.engine.align_pairs(sources, targets, self.options)
        except ValueError:
            return [self._alone(source, target) for source, target in zip(sources, targets)]

    def _alone(self, source: str, target: str) -> list:
        try:
            return self.engine.align_pairs([source], [target], self.options)[0]
        except ValueError:
            return []


def calibration_of(engine, options: TranslationOptions) -> Calibration | None:
    """The engine's calibration when the options need one (a confidence, a minimum) or the guards can use it; an
    OptionError naming the option when one is needed and the model has none that fits its weights."""
    calibration = engine.calibration
    if calibration is None and options.calibrated:
        option = "min_confidence" if options.min_confidence is not None else "confidence"
        why = engine.calibration_problem or "the model holds no calibration.json"
        raise OptionError(
            option,
            f"needs the model's calibrated confidence, and {why}: fit one with "
            "transformer-mt-score --model MODEL --calibrate DATA",
        )
    return calibration


def sentence_features(engine, sources: list[str], outputs: list[str], scores: list[float]) -> list[dict]:
    """The calibration's inputs for each (source, output, score): what `quality.features` reads."""
    source_lengths = [len(ids) for ids in engine.tokenizer(sources)["input_ids"]] if sources else []
    output_lengths = [len(ids) for ids in target_side(engine.tokenizer)(outputs)["input_ids"]] if outputs else []
    return [
        features(source, output, source_length, output_length, score)
        for source, output, score, source_length, output_length in zip(
            sources, outputs, scores, source_lengths, output_lengths
        )
    ]


def languages_for(engine, options: TranslationOptions) -> Languages:
    """The rules of the languages the engine's model translates between: the options' `source_lang` and
    `target_lang` where given, else its config's (`text.languages`)."""
    return languages_of(getattr(engine, "config", None), options.source_lang, options.target_lang)


def guards_fired(
    source: str, sentence: Hypotheses, flags: Flags, calibration: Calibration | None, languages: Languages
) -> tuple[str, ...]:
    """The guards the best hypothesis sets off (a short copy is judged by `flags.confidence`; a loop by the rules of
    `languages`; a broken one writes U+FFFD, which the source does not hold as often)."""
    if not sentence:
        return ()
    output = sentence[0][0]
    fired = [
        name
        for name, test in (
            ("loop", lambda: is_loop(source, output, languages)),
            ("copy", lambda: is_copy(source, output, flags.confidence)),
            ("length", lambda: calibration is not None and calibration.off_length(source, output)),
            ("broken", lambda: output.count(BROKEN) > source.count(BROKEN)),  # byte pieces of no character
        )
        if test()
    ]
    return tuple(fired)


__all__ = [
    "Aligner",
    "Decoded",
    "calibration_of",
    "guards_fired",
    "has_offsets",
    "languages_for",
    "sentence_features",
]
