"""The main job: train a small English-German TransformerMT on the shipped corpus, evaluate, translate, plot.

`MAIN_JOB` (`transformer_mt.presets`, "main-job") is the recipe, as defaults for `training.parse_args`
(`main_job_arguments` reads the command line over them); `run_main_job` runs it and writes the plots (loss curves,
the position table, the cross-attention of an example) and a `summary.json` next to the model; `main_job_report` is
what the command prints. scripts/main_job.py is the command. `recipe_arguments` turns any recipe, a dict of fields
such as a preset's, into training's four argument groups without a command line (the studies train by it).
"""

import dataclasses
import json
import os
import time
from pathlib import Path

from transformers import Seq2SeqTrainingArguments

from .machine import matmul_gflops
from .plots import plot_cross_attention, plot_losses, plot_position_table
from .presets import MAIN_JOB, MAIN_JOB_GPU
from .training import DataArguments, ModelArguments, SetupArguments, argument_parser, bf16_by_default, run
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


# The corpus ships with the repository, not with the installed package: found beside the package folder in a
# checkout (and an editable install), otherwise named with --data.
CHECKOUT_DATA = Path(__file__).resolve().parents[1] / "data" / "en-de"
ARGUMENT_GROUPS = (DataArguments, SetupArguments, ModelArguments, Seq2SeqTrainingArguments)  # training.run's order
# The command line's defaults that differ from the dataclasses' (training.argument_parser): use_cpu without an
# accelerator, bf16 on a GPU that has it.
PARSER_DEFAULTS = ("use_cpu", "bf16")


def recipe_arguments(recipe: dict) -> tuple:
    """training.run's four argument groups (DataArguments, SetupArguments, ModelArguments, Seq2SeqTrainingArguments)
    built from `recipe`, each field given to the group that declares it; the others take the command line's
    defaults. A field no group declares is an error."""
    names = [{field.name for field in dataclasses.fields(group) if field.init} for group in ARGUMENT_GROUPS]
    unknown = sorted(set(recipe).difference(*names))
    if unknown:
        raise ValueError(f"not a training argument: {', '.join(unknown)}")
    parser = argument_parser()
    fields = {**{name: parser.get_default(name) for name in PARSER_DEFAULTS}, **recipe}
    return tuple(
        group(**{key: value for key, value in fields.items() if key in declared})
        for group, declared in zip(ARGUMENT_GROUPS, names)
    )


def main_job_arguments(argv=None, description: str | None = None) -> tuple:
    """The main job's four argument groups: the recipe for this machine (`main_job_recipe`), the shipped corpus of a
    checkout and an output directory named after the position type as defaults, every training flag in `argv` over
    them. Exits with a usage error (status 2) when there is no corpus to default to and no --data."""
    parser = argument_parser()
    parser.description = description
    parser.set_defaults(**main_job_recipe(), data=str(CHECKOUT_DATA) if CHECKOUT_DATA.is_dir() else None)
    known, _ = parser.parse_known_args(argv)
    if known.data is None:
        parser.error(
            f"no corpus at {CHECKOUT_DATA} (this is an installed copy, not a checkout of the repository); "
            "pass --data DIR, a folder of train/validation/test .tsv files such as the repository's "
            "data/en-de"
        )
    if known.output_dir is None:
        parser.set_defaults(output_dir=os.path.join("runs", f"main-{known.position_embedding_type}"))
    return parser.parse_args_into_dataclasses(args=argv)


def _step_of(checkpoint: str | None) -> int | None:
    return int(checkpoint.rsplit("-", 1)[1]) if checkpoint else None


def run_main_job(data_args, setup_args, model_args, training_args) -> dict:
    """Train and evaluate with the given (recipe) arguments, translate `EXAMPLES`, plot; return the summary."""
    start = time.monotonic()
    trainer = run(data_args, setup_args, model_args, training_args)
    minutes = (time.monotonic() - start) / 60
    model, tokenizer, output_dir = trainer.model, trainer.processing_class, training_args.output_dir
    position_type = model.config.position_embedding_type

    plot_losses(
        trainer.state.log_history,
        os.path.join(output_dir, "loss.png"),
        title=f"TransformerMT en-de, {position_type} positions",
        label_smoothing=training_args.label_smoothing_factor,
    )
    positions = model.get_encoder().embeddings.embed_positions
    if positions.absolute:  # relative positions (ALiBi, rotary) have no table to draw
        plot_position_table(
            positions, os.path.join(output_dir, "positions.png"), num_positions=data_args.max_source_length
        )
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


def main_job_report(summary: dict, output_dir: str) -> str:
    """What the main job prints at the end: the example translations, the test scores with the steps, speed and
    machine they came from, the checkpoint averaging's outcome, and the position type to try next."""
    lines = ["", "Example translations (beam 4):"]
    lines += [f"  {source}\n    -> {target}" for source, target in summary["examples"].items()]
    best = summary["best_checkpoint_step"]
    lines += [
        "",
        f"Test BLEU {summary['test_bleu']}, chrF {summary['test_chrf']} (beam 4) after "
        f"{summary['train_steps']} steps"
        + (f", the best by validation BLEU at step {best}" if best else "")
        + f"; {summary['train_target_tokens_per_second']} real target tokens/s in training, "
        f"{summary['wall_minutes']} minutes in all on a machine of {summary['matmul_gflops']} GFLOP/s "
        f"(fp32 2048x2048 matmul, 2 threads). Model, tokenizer and plots in {output_dir}/",
    ]
    averaging = summary["averaging"]
    if averaging and "averaged" in averaging:
        lines.append(
            f"Averaged {', '.join(averaging['checkpoints'])}: validation {averaging['metric']} "
            f"{averaging['averaged']:.2f} against {averaging['unaveraged']:.2f}; the {averaging['kept']} "
            "model was kept."
        )
    lines.append(
        "Rotary positions scored best in the position study (docs/results.md): --position_embedding_type "
        "rotary --output_dir runs/main-rotary"
    )
    return "\n".join(lines)


def results_table(summaries: list[dict]) -> str:
    """docs/results.md's main-job table: one row per seed (from summary.json files), then the mean ± sd."""
    import statistics

    joined = all("test_2_joined" in summary for summary in summaries)  # scored on 2 joined test pairs too
    rows = [
        "| seed | test BLEU | test chrF | "
        + ("2 joined pairs: BLEU (of single) | " if joined else "")
        + "steps (best) | real target tokens/s | wall time | machine GFLOP/s |",
        "| ---: | ---: | ---: | " + ("---: | " if joined else "") + "---: | ---: | ---: | ---: |",
    ]
    for summary in sorted(summaries, key=lambda summary: summary["seed"]):
        cell = (
            f"{summary['test_2_joined']['bleu']:.1f} ({summary['test_2_joined_share_of_single']:.0%}) | "
            if joined
            else ""
        )
        rows.append(
            f"| {summary['seed']} | {summary['test_bleu']:.1f} | {summary['test_chrf']:.1f} | {cell}"
            f"{summary['train_steps']:,} ({summary['best_checkpoint_step']:,}) | "
            f"{summary['train_target_tokens_per_second']:,.0f} | {summary['wall_minutes']} min | "
            f"{summary['matmul_gflops']:.0f} |"
        )
    if len(summaries) > 1:
        bleu = [summary["test_bleu"] for summary in summaries]
        chrf = [summary["test_chrf"] for summary in summaries]
        cell = ""
        if joined:
            values = [summary["test_2_joined"]["bleu"] for summary in summaries]
            cell = f"{statistics.mean(values):.1f} ± {statistics.stdev(values):.1f} | "
        rows.append(
            f"| mean ± sd | {statistics.mean(bleu):.1f} ± {statistics.stdev(bleu):.1f} | "
            f"{statistics.mean(chrf):.1f} ± {statistics.stdev(chrf):.1f} | {cell}| | | |"
        )
    return "\n".join(rows)
