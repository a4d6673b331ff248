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
from transformer_mt.configuration import POSITION_EMBEDDING_TYPES
from transformer_mt.experiments import position_study
from transformer_mt.experiments.studies import add_study_arguments


@command
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_study_arguments(parser, output_dir="runs/position-study")
    parser.add_argument("--results_dir", help="One JSON per scored run. Default: OUTPUT_DIR/results.")
    parser.add_argument("--seeds", type=int, nargs="+", help="Default 0 1 2 (--quick: 0).")
    parser.add_argument("--steps", type=int, help="Optimizer steps of every model. Default 2000 (--quick: 20).")
    parser.add_argument("--position_types", nargs="+", choices=POSITION_EMBEDDING_TYPES,
                        default=list(POSITION_EMBEDDING_TYPES))
    parser.add_argument("--no_joined_variant", action="store_true",
                        help="Leave out the variant trained with a share of joined pairs (--quick leaves it out).")
    parser.add_argument("--count_sentences", action="store_true",
                        help="Instead: how many sentences the models in --output_dir write for 2, 4 and 8 joined "
                             "test pairs (the first 40 of each, greedy), against the references; to "
                             "OUTPUT_DIR/sentence_counts.json.")
    parser.add_argument("--of_joined_variant", action="store_true",
                        help="With --count_sentences: count the \"+ joined pairs\" variant's models, at 2, 4, 8 "
                             "and 16 joined pairs.")
    parser.add_argument("--quick", action="store_true",
                        help="A tiny model on 400 pairs, 20 steps, one seed, scored on 48 test pairs with "
                             "translations of at most 31 tokens: checks the pipeline in under a minute.")
    args = parser.parse_args(argv)
    steps = args.steps or (20 if args.quick else 2000)
    if steps < 1:
        parser.error(f"--steps must be >= 1, got {steps}")
    languages = dict(source_lang=args.source_lang, target_lang=args.target_lang)
    if args.count_sentences:
        print(position_study.markdown_sentence_counts(position_study.write_sentence_counts(
            args.output_dir, args.data, tuple(args.seeds or [0]), tuple(args.position_types), quick=args.quick,
            of_joined_variant=args.of_joined_variant, **languages)))
        return
    seeds = tuple(args.seeds or ([0] if args.quick else [0, 1, 2]))
    results = position_study.run_study(
        args.data, args.output_dir, seeds, steps, position_types=tuple(args.position_types), quick=args.quick,
        joined_variant=not (args.no_joined_variant or args.quick), results_dir=args.results_dir, **languages)
    print(position_study.study_report(results, args.output_dir))


if __name__ == "__main__":
    main()
