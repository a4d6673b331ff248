"""The benchmark harness: how every number of `transformer_mt.experiments.benchmarks` is taken, so that ratios mean
something on a small shared machine:

* Engines that disturb each other never share a process: each training run and each CTranslate2 run is a
  subprocess of its own (CTranslate2 slows torch's small ops ~3.5x in the same process). TransformerMT and
  MarianMTModel generate in one process (both are torch), in alternating timed blocks.
* Interleaved: every repeat runs the engines A, B, ..., B, A, so that drift in the machine's speed falls on all
  of them; each engine warms up first (and compiles, when it is a compiled one), untimed.
* Reported: the best (highest) and the median throughput over repeats, as tokens per second (target tokens for
  training, generated tokens for generation, which runs a fixed number of new tokens with EOS switched off), and
  the ratios to the baseline engine, computed from the best and from the median; the worst is kept in the JSON.
* Outputs are checked before anything is timed: the same generated ids from every generation engine, the same
  training loss from both trainers. A mismatch fails the run (here and in gpu_check): a speed-up that changes
  the output is not one.
"""

import json
import multiprocessing
import os
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import torch
from transformers import Seq2SeqTrainingArguments, TrainerCallback

from transformer_mt.data import load_parallel_data
from transformer_mt.presets import MAIN_JOB
from transformer_mt.tokenization import train_tokenizer


def interleaved_order(engines: list[str], repeats: int) -> list[str]:
    """A, B, ..., B, A for every pair of repeats (an odd count ends with one more A, B, ...)."""
    order = []
    for repeat in range(repeats):
        order += engines if repeat % 2 == 0 else engines[::-1]
    return order


def sample_stats(samples: list[float]) -> dict:
    """Throughputs over repeats: the best (highest), the median and the worst (lowest), with the samples."""
    return {"best": max(samples), "median": statistics.median(samples), "worst": min(samples), "samples": samples}


def run_worker(function: Callable[[dict], dict], spec: dict, threads: int) -> dict:
    """`function(spec)` in a fresh process (no torch state of this one) with `threads` threads; its result.

    Workers are forked from multiprocessing's fork server, a process of its own that has imported the benchmarks and
    nothing else: the same clean start as a spawned process without paying for torch's and transformers' imports
    (seconds of CPU) in every worker. An exception in the worker is raised here, with the worker's traceback as its
    cause.
    """
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__package__])  # read when the server starts: the first call's
    with ProcessPoolExecutor(
        max_workers=1, mp_context=context, initializer=_start_worker, initargs=(threads,)
    ) as pool:
        return pool.submit(function, spec).result(timeout=3600)


def _start_worker(threads: int) -> None:
    """A worker's threads. Set here, not inherited: the fork server's environment is that of the call that started
    it (libraries imported later, CTranslate2's, read OMP_NUM_THREADS when they load)."""
    os.environ.update(OMP_NUM_THREADS=str(threads), TOKENIZERS_PARALLELISM="false")
    torch.set_num_threads(threads)


def ratio_rows(results: dict, baseline: str, unit: str) -> list[dict]:
    """One row per (task, engine): best/median throughput and the ratios to the baseline engine of the same task."""
    rows = []
    for task, engines in results.items():
        base = engines[baseline]
        for engine, measured in engines.items():
            if "best" not in measured:
                continue
            rows.append(
                {
                    "task": task,
                    "engine": engine,
                    unit + " (best)": measured["best"],
                    unit + " (median)": measured["median"],
                    "x baseline (best)": measured["best"] / base["best"],
                    "x baseline (median)": measured["median"] / base["median"],
                    **{
                        key: value
                        for key, value in measured.items()
                        if key not in ("best", "median", "worst", "samples")
                    },
                }
            )
    return rows


def save_results(results: dict, path: str | None) -> None:
    """Write a benchmark's results as JSON to `path` (a command's --json), when one is given."""
    if path:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)


def markdown_table(rows: list[dict]) -> str:
    columns = list(dict.fromkeys(key for row in rows for key in row))

    def cell(value):
        if isinstance(value, float):
            return f"{value:.2f}" if value < 100 else f"{value:,.0f}"
        return str(value)

    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join(" --- " for _ in columns) + "|"]
    lines += ["| " + " | ".join(cell(row.get(column, "")) for column in columns) + " |" for row in rows]
    return "\n".join(lines)


def prepare_data(
    workdir: Path, data_dir: str, num_train: int, num_sources: int, source_lang: str = "en", target_lang: str = "de"
) -> Path:
    """Tokenize shipped pairs once (a tokenizer of the main job's size) into `workdir/data.json`, for the workers:
    training pairs, test sources, and where the tokenizer and the models are kept."""

    splits = load_parallel_data(data_dir, source_lang, target_lang)
    train = splits["train"].select(range(min(num_train, len(splits["train"]))))
    sources, targets = list(train[source_lang]), list(train[target_lang])
    tokenizer = train_tokenizer(sources + targets, vocab_size=MAIN_JOB["tokenizer_vocab_size"])
    limit = MAIN_JOB["max_source_length"]
    pairs = [
        {"input_ids": source, "labels": target}
        for source, target in zip(
            tokenizer(sources, max_length=limit, truncation=True)["input_ids"],
            tokenizer(text_target=targets, max_length=limit, truncation=True)["input_ids"],
        )
    ]
    sources = tokenizer(list(splits["test"][source_lang][:num_sources]))["input_ids"]
    tokenizer.save_pretrained(workdir / "tokenizer")
    path = workdir / "data.json"
    path.write_text(
        json.dumps(
            {
                "pairs": pairs,
                "sources": sources,
                "pad_token_id": tokenizer.pad_token_id,
                "tokenizer": str(workdir / "tokenizer"),
                "workdir": str(workdir),
            }
        )
    )
    return path


def source_batch(sources: list[list[int]], batch_size: int, pad_token_id: int) -> dict:
    rows = sources[:batch_size]
    width = max(map(len, rows))
    input_ids = torch.tensor([row + [pad_token_id] * (width - len(row)) for row in rows])
    lengths = torch.tensor([len(row) for row in rows])
    return {"input_ids": input_ids, "attention_mask": (torch.arange(width) < lengths[:, None]).long()}


def training_arguments(output_dir: str, steps: int, length_grouped: bool = False) -> Seq2SeqTrainingArguments:
    """The main job's optimizer, schedule and batch size for `steps` CPU steps that log and save nothing; batches in
    seeded random order, or grouped by length as the main job draws them."""
    keys = (
        "learning_rate",
        "lr_scheduler_type",
        "warmup_steps",
        "adam_beta2",
        "weight_decay",
        "label_smoothing_factor",
        "max_grad_norm",
        "per_device_train_batch_size",
        "seed",
    )
    recipe = {key: MAIN_JOB[key] for key in keys + (("train_sampling_strategy",) if length_grouped else ())}
    return Seq2SeqTrainingArguments(
        output_dir=output_dir,
        max_steps=steps,
        report_to="none",
        save_strategy="no",
        logging_strategy="no",
        disable_tqdm=True,
        use_cpu=True,
        **recipe,
    )


def batch_target_tokens_per_second(timer: "StepTimer", pairs: list[dict]) -> float:
    """Target tokens per second of timed step, for batches of the main job's size drawn from `pairs`: their mean
    target length times the batch size (engines that see the same batches compare as their step times)."""
    tokens_per_step = MAIN_JOB["per_device_train_batch_size"] * statistics.mean(len(pair["labels"]) for pair in pairs)
    return tokens_per_step * len(timer.seconds) / sum(timer.seconds)


class StepTimer(TrainerCallback):
    """Seconds and target tokens of every optimizer step after the first `warmup` ones."""

    def __init__(self, warmup: int):
        self.warmup, self.seconds, self.start = warmup, [], None

    def on_step_begin(self, args, state, control, **kwargs):
        self.start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step > self.warmup:
            self.seconds.append(time.perf_counter() - self.start)
