"""The position types against each other at one size: generate() and training throughput."""

import json
import tempfile
import time
from pathlib import Path

import torch

from transformer_mt.configuration import TransformerMTConfig
from transformer_mt.modeling import TransformerMTForConditionalGeneration

from .harness import (
    StepTimer,
    batch_target_tokens_per_second,
    interleaved_order,
    markdown_table,
    prepare_data,
    ratio_rows,
    run_worker,
    sample_stats,
    source_batch,
)
from .marian import OURS, _trainer, config_fields


def position_models(workdir: Path, preset: str, position_types, seed: int = 0) -> None:
    """TransformerMT of the preset's size for every position type, the same seeded weights elsewhere."""

    for position_type in position_types:
        torch.manual_seed(seed)
        config = TransformerMTConfig(
            **config_fields(preset), normalize_before=True, position_embedding_type=position_type
        )
        TransformerMTForConditionalGeneration(config).save_pretrained(workdir / preset / f"positions-{position_type}")


def positions_generation_worker(spec: dict) -> dict:
    """generate() tokens/s of every position type's model on one batch, interleaved in one process."""
    from transformers import AutoModelForSeq2SeqLM

    data = json.loads(Path(spec["data"]).read_text())
    batch = source_batch(data["sources"], spec["batch_size"], data["pad_token_id"])
    models = {
        name: AutoModelForSeq2SeqLM.from_pretrained(
            Path(data["workdir"]) / spec["preset"] / f"positions-{name}"
        ).eval()
        for name in spec["position_types"]
    }
    settings = dict(max_new_tokens=spec["new_tokens"], min_new_tokens=spec["new_tokens"], num_beams=1, do_sample=False)
    seconds = {name: [] for name in models}
    with torch.inference_mode():
        for model in models.values():
            model.generate(**batch, **settings)  # warm-up
        for name in interleaved_order(list(models), spec["repeats"]):
            start = time.perf_counter()
            models[name].generate(**batch, **settings)
            seconds[name].append(time.perf_counter() - start)
    tokens = spec["batch_size"] * spec["new_tokens"]
    return {name: sample_stats([tokens / s for s in samples]) for name, samples in seconds.items()}


def positions_training_worker(spec: dict) -> dict:
    """Training target tokens/s of one position type's model (the main job's recipe, the same batches)."""
    from transformers import AutoModelForSeq2SeqLM

    data = json.loads(Path(spec["data"]).read_text())
    model = AutoModelForSeq2SeqLM.from_pretrained(
        Path(data["workdir"]) / spec["preset"] / f"positions-{spec['position_type']}"
    ).train()
    timer = StepTimer(spec["warmup"])
    with tempfile.TemporaryDirectory() as output_dir:
        _trainer(OURS, model, data, output_dir, spec["warmup"] + spec["steps"], [timer]).train()
    return {"tokens_per_second": batch_target_tokens_per_second(timer, data["pairs"])}


def compare_positions(
    data_dir: str,
    position_types=("sinusoidal", "learned", "alibi", "rotary"),
    preset: str = "main-job",
    repeats: int = 4,
    threads: int = 2,
    new_tokens: int = 32,
    batch_size: int = 32,
    train_steps: int = 30,
    warmup: int = 3,
) -> dict:
    """generate() (greedy) and training throughput of every position type at one size, as ratios to the first;
    each training run times `train_steps` steps after `warmup` untimed ones."""
    with tempfile.TemporaryDirectory(prefix="transformer-mt-benchmark-") as workdir:
        data = prepare_data(Path(workdir), data_dir, num_train=2000, num_sources=batch_size)
        position_models(Path(workdir), preset, position_types)
        generation = run_worker(
            positions_generation_worker,
            {
                "data": str(data),
                "preset": preset,
                "position_types": list(position_types),
                "repeats": repeats,
                "new_tokens": new_tokens,
                "batch_size": batch_size,
            },
            threads,
        )
        samples = {name: [] for name in position_types}
        for name in interleaved_order(list(position_types), repeats):
            samples[name].append(
                run_worker(
                    positions_training_worker,
                    {
                        "data": str(data),
                        "preset": preset,
                        "position_type": name,
                        "warmup": warmup,
                        "steps": train_steps,
                    },
                    threads,
                )["tokens_per_second"]
            )
    return {
        "threads": threads,
        "preset": preset,
        "generation": generation,
        "training": {name: sample_stats(values) for name, values in samples.items()},
    }


def positions_report(results: dict) -> str:
    baseline = next(iter(results["generation"]))
    tables = {"generate() greedy": results["generation"], "training step": results["training"]}
    rows = [row for task, engines in tables.items() for row in ratio_rows({task: engines}, baseline, "tokens/s")]
    return (
        f"**position types, {results['preset']} preset** ({results['threads']} threads; ratios to "
        f"{baseline})\n\n{markdown_table(rows)}"
    )
