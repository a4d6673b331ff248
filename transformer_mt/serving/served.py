"""The language directions a server offers: a model's own (`ServedModel`), and a pair no model translates that two do
through English (`PivotModel`, `steps.pivot`), which `pivot_models` finds among the served models."""

from ..engines.inputs import default_names, register_tag
from ..options import OptionError, TranslationOptions
from ..steps.pivot import PIVOT, Pivot
from ..translation import decode
from .fields import RequestError, TranslateRequest


class Direction:
    """What a served language direction does with a request (`options`, `translate`), from its `source`, `target`,
    `engine` (what translates), `writer` (the engine that writes the target: its register tags, its beams) and
    `min_confidence`."""

    source: str
    target: str
    min_confidence: float | None

    def options(self, asked: TranslateRequest) -> TranslationOptions:
        """The options a request translates with: its own (format, hypotheses), this direction's languages, and
        at least as many beams as hypotheses."""
        count = asked.alternatives + 1
        try:  # a register this model was not trained to write is refused with the request, by name
            register_tag(self.writer.config, asked.options)
        except OptionError as error:
            raise RequestError(f"Invalid request: {error}") from None
        return asked.options.replace(
            num_return_sequences=count,
            source_lang=self.source if asked.options.split_sentences else None,  # it names the splitting's language
            target_lang=self.target,
            num_beams=max(self.writer.generation_config.num_beams or 1, count),
            confidence=getattr(self.engine, "calibration", None) is not None,
            min_confidence=asked.options.min_confidence
            if asked.options.min_confidence is not None
            else self.min_confidence,
        )

    def translate(self, sentences: list[str], options: TranslationOptions, alone: bool = False) -> list:
        """One batch's hypotheses; `alone`: the batch holds inline elements' own texts (`translation.segment`),
        decoded without guards or alignment."""
        return decode(
            self.engine,
            sentences,
            options.replace(batch_size=len(sentences) or 1),
            default_names(len(sentences)),
            alone=[alone] * len(sentences) if alone else None,
        )


class ServedModel(Direction):
    """One language direction: an engine (`transformer_mt.engines`) with its source and target language (for a
    model of several targets, one ServedModel per target: `options.target_lang` picks its language token), and the
    server's `min_confidence` for requests that give none (the serve command's --min_confidence); `weights`: what
    its answers depend on beyond the request (`shared.model_identity`; None: its answers are not cached)."""

    def __init__(
        self, engine, source: str, target: str, min_confidence: float | None = None, weights: str | None = None
    ):
        self.engine, self.source, self.target, self.min_confidence = engine, source, target, min_confidence
        self.weights = weights

    @property
    def writer(self):
        return self.engine


class PivotModel(Direction):
    """A pair no model translates, served by `first` (source → English) and `second` (English → target) as one
    direction (`steps.pivot.Pivot`); its answers are cached under both hops' weights; its engine exists while both
    hops' do (a --models folder's hops load on its first request: `Service.hold`)."""

    def __init__(self, first: ServedModel, second: ServedModel):
        self.first, self.second = first, second
        self.source, self.target, self.min_confidence = first.source, second.target, second.min_confidence

    @property
    def engine(self) -> Pivot | None:
        first, second = self.first.engine, self.second.engine
        return None if first is None or second is None else Pivot(first, second)

    @property
    def weights(self) -> str | None:
        first, second = self.first.weights, self.second.weights
        return None if first is None or second is None else f"{first}>{second}"

    @property
    def writer(self):
        return self.second.engine


def pivot_models(models: list[ServedModel]) -> dict[tuple[str, str], PivotModel]:
    """Every pair X→Y that no model translates and that a model X→English and one English→Y do, by pair."""
    pairs = {(model.source, model.target): model for model in models}
    return {
        (first.source, second.target): PivotModel(first, second)
        for first in models
        if first.target == PIVOT
        for second in models
        if second.source == PIVOT and first.source != second.target and (first.source, second.target) not in pairs
    }


__all__ = ["Direction", "PivotModel", "ServedModel", "pivot_models"]
