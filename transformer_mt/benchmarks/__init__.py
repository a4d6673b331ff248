"""Speed, side by side: TransformerMT against MarianMTModel (same weights) and CTranslate2, sentence batches against
token batches, and the position types against each other. `harness` says how every number is taken; each other
module is one comparison. scripts/benchmark.py and scripts/benchmark_ctranslate2.py are the commands."""

from .batching import batching_report, compare_batching
from .ctranslate2 import compare_with_ctranslate2, ctranslate2_report
from .harness import interleaved_order, markdown_table, ratio_rows, run_worker, sample_stats
from .marian import GENERATION_TASKS, MARIAN, MODEL_SIZES, OURS, compare_with_marian, model_pair, report
from .positions import compare_positions, positions_report


__all__ = [
    "GENERATION_TASKS", "MARIAN", "MODEL_SIZES", "OURS", "batching_report", "compare_batching",
    "compare_positions", "compare_with_ctranslate2", "compare_with_marian", "ctranslate2_report", "interleaved_order",
    "markdown_table", "model_pair", "positions_report", "ratio_rows", "report", "run_worker", "sample_stats",
]
