"""Speed against MarianMTModel with the same weights: generate() and Seq2SeqTrainer steps, side by side.

    python scripts/benchmark.py                          # both presets, every task, ~30 minutes on 2 cores
    python scripts/benchmark.py --presets main-job --repeats 6 --json benchmark.json
    python scripts/benchmark.py --batching --max_tokens_per_batch 2048 4096   # sentence vs token batches
    python scripts/benchmark.py --positions --presets main-job                 # the four position types

Runs TransformerMT and MarianMTModel (converted with the package's own Marian bridge, so the weights are the same)
interleaved A/B/B/A with warm-up and repeats, checks that they produce the same tokens and the same loss, and
prints markdown tables of tokens/s (best and median) and ratios to MarianMT as its users run it (eager, dynamic
cache, transformers' Seq2SeqTrainer). Run it on a quiet machine: see `transformer_mt.experiments.benchmarks.harness`.
"""

import argparse

from transformer_mt.commands.cli import command
from transformer_mt.experiments.benchmarks import add_benchmark_arguments, run_benchmark, save_results


@command
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_benchmark_arguments(parser)
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error(f"--repeats must be >= 1, got {args.repeats}")
    results, report = run_benchmark(
        args.data,
        args.presets,
        args.tasks,
        args.repeats,
        args.threads,
        args.new_tokens,
        args.train_steps,
        compiled=not args.no_compiled,
        training=not args.no_training,
        batching=args.batching,
        max_tokens_per_batch=args.max_tokens_per_batch,
        positions=args.positions,
    )
    print(report)
    save_results(results, args.json)


if __name__ == "__main__":
    main()
