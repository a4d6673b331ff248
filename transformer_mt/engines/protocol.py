"""The engine protocol: what turns sentences into hypotheses, scores given pairs and aligns them.

Every engine (`GenerateEngine`, generate() of a loaded model; `CTranslate2Engine`, a CTranslate2 export) implements
it, and every caller (the batch API, the server, scoring, alignments) holds an `Engine` without asking which one:
what an engine can do is a member of it, never a test of its class or name.
"""

from typing import Protocol, runtime_checkable

from ..options import TranslationOptions
from .alignment import Alignment
from .inputs import Hypotheses
from .pair_scores import PairScore


@runtime_checkable
class Engine(Protocol):
    """Sentences in, hypotheses out, in length-sorted batches within the same length bounds and warnings."""

    name: str  # "transformers" or "ctranslate2": said to the user, never branched on
    reason: str  # why this engine was chosen ("asked for", "auto: ...")
    device: str  # where it decodes: "cpu", "cuda:0", ...
    workers: int  # batches it decodes at once (the server runs that many calls together)
    max_positions: int | None  # positions its decoder writes with (a learned table's rows), None for any length
    config: object  # the model's TransformerMTConfig
    generation_config: object  # the model's GenerationConfig: the defaults options fall back to
    tokenizer: object
    calibration: object | None = None  # the model's quality.Calibration (`loader.attach_calibration`), if any
    calibration_problem: str | None = None  # why a calibration beside the model is not used

    def translate_sentences(
        self,
        sentences: list[str],
        options: TranslationOptions,
        names: list[str] | None = None,
        target_prefix: list[str | None] | None = None,
    ) -> list[Hypotheses]:
        """`options.num_return_sequences` hypotheses per sentence (each one sequence), best first, `(text, score)`
        (score None unless `options.scores`); `names` label sentences in warnings (default 1, 2, ...),
        `target_prefix` gives each sentence's forced beginning (None for none)."""

    def score_pairs(
        self,
        sources: list[str],
        targets: list[str],
        batch_size: int = 16,
        length_penalty: float | None = None,
        options: TranslationOptions | None = None,
    ) -> list[PairScore]:
        """Each given target's log-probability given its source (`transformer_mt.engines.pair_scores`), the source
        read as translation reads it under `options` (`source_prefix`, the register's tag, the context)."""

    def align_pairs(self, sources: list[str], targets: list[str], options: TranslationOptions) -> list[Alignment]:
        """Word alignments of given pairs (`engines.alignment`), read with `options.source_prefix`, the register's
        tag, the context and the target language's token as the translations were made (nothing aligned to the
        context or the tags); `options.batch_size` pairs at a time."""

    def seed(self, seed: int) -> None:
        """Seed this engine's sampling: the same seed gives the same output."""


__all__ = ["Engine"]
