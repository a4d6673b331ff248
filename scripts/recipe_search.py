"""The recipe search: candidates x seeds at a fixed step budget, scored on a fixed validation subset.

    python scripts/recipe_search.py                                 # every candidate, seeds 0-2, 2,000 steps
    python scripts/recipe_search.py --candidates baseline --seeds 3 4 --position_types sinusoidal learned
    python scripts/recipe_search.py --quick                         # a tiny model and a few steps: checks the pipeline

Writes one JSON per run into --results_dir (docs/results.md tabulates docs/results/recipe_search/) and prints the
candidate x seed table. Runs already in --results_dir are skipped; a run killed mid-way resumes from its newest
checkpoint in --output_dir. See `transformer_mt.experiments.recipe_search`.
"""

import argparse

from transformer_mt.commands.cli import command
from transformer_mt.experiments.recipe_search import CANDIDATES, joined_table, markdown_table, plot_search, run_search
from transformer_mt.experiments.studies import add_study_arguments


@command
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_study_arguments(parser, output_dir="runs/recipe-search")
    parser.add_argument("--results_dir", default="docs/results/recipe_search")
    parser.add_argument("--candidates", nargs="+", choices=sorted(CANDIDATES), default=list(CANDIDATES))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--position_types", nargs="+", choices=["sinusoidal", "learned"], default=["sinusoidal"])
    parser.add_argument("--steps", type=int, default=2000, help="Optimizer steps of every run.")
    parser.add_argument("--quick", action="store_true", help="A tiny model on 400 pairs; checks the pipeline.")
    parser.add_argument("--figure", help="Also draw source gain and cross-attention entropy of every run here.")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error(f"--steps must be >= 1, got {args.steps}")
    results = run_search(
        args.data,
        args.output_dir,
        args.results_dir,
        {name: CANDIDATES[name] for name in args.candidates},
        tuple(args.seeds),
        tuple(args.position_types),
        args.steps,
        quick=args.quick,
        source_lang=args.source_lang,
        target_lang=args.target_lang,
    )
    print(markdown_table(results))
    if joined := joined_table(results):
        print("\nOn joined validation pairs (BLEU mean ± sd, length ratio):\n" + joined)
    if args.figure:
        plot_search(results, args.figure)
        print(f"\nFigure: {args.figure}")


if __name__ == "__main__":
    main()
