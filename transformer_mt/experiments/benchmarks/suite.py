"""What scripts/benchmark.py runs: its flags, and one of three comparisons, with its results and their markdown
report."""

import torch

from .batching import batching_report, compare_batching
from .marian import GENERATION_TASKS, MODEL_SIZES, compare_with_marian, report
from .positions import compare_positions, positions_report


def run_benchmark(
    data_dir: str,
    presets=("main-job", "base"),
    tasks=tuple(GENERATION_TASKS),
    repeats: int = 4,
    threads: int = 2,
    new_tokens: int = 32,
    train_steps: int = 30,
    compiled: bool = True,
    training: bool = True,
    batching: bool = False,
    max_tokens_per_batch=(2048, 4096),
    positions: bool = False,
) -> tuple[dict, str]:
    """TransformerMT against MarianMTModel (`compare_with_marian`); or with `batching` sentence batches against token
    batches of each `max_tokens_per_batch` (`compare_batching`); or with `positions` every position type at the first
    preset's size (`compare_positions`). Returns (results, their markdown tables)."""
    if positions:
        results = compare_positions(
            data_dir,
            preset=presets[0],
            repeats=repeats,
            threads=threads,
            new_tokens=new_tokens,
            train_steps=train_steps,
        )
        return results, positions_report(results)
    if batching:
        results = compare_batching(data_dir, max_tokens_per_batch, repeats, threads, train_steps)
        return results, batching_report(results)
    results = compare_with_marian(
        data_dir, presets, tasks, repeats, threads, new_tokens, train_steps, compiled=compiled, training=training
    )
    return results, report(results)


def add_benchmark_arguments(parser) -> None:
    """scripts/benchmark.py's flags: the data, presets, tasks and repeats, and which comparison runs instead of the
    one against MarianMT (--batching, --positions)."""
    parser.add_argument("--data", default="data/en-de", help="Parallel data: training pairs and test sources.")
    parser.add_argument("--presets", nargs="+", choices=list(MODEL_SIZES), default=["main-job", "base"])
    parser.add_argument("--tasks", nargs="+", choices=list(GENERATION_TASKS), default=list(GENERATION_TASKS))
    parser.add_argument("--repeats", type=int, default=4, help="Timed runs per engine (interleaved).")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--new_tokens", type=int, default=32, help="Tokens generated per sequence (EOS off).")
    parser.add_argument("--train_steps", type=int, default=30, help="Timed optimizer steps (a quarter for base).")
    parser.add_argument("--no_compiled", action="store_true", help="Leave out the compiled generation engines.")
    parser.add_argument("--no_training", action="store_true", help="Benchmark generation only.")
    parser.add_argument(
        "--batching",
        action="store_true",
        help="Instead: real target tokens/s of sentence batches against --max_tokens_per_batch.",
    )
    parser.add_argument(
        "--max_tokens_per_batch", type=int, nargs="+", default=[2048, 4096], help="Token-batch sizes for --batching."
    )
    parser.add_argument(
        "--positions",
        action="store_true",
        help="Instead: generate() and training throughput of every position type (first preset).",
    )
    parser.add_argument("--json", help="Also write the results here.")


__all__ = ["add_benchmark_arguments", "run_benchmark"]
