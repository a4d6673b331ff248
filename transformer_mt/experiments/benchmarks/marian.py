"""TransformerMT against MarianMTModel with the same weights (the package's own Marian converter): generate() and
Seq2SeqTrainer steps, side by side (see `harness` for how the numbers are taken)."""

import json
import resource
import tempfile
import time
from pathlib import Path

import torch
from transformers import MarianConfig, MarianMTModel, Seq2SeqTrainer

from transformer_mt.bridges.marian import convert_marian_model
from transformer_mt.generation import compile_config
from transformer_mt.presets import MAIN_JOB, TINY, TRANSFORMER_BASE

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
    training_arguments,
)


def model_size(preset: dict, vocab: int | None = None) -> dict:
    """A preset's model size (the encoder's, which every preset shares with its decoder) and vocabulary."""
    return dict(
        d_model=preset["d_model"],
        layers=preset["encoder_layers"],
        heads=preset["encoder_attention_heads"],
        ffn=preset["encoder_ffn_dim"],
        vocab=vocab or preset["tokenizer_vocab_size"],
    )


# The benchmarked model sizes, from the presets: the main job's, the paper's base model (with its 37k shared
# vocabulary) and presets.TINY's (with the main job's vocabulary: `prepare_data` trains a tokenizer of that size).
MODEL_SIZES = {
    "main-job": model_size(MAIN_JOB),
    "base": model_size(TRANSFORMER_BASE),
    "tiny": model_size(TINY, vocab=MAIN_JOB["tokenizer_vocab_size"]),
}
GENERATION_TASKS = {"greedy b1": (1, 1), "greedy b32": (32, 1), "beam-4 b32": (32, 4)}
MARIAN, OURS = "MarianMT", "TransformerMT"


def config_fields(preset: str) -> dict:
    """The config fields (MarianConfig's and TransformerMTConfig's alike) of a benchmarked model size."""
    size = MODEL_SIZES[preset]
    return dict(
        vocab_size=size["vocab"],
        d_model=size["d_model"],
        encoder_layers=size["layers"],
        decoder_layers=size["layers"],
        encoder_attention_heads=size["heads"],
        decoder_attention_heads=size["heads"],
        encoder_ffn_dim=size["ffn"],
        decoder_ffn_dim=size["ffn"],
    )


def model_pair(preset: str, seed: int = 0) -> tuple[MarianMTModel, torch.nn.Module]:
    """A MarianMTModel of the preset's size at random (seeded) weights, and the TransformerMT model converted from it
    with the package's own converter: the same function, to the last logit."""
    torch.manual_seed(seed)
    config = MarianConfig(
        **config_fields(preset),
        max_position_embeddings=512,
        dropout=0.1,
        pad_token_id=0,
        decoder_start_token_id=1,
        eos_token_id=2,
        forced_eos_token_id=None,
    )
    marian = MarianMTModel(config)
    return marian, convert_marian_model(marian)


def load_engine(workdir: str, preset: str, engine: str):
    """One model of a pair saved by `save_model_pairs` (loading only it keeps a worker's peak RSS its own)."""
    from transformers import AutoModelForSeq2SeqLM

    return AutoModelForSeq2SeqLM.from_pretrained(Path(workdir) / preset / engine)


def save_model_pairs(workdir: Path, presets) -> None:
    """Every preset's model pair under `workdir/<preset>/<engine>`, for the workers."""
    for preset in presets:
        for engine, model in zip((MARIAN, OURS), model_pair(preset)):
            model.save_pretrained(workdir / preset / engine)


def generation_worker(spec: dict) -> dict:
    """Every generation engine on one task, in one process, in interleaved timed blocks.

    Compiled engines use a static cache and transformers' compiled decoding step (generation.compile_config);
    transformers 5.24 compiles greedy search and sampling only, so beam search has no compiled engine.
    """
    data = json.loads(Path(spec["data"]).read_text())
    batch_size, num_beams = GENERATION_TASKS[spec["task"]]
    batch = source_batch(data["sources"], batch_size, data["pad_token_id"])
    marian, ours = (load_engine(data["workdir"], spec["preset"], engine).eval() for engine in (MARIAN, OURS))
    settings = dict(
        max_new_tokens=spec["new_tokens"],
        num_beams=num_beams,
        do_sample=False,
        eos_token_id=None,
        forced_eos_token_id=None,
    )
    compiled = dict(settings, cache_implementation="static", compile_config=compile_config())
    engines = {f"{MARIAN} (eager)": (marian, settings), f"{OURS} (eager)": (ours, settings)}
    if spec["compiled"] and num_beams == 1:
        engines.update({f"{MARIAN} (compiled)": (marian, compiled), f"{OURS} (compiled)": (ours, compiled)})
    with torch.inference_mode():
        outputs = {name: model.generate(**batch, **kwargs) for name, (model, kwargs) in engines.items()}  # warm-up
        reference = outputs[f"{MARIAN} (eager)"]
        for name, output in outputs.items():
            if not torch.equal(output, reference):
                raise AssertionError(f"{name} generated other tokens than {MARIAN} (eager) on {spec['task']}")
        seconds = {name: [] for name in engines}
        for name in interleaved_order(list(engines), spec["repeats"]):
            model, kwargs = engines[name]
            start = time.perf_counter()
            model.generate(**batch, **kwargs)
            seconds[name].append(time.perf_counter() - start)
    tokens = batch_size * spec["new_tokens"]
    return {name: sample_stats([tokens / s for s in samples]) for name, samples in seconds.items()}


def _trainer(engine: str, model, data: dict, output_dir: str, steps: int, callbacks=()):
    """The main job's Seq2SeqTrainer recipe for either engine: Marian's as its users run it (transformers'
    Seq2SeqTrainer), TransformerMT's as this package runs it (training.TransformerMTTrainer). Batches are drawn in
    the same seeded random order for both (the main job groups them by length, which would shuffle differently)."""
    from datasets import Dataset
    from transformers import AutoTokenizer, DataCollatorForSeq2Seq

    from transformer_mt.training import TransformerMTTrainer

    args = training_arguments(output_dir, steps)
    tokenizer = AutoTokenizer.from_pretrained(data["tokenizer"])
    collator = DataCollatorForSeq2Seq(tokenizer, model=model, label_pad_token_id=-100, pad_to_multiple_of=8)
    trainer_class = TransformerMTTrainer if engine == OURS else Seq2SeqTrainer
    return trainer_class(
        model=model,
        args=args,
        train_dataset=Dataset.from_list(data["pairs"]),
        data_collator=collator,
        callbacks=list(callbacks),
    )


def training_worker(spec: dict) -> dict:
    """One engine's training throughput and this process's peak RSS.

    Target tokens per second: the pairs' mean target length times the batch size, per second of optimizer step
    (both engines see the same batches, so the ratio is that of their step times).
    """
    data = json.loads(Path(spec["data"]).read_text())
    model = load_engine(data["workdir"], spec["preset"], spec["engine"])
    timer = StepTimer(spec["warmup"])
    with tempfile.TemporaryDirectory() as output_dir:
        _trainer(spec["engine"], model.train(), data, output_dir, spec["warmup"] + spec["steps"], [timer]).train()
    return {
        "tokens_per_second": batch_target_tokens_per_second(timer, data["pairs"]),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def training_check_worker(spec: dict) -> dict:
    """Both trainers' loss on the same first batch (eval mode, so no dropout): it must be the same number."""
    data = json.loads(Path(spec["data"]).read_text())
    losses = {}
    with tempfile.TemporaryDirectory() as output_dir:
        for engine in (MARIAN, OURS):
            model = load_engine(data["workdir"], spec["preset"], engine).eval()
            trainer = _trainer(engine, model, data, output_dir, 1)
            batch = next(iter(trainer.get_train_dataloader()))
            with torch.no_grad():
                losses[engine] = float(trainer.compute_loss(model, dict(batch)))
    return losses


def compare_with_marian(
    data_dir: str,
    presets=("main-job", "base"),
    tasks=tuple(GENERATION_TASKS),
    repeats: int = 4,
    threads: int = 2,
    new_tokens: int = 32,
    train_steps: int = 30,
    compiled: bool = True,
    training: bool = True,
    training_repeats: int | None = None,
    warmup: int = 3,
) -> dict:
    """Every task of every preset; {"generation": {preset: {task: {engine: summary}}}, "training": ...}.

    Training runs `training_repeats` times per engine (default: `repeats`), each after `warmup` untimed steps.
    """
    results = {"generation": {}, "training": {}, "threads": threads, "torch": torch.__version__}
    with tempfile.TemporaryDirectory(prefix="transformer-mt-benchmark-") as workdir:
        data = prepare_data(Path(workdir), data_dir, num_train=2000, num_sources=32)
        save_model_pairs(Path(workdir), presets)
        for preset in presets:
            results["generation"][preset] = {
                task: run_worker(
                    generation_worker,
                    {
                        "data": str(data),
                        "preset": preset,
                        "task": task,
                        "repeats": repeats,
                        "new_tokens": new_tokens,
                        "compiled": compiled,
                    },
                    threads,
                )
                for task in tasks
            }
            if not training:
                continue
            losses = run_worker(training_check_worker, {"data": str(data), "preset": preset}, threads)
            if abs(losses[MARIAN] - losses[OURS]) > 1e-4 * abs(losses[MARIAN]):
                raise AssertionError(f"the trainers' losses differ on the same batch: {losses}")
            steps = max(3, train_steps // (4 if preset == "base" else 1))
            samples = {MARIAN: [], OURS: []}
            for engine in interleaved_order([MARIAN, OURS], training_repeats or repeats):
                samples[engine].append(
                    run_worker(
                        training_worker,
                        {"data": str(data), "preset": preset, "engine": engine, "warmup": warmup, "steps": steps},
                        threads,
                    )
                )
            results["training"][preset] = {
                engine: {
                    **sample_stats([s["tokens_per_second"] for s in runs]),
                    "peak RSS MB (max)": max(s["peak_rss_mb"] for s in runs),
                }
                for engine, runs in samples.items()
            }
            results["training"][preset]["loss check"] = losses
    return results


def report(results: dict) -> str:
    """The markdown tables of `compare_with_marian`'s results: throughput and ratios to MarianMT (eager)."""
    parts = []
    for preset, tasks in results["generation"].items():
        rows = ratio_rows(tasks, f"{MARIAN} (eager)", "tokens/s")
        parts.append(f"**generate(), {preset} preset** ({results['threads']} threads)\n\n{markdown_table(rows)}")
    for preset, engines in results["training"].items():
        rows = ratio_rows({"Seq2SeqTrainer step": engines}, MARIAN, "target tokens/s")
        rss = {engine: engines[engine]["peak RSS MB (max)"] for engine in (MARIAN, OURS)}
        parts.append(
            f"**training, {preset} preset** ({results['threads']} threads; peak RSS ratio "
            f"{rss[OURS] / rss[MARIAN]:.2f})\n\n{markdown_table(rows)}"
        )
    return "\n\n".join(parts)
