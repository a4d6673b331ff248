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

from transformer_mt.commands.cli import command
from transformer_mt.recipes import main_job_arguments, main_job_report, run_main_job


@command
def main(argv=None):
    args = main_job_arguments(argv, description=__doc__)
    summary = run_main_job(*args)
    print(main_job_report(summary, args[-1].output_dir))


if __name__ == "__main__":
    main()
