"""The study runner: what the position study and the recipe search share.

A study trains many runs of one recipe (`RECIPE`, the main job's without its time budget) for a fixed number of
optimizer steps, with one tokenizer trained once (`shared_tokenizer`) and one data order, logging the alignment probe
(`diagnostics.AlignmentProbe`) as they go. `run_all` goes over the runs in the order it is given, skips every run
whose JSON is already in the results directory, trains the others (`train_run` resumes a run killed mid-way from its
newest complete checkpoint), and writes one JSON per run as soon as it is scored: the study's fields and scores, the
training minutes and the machine they were taken on (`machine.matmul_gflops`, the processor), and the probe.
"""

import json
import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from transformer_mt.checkpoints import has_complete_checkpoint, run_checkpoints
from transformer_mt.data import load_parallel_data
from transformer_mt.diagnostics import read_probe
from transformer_mt.machine import git_commit, matmul_gflops, processor
from transformer_mt.presets import MAIN_JOB, TINY
from transformer_mt.recipes import recipe_arguments
from transformer_mt.tokenization import train_tokenizer
from transformer_mt.training import run


# The main job's recipe, trained for a fixed number of steps instead of a time budget, evaluated separately, on
# single pairs without span tokens (a study's variant or candidate adds joined pairs and span tokens by name).
RECIPE = {
    key: value
    for key, value in MAIN_JOB.items()
    if key
    not in (
        "max_train_minutes",
        "eval_strategy",
        "eval_steps",
        "save_strategy",
        "save_steps",
        "save_total_limit",
        "do_eval",
        "do_predict",
        "predict_with_generate",
        "report_to",
        "tokenizer_vocab_size",
        "max_eval_samples",
        "generation_num_beams",
        "num_beams",
        "early_stopping_patience",
        "average_last",
        "max_tokens_per_batch",
        "joined_pairs_share",
        "span_token_share",
    )
}
RECIPE.update(do_train=True, save_strategy="no", report_to="none", data_seed=0, disable_tqdm=True)
PROBE_STEPS = 100  # the alignment probe every this many steps
# --quick: presets.TINY's model on 400 training pairs (with a 400-token tokenizer of its own), scored on 48 pairs, to
# check the pipeline.
QUICK = {**{key: value for key, value in TINY.items() if key != "tokenizer_vocab_size"}, "max_train_samples": 400}
QUICK_PAIRS = 48


@dataclass(frozen=True)
class StudyRun:
    """One run of a study: its name (of its result JSON and its model directory), its seed, its overrides of RECIPE,
    and the fields its result begins with."""

    name: str
    seed: int
    overrides: dict
    fields: dict


def shared_tokenizer(
    data_dir: str,
    output_dir: Path,
    vocab_size: int,
    max_train_samples: int | None = None,
    source_lang: str = "en",
    target_lang: str = "de",
) -> Path:
    """One joint tokenizer trained once on the training split and reused by every run of a study."""
    path = output_dir / "tokenizer"
    if not (path / "tokenizer.json").is_file():
        train = load_parallel_data(data_dir, source_lang, target_lang)["train"]
        if max_train_samples:
            train = train.select(range(min(max_train_samples, len(train))))
        train_tokenizer(list(train[source_lang]) + list(train[target_lang]), vocab_size=vocab_size).save_pretrained(
            path
        )
    return path


def study_tokenizer(
    data_dir: str, output_dir: Path, quick: bool = False, source_lang: str = "en", target_lang: str = "de"
) -> Path:
    """The study's shared tokenizer: of the main job's vocabulary size, or with `quick` of presets.TINY's on QUICK's
    training pairs."""
    if quick:
        return shared_tokenizer(
            data_dir, output_dir, TINY["tokenizer_vocab_size"], QUICK["max_train_samples"], source_lang, target_lang
        )
    return shared_tokenizer(data_dir, output_dir, MAIN_JOB["tokenizer_vocab_size"], None, source_lang, target_lang)


def train_run(
    data_dir: str,
    tokenizer_dir: Path,
    output_dir: Path,
    overrides: dict,
    seed: int,
    steps: int,
    save_steps: int = 500,
    probe_steps: int | None = PROBE_STEPS,
    source_lang: str = "en",
    target_lang: str = "de",
) -> dict:
    """Train one run of a study (RECIPE with `overrides`) for `steps` optimizer steps, resuming its newest complete
    checkpoint if a run was cut short; return {minutes, steps} of this invocation's training. `training.run` gets its
    four argument groups built from the fields (`recipes.recipe_arguments`), no command line."""
    resume = has_complete_checkpoint(output_dir)
    arguments = recipe_arguments(
        {
            **RECIPE,
            **overrides,
            "data": data_dir,
            "source_lang": source_lang,
            "target_lang": target_lang,
            "output_dir": str(output_dir),
            "max_steps": steps,
            "seed": seed,
            "tokenizer_name_or_path": None if resume else str(tokenizer_dir),
            "overwrite_output_dir": not resume,
            "resume_from_checkpoint": "last" if resume else None,
            "save_strategy": "steps",
            "save_steps": save_steps,
            "save_total_limit": 1,
            "probe_steps": probe_steps,
            "do_eval": False,
        }
    )
    start = time.monotonic()
    trainer = run(*arguments)
    return {"minutes": (time.monotonic() - start) / 60, "steps": trainer.state.global_step}


def run_all(
    runs: Iterable[StudyRun],
    data_dir: str,
    output_dir: Path,
    results_dir: Path,
    tokenizer_dir: Path,
    steps: int,
    score: Callable[[StudyRun, Path], dict],
    keep_probe: Callable[[list[dict]], dict],
    *,
    quick: bool = False,
    keep_models: bool = False,
    source_lang: str = "en",
    target_lang: str = "de",
) -> None:
    """Train and score every run whose `results_dir/<name>.json` does not exist yet, in the order given (seed-major
    in both studies: one cut short holds every configuration of the seeds it reached).

    A run trains in `output_dir/runs/<name>`; its JSON holds its fields, seed and steps, `score(run, model_dir)`,
    its training minutes with the machine's figures and the commit, and `keep_probe(probe rows)`. Its checkpoints
    are removed only once the JSON is written (a run killed while it is scored resumes), its model too unless
    `keep_models`.
    """
    results_dir.mkdir(parents=True, exist_ok=True)
    gflops = None
    for study_run in runs:
        result_file = results_dir / f"{study_run.name}.json"
        if result_file.is_file():
            continue
        gflops = gflops or round(matmul_gflops(), 1)
        model_dir = output_dir / "runs" / study_run.name
        timing = train_run(
            data_dir,
            tokenizer_dir,
            model_dir,
            study_run.overrides,
            study_run.seed,
            steps,
            probe_steps=max(1, steps // 20) if quick else PROBE_STEPS,
            source_lang=source_lang,
            target_lang=target_lang,
        )
        result = {
            **study_run.fields,
            "seed": study_run.seed,
            "steps": timing["steps"],
            **score(study_run, model_dir),
            "train_minutes": round(timing["minutes"], 2),
            "matmul_gflops": gflops,
            "machine": processor(),
            "commit": git_commit(),
            **keep_probe(read_probe(str(model_dir))),
        }
        result_file.write_text(json.dumps(result, indent=1), encoding="utf-8")
        if keep_models:
            for checkpoint in run_checkpoints(model_dir):
                shutil.rmtree(checkpoint)
        else:
            shutil.rmtree(model_dir)


def add_study_arguments(parser, output_dir: str) -> None:
    """The options every study command starts with: the data, its language columns and the output directory."""
    parser.add_argument("--data", default="data/en-de")
    parser.add_argument("--output_dir", default=output_dir)
    parser.add_argument("--source_lang", default="en", help="The data's source language column.")
    parser.add_argument("--target_lang", default="de", help="The data's target language column.")


def read_results(results_dir: Path) -> list[dict]:
    """Every run's result in `results_dir`, in the order of their file names."""
    return [json.loads(path.read_text(encoding="utf-8")) for path in sorted(results_dir.glob("*.json"))]


__all__ = [
    "PROBE_STEPS",
    "QUICK",
    "QUICK_PAIRS",
    "RECIPE",
    "StudyRun",
    "add_study_arguments",
    "read_results",
    "run_all",
    "shared_tokenizer",
    "study_tokenizer",
    "train_run",
]
