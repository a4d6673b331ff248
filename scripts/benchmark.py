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

import torch

from transformer_mt.commands.cli import command
from transformer_mt.experiments.benchmarks import GENERATION_TASKS, MODEL_SIZES, run_benchmark, save_results


@command
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="data/en-de", help="Parallel data: training pairs and test sources.")
    parser.add_argument("--presets", nargs="+", choices=list(MODEL_SIZES), default=["main-job", "base"])
    parser.add_argument("--tasks", nargs="+", choices=list(GENERATION_TASKS), default=list(GENERATION_TASKS))
    parser.add_argument("--repeats", type=int, default=4, help="Timed runs per engine (interleaved).")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--new_tokens", type=int, default=32, help="Tokens generated per sequence (EOS off).")
    parser.add_argument("--train_steps", type=int, default=30, help="Timed optimizer steps (a quarter for base).")
    parser.add_argument("--no_compiled", action="store_true", help="Leave out the compiled generation engines.")
    parser.add_argument("--no_training", action="store_true", help="Benchmark generation only.")
    parser.add_argument("--batching", action="store_true",
                        help="Instead: real target tokens/s of sentence batches against --max_tokens_per_batch.")
    parser.add_argument("--max_tokens_per_batch", type=int, nargs="+", default=[2048, 4096],
                        help="Token-batch sizes for --batching.")
    parser.add_argument("--positions", action="store_true",
                        help="Instead: generate() and training throughput of every position type (first preset).")
    parser.add_argument("--json", help="Also write the results here.")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error(f"--repeats must be >= 1, got {args.repeats}")
    results, report = run_benchmark(
        args.data, args.presets, args.tasks, args.repeats, args.threads, args.new_tokens, args.train_steps,
        compiled=not args.no_compiled, training=not args.no_training, batching=args.batching,
        max_tokens_per_batch=args.max_tokens_per_batch, positions=args.positions)
    print(report)
    save_results(results, args.json)


if __name__ == "__main__":
    main()
