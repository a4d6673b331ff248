"""The main job: train a small English-German TransformerMT on the shipped corpus, evaluate, translate, plot.

    python scripts/main_job.py                                   # sinusoidal positions, ~15 minutes on 2 cores
    python scripts/main_job.py --position_embedding_type learned --output_dir runs/main-learned

Trains a tokenizer and a model from scratch on data/en-de (LibreOffice and GNOME help) within a wall-time budget,
reports BLEU and chrF with beam search on the held-out test split, saves model + tokenizer, translates a few
sentences, and writes `loss.png` and `positional_encoding.png` next to the model. Any other flag is passed on to
scripts/train.py (e.g. `--max_train_minutes 5`, `--d_model 128`, `--overwrite_output_dir true` to run again into
the same folder).
"""

import argparse
import json
import os
import sys
import time

from transformer_mt.scripts import train
from transformer_mt.scripts.plots import plot_losses, plot_sinusoid
from transformer_mt.scripts.translate import translate


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = [
    "Click the Save button.",
    "Choose Format - Cells and click the Numbers tab.",
    "Deletes the selected rows.",
    "You can print the document on both sides of the paper.",
    "Select the cells that you want to sort.",
]

# Chosen for 2 CPU cores and 15 minutes (see README, "Results"): a narrow pre-LN model, which trains stably at a
# high learning rate, warmup then inverse-sqrt decay, label smoothing 0.1, and a small joint vocabulary.
RECIPE = dict(
    tokenizer_vocab_size=4000,
    d_model=192,
    encoder_layers=2,
    decoder_layers=2,
    encoder_attention_heads=4,
    decoder_attention_heads=4,
    encoder_ffn_dim=768,
    decoder_ffn_dim=768,
    normalize_before=True,
    dropout=0.1,
    max_source_length=64,
    max_target_length=64,
    per_device_train_batch_size=48,
    per_device_eval_batch_size=64,
    learning_rate=2e-3,
    lr_scheduler_type="inverse_sqrt",
    warmup_steps=400,
    adam_beta2=0.98,
    weight_decay=0.0,
    label_smoothing_factor=0.1,
    max_grad_norm=1.0,
    train_sampling_strategy="group_by_length",
    max_steps=100_000,  # the time budget ends training first
    max_train_minutes=13.0,
    eval_strategy="steps",
    eval_steps=1000,
    logging_steps=50,
    save_strategy="steps",
    save_steps=1000,
    save_total_limit=1,
    predict_with_generate=True,
    generation_num_beams=4,
    report_to="tensorboard",
    seed=0,
)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--position_embedding_type", choices=["sinusoidal", "learned"], default="sinusoidal")
    parser.add_argument("--output_dir", default=None, help="Default: runs/main-<position type>.")
    parser.add_argument("--data", default=os.path.join(REPO, "data", "en-de"))
    args, passthrough = parser.parse_known_args(argv)
    output_dir = args.output_dir or os.path.join("runs", f"main-{args.position_embedding_type}")

    recipe = dict(RECIPE, position_embedding_type=args.position_embedding_type)
    train_argv = ["--data", args.data, "--output_dir", output_dir, "--do_train", "--do_eval", "--do_predict"]
    for key, value in recipe.items():
        train_argv += [f"--{key}", str(value)]
    start = time.monotonic()
    try:
        trainer = train.main(train_argv + passthrough)
    except (OSError, ValueError) as error:  # e.g. a second run into a folder that holds the first one's model
        sys.exit(f"error: {error}")
    minutes = (time.monotonic() - start) / 60

    model, tokenizer = trainer.model, trainer.processing_class
    print("\nExample translations (beam 4):")
    for source, target in zip(EXAMPLES, translate(model, tokenizer, EXAMPLES)):
        print(f"  {source}\n    -> {target}")

    plot_losses(trainer.state.log_history, os.path.join(output_dir, "loss.png"),
                title=f"TransformerMT en-de, {args.position_embedding_type} positions")
    plot_sinusoid(os.path.join(output_dir, "positional_encoding.png"))

    with open(os.path.join(output_dir, "test_results.json"), encoding="utf-8") as f:
        test = json.load(f)
    summary = {
        "position_embedding_type": args.position_embedding_type,
        "test_bleu": round(test["test_bleu"], 2),
        "test_chrf": round(test["test_chrf"], 2),
        "train_steps": trainer.state.global_step,
        "wall_minutes": round(minutes, 1),
    }
    with open(os.path.join(output_dir, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2)
    print(f"\nTest BLEU {summary['test_bleu']}, chrF {summary['test_chrf']} after {summary['train_steps']} steps, "
          f"{summary['wall_minutes']} minutes in all. Model, tokenizer and plots in {output_dir}/")


if __name__ == "__main__":
    main()
