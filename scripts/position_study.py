"""The position study: every position type, several seeds, inputs up to 16 joined test pairs.

    python scripts/position_study.py --no_joined_variant    # 4 types x 3 seeds, 2,000 steps each: hours on 2 cores
    python scripts/position_study.py --seeds 3 4 --position_types sinusoidal learned --no_joined_variant
    python scripts/position_study.py --quick                # a tiny model, 20 steps, one seed: under a minute

Every scored run lands as one JSON in --results_dir (default: --output_dir/results) and is never trained again; a
run cut short resumes from its last checkpoint. Writes position_study.json and position_study.png of every run in
--results_dir into --output_dir and prints docs/results.md's "Position study" tables
(`transformer_mt.experiments.position_study`).
"""

import argparse

from transformer_mt.commands.cli import command
from transformer_mt.experiments import position_study


@command
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    position_study.add_arguments(parser)
    args = parser.parse_args(argv)
    steps = args.steps or (20 if args.quick else 2000)
    if steps < 1:
        parser.error(f"--steps must be >= 1, got {steps}")
    languages = dict(source_lang=args.source_lang, target_lang=args.target_lang)
    if args.count_sentences:
        print(
            position_study.markdown_sentence_counts(
                position_study.write_sentence_counts(
                    args.output_dir,
                    args.data,
                    tuple(args.seeds or [0]),
                    tuple(args.position_types),
                    quick=args.quick,
                    of_joined_variant=args.of_joined_variant,
                    **languages,
                )
            )
        )
        return
    seeds = tuple(args.seeds or ([0] if args.quick else [0, 1, 2]))
    results = position_study.run_study(
        args.data,
        args.output_dir,
        seeds,
        steps,
        position_types=tuple(args.position_types),
        quick=args.quick,
        joined_variant=not (args.no_joined_variant or args.quick),
        results_dir=args.results_dir,
        **languages,
    )
    print(position_study.study_report(results, args.output_dir))


if __name__ == "__main__":
    main()
