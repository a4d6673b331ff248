"""Speed, side by side: TransformerMT against MarianMTModel (same weights) and CTranslate2, sentence batches against
token batches, the position types against each other, the translate command's engines, the server under load.
`harness` says how every number is taken; `suite` is what scripts/benchmark.py runs; each other module is one
comparison. scripts/benchmark.py, benchmark_ctranslate2.py, benchmark_engines.py and load_test.py are the commands."""

from .batching import batching_report, compare_batching
from .ctranslate2 import compare_with_ctranslate2, ctranslate2_report
from .harness import interleaved_order, markdown_table, ratio_rows, run_worker, sample_stats, save_results
from .marian import GENERATION_TASKS, MARIAN, MODEL_SIZES, OURS, compare_with_marian, model_pair, report
from .positions import compare_positions, positions_report
from .suite import add_benchmark_arguments, run_benchmark


__all__ = [
    "GENERATION_TASKS",
    "MARIAN",
    "MODEL_SIZES",
    "OURS",
    "add_benchmark_arguments",
    "batching_report",
    "compare_batching",
    "compare_positions",
    "compare_with_ctranslate2",
    "compare_with_marian",
    "ctranslate2_report",
    "interleaved_order",
    "markdown_table",
    "model_pair",
    "positions_report",
    "ratio_rows",
    "report",
    "run_benchmark",
    "run_worker",
    "sample_stats",
    "save_results",
]
