"""What scripts/benchmark.py runs: one of three comparisons, with its results and their markdown report."""

from .batching import batching_report, compare_batching
from .marian import GENERATION_TASKS, compare_with_marian, report
from .positions import compare_positions, positions_report


def run_benchmark(data_dir: str, presets=("main-job", "base"), tasks=tuple(GENERATION_TASKS), repeats: int = 4,
                  threads: int = 2, new_tokens: int = 32, train_steps: int = 30, compiled: bool = True,
                  training: bool = True, batching: bool = False, max_tokens_per_batch=(2048, 4096),
                  positions: bool = False) -> tuple[dict, str]:
    """TransformerMT against MarianMTModel (`compare_with_marian`); or with `batching` sentence batches against token
    batches of each `max_tokens_per_batch` (`compare_batching`); or with `positions` every position type at the first
    preset's size (`compare_positions`). Returns (results, their markdown tables)."""
    if positions:
        results = compare_positions(data_dir, preset=presets[0], repeats=repeats, threads=threads,
                                    new_tokens=new_tokens, train_steps=train_steps)
        return results, positions_report(results)
    if batching:
        results = compare_batching(data_dir, max_tokens_per_batch, repeats, threads, train_steps)
        return results, batching_report(results)
    results = compare_with_marian(data_dir, presets, tasks, repeats, threads, new_tokens, train_steps,
                                  compiled=compiled, training=training)
    return results, report(results)


__all__ = ["run_benchmark"]
