"""The main job: train a small English-German TransformerMT on the shipped corpus, evaluate, translate, plot.

`MAIN_JOB` (`transformer_mt.presets`, "main-job") is the recipe, as defaults for `training.parse_args`; `run_main_job`
runs it and writes the plots (loss curves, the position table, the cross-attention of an example) and a
`summary.json` next to the model.
scripts/main_job.py is the command.
"""

import json
import os
import time

from .machine import matmul_gflops
from .plots import plot_cross_attention, plot_losses, plot_position_table
from .presets import MAIN_JOB, MAIN_JOB_GPU
from .training import bf16_by_default, run
from .translation import translate


EXAMPLES = [
    "Click the Save button.",
    "Choose Format - Cells and click the Numbers tab.",
    "Deletes the selected rows.",
    "You can print the document on both sides of the paper.",
    "Select the cells that you want to sort.",
]


def main_job_recipe(cuda: bool | None = None) -> dict:
    """MAIN_JOB_GPU where a CUDA GPU with bf16 is present, else MAIN_JOB (CPU: nothing changes)."""
    if cuda is None:
        cuda = bf16_by_default()
    return MAIN_JOB_GPU if cuda else MAIN_JOB


def _step_of(checkpoint: str | None) -> int | None:
    return int(checkpoint.rsplit("-", 1)[1]) if checkpoint else None


def run_main_job(data_args, setup_args, model_args, training_args) -> dict:
    """Train and evaluate with the given (recipe) arguments, translate `EXAMPLES`, plot; return the summary."""
    start = time.monotonic()
    trainer = run(data_args, setup_args, model_args, training_args)
    minutes = (time.monotonic() - start) / 60
    model, tokenizer, output_dir = trainer.model, trainer.processing_class, training_args.output_dir
    position_type = model.config.position_embedding_type

    plot_losses(trainer.state.log_history, os.path.join(output_dir, "loss.png"),
                title=f"TransformerMT en-de, {position_type} positions",
                label_smoothing=training_args.label_smoothing_factor)
    positions = model.get_encoder().embeddings.embed_positions
    if positions.absolute:  # relative positions (ALiBi, rotary) have no table to draw
        plot_position_table(positions, os.path.join(output_dir, "positions.png"),
                            num_positions=data_args.max_source_length)
    plot_cross_attention(model, tokenizer, EXAMPLES[1], os.path.join(output_dir, "attention.png"))
    results = {}
    for name in ("train", "eval", "test"):
        path = os.path.join(output_dir, f"{name}_results.json")
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                results.update(json.load(f))
    info_path = os.path.join(output_dir, "training_info.json")
    info = {}
    if os.path.isfile(info_path):
        with open(info_path, encoding="utf-8") as f:
            info = json.load(f)
    summary = {
        "position_embedding_type": position_type,
        "test_bleu": round(results["test_bleu"], 2),
        "test_chrf": round(results["test_chrf"], 2),
        "validation_bleu": round(results["eval_bleu"], 2) if "eval_bleu" in results else None,
        "train_steps": trainer.state.global_step,
        "best_checkpoint_step": _step_of(trainer.state.best_model_checkpoint),
        "train_target_tokens_per_second": results.get("train_target_tokens_per_second"),
        "wall_minutes": round(minutes, 1),
        "matmul_gflops": round(matmul_gflops(), 1),
        "seed": training_args.seed,
        "training_pairs": info.get("training_pairs"),
        "averaging": info.get("averaging"),
        "ema_decay": info.get("recipe", {}).get("ema_decay"),
        "examples": dict(zip(EXAMPLES, translate(model, tokenizer, EXAMPLES))),
    }
    with open(os.path.join(output_dir, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2, ensure_ascii=False)
    return summary


def results_table(summaries: list[dict]) -> str:
    """docs/results.md's main-job table: one row per seed (from summary.json files), then the mean ± sd."""
    import statistics

    joined = all("test_2_joined" in summary for summary in summaries)  # scored on 2 joined test pairs too
    rows = ["| seed | test BLEU | test chrF | " + ("2 joined pairs: BLEU (of single) | " if joined else "")
            + "steps (best) | real target tokens/s | wall time | machine GFLOP/s |",
            "| ---: | ---: | ---: | " + ("---: | " if joined else "") + "---: | ---: | ---: | ---: |"]
    for summary in sorted(summaries, key=lambda summary: summary["seed"]):
        cell = (f"{summary['test_2_joined']['bleu']:.1f} ({summary['test_2_joined_share_of_single']:.0%}) | "
                if joined else "")
        rows.append(f"| {summary['seed']} | {summary['test_bleu']:.1f} | {summary['test_chrf']:.1f} | {cell}"
                    f"{summary['train_steps']:,} ({summary['best_checkpoint_step']:,}) | "
                    f"{summary['train_target_tokens_per_second']:,.0f} | {summary['wall_minutes']} min | "
                    f"{summary['matmul_gflops']:.0f} |")
    if len(summaries) > 1:
        bleu = [summary["test_bleu"] for summary in summaries]
        chrf = [summary["test_chrf"] for summary in summaries]
        cell = ""
        if joined:
            values = [summary["test_2_joined"]["bleu"] for summary in summaries]
            cell = f"{statistics.mean(values):.1f} ± {statistics.stdev(values):.1f} | "
        rows.append(f"| mean ± sd | {statistics.mean(bleu):.1f} ± {statistics.stdev(bleu):.1f} | "
                    f"{statistics.mean(chrf):.1f} ± {statistics.stdev(chrf):.1f} | {cell}| | | |")
    return "\n".join(rows)
