"""The main job: train a small English-German TransformerMT on the shipped corpus, evaluate, translate, plot.

    python scripts/main_job.py                                   # sinusoidal positions, ~15 minutes on 2 cores
    python scripts/main_job.py --position_embedding_type learned --output_dir runs/main-learned

Trains a tokenizer and a model from scratch on data/en-de (LibreOffice and GNOME help) within a wall-time budget,
reports BLEU and chrF with beam search on the held-out test split, saves model + tokenizer, translates a few
sentences, and writes `loss.png` and `positions.png` next to the model. Every flag of scripts/train.py works and
overrides the recipe (`transformer_mt.presets.MAIN_JOB`; `MAIN_JOB_GPU` on a CUDA GPU), e.g.
`--max_train_minutes 5`, `--d_model 128`,
`--overwrite_output_dir true` to run again into the same folder.
"""

import os
from pathlib import Path

from transformer_mt import training
from transformer_mt.cli import command
from transformer_mt.recipes import main_job_recipe, run_main_job


# The corpus ships with the repository, not with the installed package: found next to scripts/ in a checkout (and
# an editable install), otherwise named with --data.
CHECKOUT_DATA = Path(__file__).resolve().parents[1] / "data" / "en-de"


def parse_args(argv=None):
    parser = training.argument_parser()
    parser.description = __doc__
    parser.set_defaults(**main_job_recipe(), data=str(CHECKOUT_DATA) if CHECKOUT_DATA.is_dir() else None)
    known, _ = parser.parse_known_args(argv)
    if known.data is None:
        parser.error(f"no corpus at {CHECKOUT_DATA} (this is an installed copy, not a checkout of the repository); "
                     "pass --data DIR, a folder of train/validation/test .tsv files such as the repository's "
                     "data/en-de")
    if known.output_dir is None:
        parser.set_defaults(output_dir=os.path.join("runs", f"main-{known.position_embedding_type}"))
    return parser.parse_args_into_dataclasses(args=argv)


@command
def main(argv=None):
    args = parse_args(argv)
    summary = run_main_job(*args)
    print("\nExample translations (beam 4):")
    for source, target in summary["examples"].items():
        print(f"  {source}\n    -> {target}")
    best = summary["best_checkpoint_step"]
    print(f"\nTest BLEU {summary['test_bleu']}, chrF {summary['test_chrf']} (beam 4) after {summary['train_steps']} "
          f"steps" + (f", the best by validation BLEU at step {best}" if best else "")
          + f"; {summary['train_target_tokens_per_second']} real target tokens/s in training, "
          f"{summary['wall_minutes']} minutes in all on a machine of {summary['matmul_gflops']} GFLOP/s "
          f"(fp32 2048x2048 matmul, 2 threads). Model, tokenizer and plots in {args[-1].output_dir}/")
    averaging = summary["averaging"]
    if averaging and "averaged" in averaging:
        print(f"Averaged {', '.join(averaging['checkpoints'])}: validation {averaging['metric']} "
              f"{averaging['averaged']:.2f} against {averaging['unaveraged']:.2f}; the {averaging['kept']} model "
              "was kept.")
    if summary["position_embedding_type"] != "rotary":
        print("Rotary positions scored best in the position study: --position_embedding_type rotary "
              "--output_dir runs/main-rotary")


if __name__ == "__main__":
    main()
