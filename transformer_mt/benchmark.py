"""Speed, side by side: TransformerMT against MarianMTModel (same weights) and against CTranslate2.

How every number here is taken, so that ratios mean something on a small shared machine:

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
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from transformers import MarianConfig, MarianMTModel, Seq2SeqTrainer, Seq2SeqTrainingArguments, TrainerCallback

from .bridges.marian import convert_marian_model
from .generation import compile_config
from .recipes import MAIN_JOB


# Model sizes: the main job's recipe, and the paper's base model (with its 37k shared vocabulary).
PRESETS = {
    "main-job": dict(d_model=MAIN_JOB["d_model"], layers=MAIN_JOB["encoder_layers"],
                     heads=MAIN_JOB["encoder_attention_heads"], ffn=MAIN_JOB["encoder_ffn_dim"],
                     vocab=MAIN_JOB["tokenizer_vocab_size"]),
    "base": dict(d_model=512, layers=6, heads=8, ffn=2048, vocab=37000),
    "tiny": dict(d_model=32, layers=2, heads=4, ffn=64, vocab=MAIN_JOB["tokenizer_vocab_size"]),  # the tests'
}
GENERATION_TASKS = {"greedy b1": (1, 1), "greedy b32": (32, 1), "beam-4 b32": (32, 4)}
MARIAN, OURS = "MarianMT", "TransformerMT"


# --- the harness -------------------------------------------------------------------------------------------------

def interleaved_order(engines: list[str], repeats: int) -> list[str]:
    """A, B, ..., B, A for every pair of repeats (an odd count ends with one more A, B, ...)."""
    order = []
    for repeat in range(repeats):
        order += engines if repeat % 2 == 0 else engines[::-1]
    return order


def summarise(samples: list[float]) -> dict:
    """Throughputs over repeats: the best (highest), the median and the worst (lowest), with the samples."""
    return {"best": max(samples), "median": statistics.median(samples), "worst": min(samples), "samples": samples}


def run_worker(function: str, spec: dict, threads: int) -> dict:
    """Run `transformer_mt.benchmark.<function>(spec)` in a fresh process with `threads` threads; its JSON result."""
    code = f"import json, sys, torch; torch.set_num_threads({threads}); from transformer_mt import benchmark; " \
           f"print('RESULT ' + json.dumps(benchmark.{function}(json.loads(sys.argv[1]))))"
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), TOKENIZERS_PARALLELISM="false")
    result = subprocess.run([sys.executable, "-c", code, json.dumps(spec)], capture_output=True, text=True, env=env,
                            timeout=3600)
    if result.returncode != 0:
        raise RuntimeError(f"benchmark worker {function} failed:\n{result.stderr[-3000:]}")
    line = next(line for line in result.stdout.splitlines()[::-1] if line.startswith("RESULT "))
    return json.loads(line.removeprefix("RESULT "))


def ratio_rows(results: dict, baseline: str, unit: str) -> list[dict]:
    """One row per (task, engine): min/median throughput and the ratios to the baseline engine of the same task."""
    rows = []
    for task, engines in results.items():
        base = engines[baseline]
        for engine, measured in engines.items():
            if "best" not in measured:
                continue
            rows.append({
                "task": task, "engine": engine, unit + " (best)": measured["best"],
                unit + " (median)": measured["median"],
                "x baseline (best)": measured["best"] / base["best"],
                "x baseline (median)": measured["median"] / base["median"],
                **{key: value for key, value in measured.items()
                   if key not in ("best", "median", "worst", "samples")},
            })
    return rows


def markdown_table(rows: list[dict]) -> str:
    columns = list(dict.fromkeys(key for row in rows for key in row))

    def cell(value):
        if isinstance(value, float):
            return f"{value:.2f}" if value < 100 else f"{value:,.0f}"
        return str(value)

    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join(" --- " for _ in columns) + "|"]
    lines += ["| " + " | ".join(cell(row.get(column, "")) for column in columns) + " |" for row in rows]
    return "\n".join(lines)


# --- TransformerMT against MarianMTModel -------------------------------------------------------------------------

def model_pair(preset: str, seed: int = 0) -> tuple[MarianMTModel, torch.nn.Module]:
    """A MarianMTModel of the preset's size at random (seeded) weights, and the TransformerMT model converted from it
    with the package's own converter: the same function, to the last logit."""
    size = PRESETS[preset]
    torch.manual_seed(seed)
    config = MarianConfig(
        vocab_size=size["vocab"], d_model=size["d_model"], encoder_layers=size["layers"],
        decoder_layers=size["layers"], encoder_attention_heads=size["heads"], decoder_attention_heads=size["heads"],
        encoder_ffn_dim=size["ffn"], decoder_ffn_dim=size["ffn"], max_position_embeddings=512, dropout=0.1,
        pad_token_id=0, decoder_start_token_id=1, eos_token_id=2, forced_eos_token_id=None,
    )
    marian = MarianMTModel(config)
    return marian, convert_marian_model(marian)


def load_engine(workdir: str, preset: str, engine: str):
    """One model of a pair saved by `prepare_data` (loading only it keeps a worker's peak RSS its own)."""
    from transformers import AutoModelForSeq2SeqLM

    return AutoModelForSeq2SeqLM.from_pretrained(Path(workdir) / preset / engine)


def prepare_data(workdir: Path, data_dir: str, num_train: int, num_sources: int, presets=tuple(PRESETS)) -> Path:
    """Tokenize shipped pairs once (the main job's tokenizer size) into `workdir/data.json`, and save every preset's
    model pair under `workdir/<preset>/<engine>`, for the workers."""
    for preset in presets:
        for engine, model in zip((MARIAN, OURS), model_pair(preset)):
            model.save_pretrained(workdir / preset / engine)
    from .data import load_parallel_data
    from .tokenization import train_tokenizer

    splits = load_parallel_data(data_dir)
    train = splits["train"].select(range(min(num_train, len(splits["train"]))))
    tokenizer = train_tokenizer(list(train["en"]) + list(train["de"]), vocab_size=PRESETS["main-job"]["vocab"])
    limit = MAIN_JOB["max_source_length"]
    pairs = [{"input_ids": source, "labels": target} for source, target in zip(
        tokenizer(list(train["en"]), max_length=limit, truncation=True)["input_ids"],
        tokenizer(text_target=list(train["de"]), max_length=limit, truncation=True)["input_ids"])]
    sources = tokenizer(list(splits["test"]["en"][:num_sources]))["input_ids"]
    tokenizer.save_pretrained(workdir / "tokenizer")
    path = workdir / "data.json"
    path.write_text(json.dumps({"pairs": pairs, "sources": sources, "pad_token_id": tokenizer.pad_token_id,
                                "tokenizer": str(workdir / "tokenizer"), "workdir": str(workdir)}))
    return path


def _source_batch(sources: list[list[int]], batch_size: int, pad_token_id: int) -> dict:
    rows = sources[:batch_size]
    width = max(map(len, rows))
    input_ids = torch.tensor([row + [pad_token_id] * (width - len(row)) for row in rows])
    lengths = torch.tensor([len(row) for row in rows])
    return {"input_ids": input_ids, "attention_mask": (torch.arange(width) < lengths[:, None]).long()}


def generation_worker(spec: dict) -> dict:
    """Every generation engine on one task, in one process, in interleaved timed blocks.

    Compiled engines use a static cache and transformers' compiled decoding step (generation.compile_config);
    transformers 5.24 compiles greedy search and sampling only, so beam search has no compiled engine.
    """
    data = json.loads(Path(spec["data"]).read_text())
    batch_size, num_beams = GENERATION_TASKS[spec["task"]]
    batch = _source_batch(data["sources"], batch_size, data["pad_token_id"])
    marian, ours = (load_engine(data["workdir"], spec["preset"], engine).eval() for engine in (MARIAN, OURS))
    settings = dict(max_new_tokens=spec["new_tokens"], num_beams=num_beams, do_sample=False, eos_token_id=None,
                    forced_eos_token_id=None)
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
    return {name: summarise([tokens / s for s in samples]) for name, samples in seconds.items()}


class _StepTimer(TrainerCallback):
    """Seconds and target tokens of every optimizer step after the first `warmup` ones."""

    def __init__(self, warmup: int):
        self.warmup, self.seconds, self.start = warmup, [], None

    def on_step_begin(self, args, state, control, **kwargs):
        self.start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step > self.warmup:
            self.seconds.append(time.perf_counter() - self.start)


def _trainer(engine: str, model, data: dict, output_dir: str, steps: int, callbacks=()):
    """The main job's Seq2SeqTrainer recipe for either engine: Marian's as its users run it (transformers'
    Seq2SeqTrainer), TransformerMT's as this package runs it (training.TransformerMTTrainer). Batches are drawn in
    the same seeded random order for both (the main job groups them by length, which would shuffle differently)."""
    from datasets import Dataset
    from transformers import AutoTokenizer, DataCollatorForSeq2Seq

    from .training import TransformerMTTrainer

    recipe = {key: MAIN_JOB[key] for key in ("learning_rate", "lr_scheduler_type", "warmup_steps", "adam_beta2",
                                             "weight_decay", "label_smoothing_factor", "max_grad_norm",
                                             "per_device_train_batch_size", "seed")}
    args = Seq2SeqTrainingArguments(output_dir=output_dir, max_steps=steps, report_to="none", save_strategy="no",
                                    logging_strategy="no", disable_tqdm=True, use_cpu=True, **recipe)
    tokenizer = AutoTokenizer.from_pretrained(data["tokenizer"])
    collator = DataCollatorForSeq2Seq(tokenizer, model=model, label_pad_token_id=-100, pad_to_multiple_of=8)
    trainer_class = TransformerMTTrainer if engine == OURS else Seq2SeqTrainer
    return trainer_class(model=model, args=args, train_dataset=Dataset.from_list(data["pairs"]),
                         data_collator=collator, callbacks=list(callbacks))


def training_worker(spec: dict) -> dict:
    """One engine's training throughput and this process's peak RSS.

    Target tokens per second: the pairs' mean target length times the batch size, per second of optimizer step
    (both engines see the same batches, so the ratio is that of their step times).
    """
    data = json.loads(Path(spec["data"]).read_text())
    model = load_engine(data["workdir"], spec["preset"], spec["engine"])
    timer = _StepTimer(spec["warmup"])
    with tempfile.TemporaryDirectory() as output_dir:
        _trainer(spec["engine"], model.train(), data, output_dir, spec["warmup"] + spec["steps"], [timer]).train()
    tokens_per_step = MAIN_JOB["per_device_train_batch_size"] * statistics.mean(
        len(pair["labels"]) for pair in data["pairs"])
    return {"tokens_per_second": tokens_per_step * len(timer.seconds) / sum(timer.seconds),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


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


def compare_with_marian(data_dir: str, presets=("main-job", "base"), tasks=tuple(GENERATION_TASKS), repeats: int = 4,
                        threads: int = 2, new_tokens: int = 32, train_steps: int = 30, compiled: bool = True,
                        training: bool = True) -> dict:
    """Every task of every preset; {"generation": {preset: {task: {engine: summary}}}, "training": ...}."""
    results = {"generation": {}, "training": {}, "threads": threads, "torch": torch.__version__}
    with tempfile.TemporaryDirectory(prefix="transformer-mt-benchmark-") as workdir:
        data = prepare_data(Path(workdir), data_dir, num_train=2000, num_sources=32, presets=presets)
        for preset in presets:
            results["generation"][preset] = {
                task: run_worker("generation_worker", {"data": str(data), "preset": preset, "task": task,
                                                       "repeats": repeats, "new_tokens": new_tokens,
                                                       "compiled": compiled}, threads)
                for task in tasks
            }
            if not training:
                continue
            losses = run_worker("training_check_worker", {"data": str(data), "preset": preset}, threads)
            if abs(losses[MARIAN] - losses[OURS]) > 1e-4 * abs(losses[MARIAN]):
                raise AssertionError(f"the trainers' losses differ on the same batch: {losses}")
            steps = max(3, train_steps // (4 if preset == "base" else 1))
            samples = {MARIAN: [], OURS: []}
            for engine in interleaved_order([MARIAN, OURS], repeats):
                samples[engine].append(run_worker("training_worker", {
                    "data": str(data), "preset": preset, "engine": engine, "warmup": 3, "steps": steps}, threads))
            results["training"][preset] = {
                engine: {**summarise([s["tokens_per_second"] for s in runs]),
                         "peak RSS MB (max)": max(s["peak_rss_mb"] for s in runs)}
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
        parts.append(f"**training, {preset} preset** ({results['threads']} threads; peak RSS ratio "
                     f"{rss[OURS] / rss[MARIAN]:.2f})\n\n{markdown_table(rows)}")
    return "\n\n".join(parts)


# --- sentence batches against token batches ----------------------------------------------------------------------

class _TargetTokenTimer(_StepTimer):
    """_StepTimer that also records the real (non-pad) target tokens of every timed step."""

    def __init__(self, warmup: int, tokens_seen):
        super().__init__(warmup)
        self.tokens_seen, self.tokens, self.last = tokens_seen, [], 0

    def on_step_end(self, args, state, control, **kwargs):
        super().on_step_end(args, state, control, **kwargs)
        seen = self.tokens_seen()
        if state.global_step > self.warmup:
            self.tokens.append(seen - self.last)
        self.last = seen


def batching_worker(spec: dict) -> dict:
    """TransformerMT (the preset's size) trained on sentence batches (the main job's length-grouped pairs) or token
    batches of at most `max_tokens` padded tokens: real target tokens per second of optimizer step."""
    from transformers import AutoTokenizer, DataCollatorForSeq2Seq

    from .training import PAD_TO_MULTIPLE_OF, TransformerMTTrainer

    data = json.loads(Path(spec["data"]).read_text())
    model = load_engine(data["workdir"], spec["preset"], OURS).train()
    recipe = {key: MAIN_JOB[key] for key in ("learning_rate", "lr_scheduler_type", "warmup_steps", "adam_beta2",
                                             "weight_decay", "label_smoothing_factor", "max_grad_norm",
                                             "per_device_train_batch_size", "train_sampling_strategy", "seed")}
    with tempfile.TemporaryDirectory() as output_dir:
        args = Seq2SeqTrainingArguments(output_dir=output_dir, max_steps=spec["warmup"] + spec["steps"],
                                        report_to="none", save_strategy="no", logging_strategy="no",
                                        disable_tqdm=True, use_cpu=True, **recipe)
        from datasets import Dataset

        tokenizer = AutoTokenizer.from_pretrained(data["tokenizer"])
        trainer = TransformerMTTrainer(
            model=model, args=args, train_dataset=Dataset.from_list(data["pairs"]),
            data_collator=DataCollatorForSeq2Seq(tokenizer, model=model, label_pad_token_id=-100,
                                                 pad_to_multiple_of=PAD_TO_MULTIPLE_OF),
            max_tokens_per_batch=spec["max_tokens"])
        timer = _TargetTokenTimer(spec["warmup"], lambda: int(trainer.target_tokens_seen))
        trainer.add_callback(timer)
        trainer.train()
    return {"tokens_per_second": sum(timer.tokens) / sum(timer.seconds),
            "target tokens per step": sum(timer.tokens) / len(timer.tokens)}


def compare_batching(data_dir: str, max_tokens=(2048, 4096), repeats: int = 3, threads: int = 2,
                     train_steps: int = 30, preset: str = "main-job") -> dict:
    """Real target tokens/s of sentence batches and of token batches of each size, interleaved, each run its own
    process; {"batching": {engine: summary}}."""
    engines = {f"{MAIN_JOB['per_device_train_batch_size']} pairs, length-grouped": None,
               **{f"<= {n} padded tokens": n for n in max_tokens}}
    with tempfile.TemporaryDirectory(prefix="transformer-mt-benchmark-") as workdir:
        data = prepare_data(Path(workdir), data_dir, num_train=4000, num_sources=1, presets=(preset,))
        samples = {engine: [] for engine in engines}
        for engine in interleaved_order(list(engines), repeats):
            samples[engine].append(run_worker("batching_worker", {
                "data": str(data), "preset": preset, "max_tokens": engines[engine], "warmup": 3,
                "steps": train_steps}, threads))
    return {"threads": threads, "preset": preset, "batching": {
        engine: {**summarise([run["tokens_per_second"] for run in runs]),
                 "target tokens per step": statistics.mean(run["target tokens per step"] for run in runs)}
        for engine, runs in samples.items()}}


def batching_report(results: dict) -> str:
    baseline = next(iter(results["batching"]))
    rows = ratio_rows({"training step": results["batching"]}, baseline, "real target tokens/s")
    return (f"**training batches, {results['preset']} preset** ({results['threads']} threads)\n\n"
            f"{markdown_table(rows)}")


# --- position types against each other ---------------------------------------------------------------------------

def position_models(workdir: Path, preset: str, position_types, seed: int = 0) -> None:
    """TransformerMT of the preset's size for every position type, the same seeded weights elsewhere."""
    from .configuration import TransformerMTConfig
    from .modeling import TransformerMTForConditionalGeneration

    size = PRESETS[preset]
    for position_type in position_types:
        torch.manual_seed(seed)
        config = TransformerMTConfig(
            vocab_size=size["vocab"], d_model=size["d_model"], encoder_layers=size["layers"],
            decoder_layers=size["layers"], encoder_attention_heads=size["heads"],
            decoder_attention_heads=size["heads"], encoder_ffn_dim=size["ffn"], decoder_ffn_dim=size["ffn"],
            normalize_before=True,
            position_embedding_type=position_type)
        TransformerMTForConditionalGeneration(config).save_pretrained(workdir / preset / f"positions-{position_type}")


def positions_generation_worker(spec: dict) -> dict:
    """generate() tokens/s of every position type's model on one batch, interleaved in one process."""
    from transformers import AutoModelForSeq2SeqLM

    data = json.loads(Path(spec["data"]).read_text())
    batch = _source_batch(data["sources"], spec["batch_size"], data["pad_token_id"])
    models = {name: AutoModelForSeq2SeqLM.from_pretrained(Path(data["workdir"]) / spec["preset"] / f"positions-{name}")
              .eval() for name in spec["position_types"]}
    settings = dict(max_new_tokens=spec["new_tokens"], min_new_tokens=spec["new_tokens"], num_beams=1,
                    do_sample=False)
    seconds = {name: [] for name in models}
    with torch.inference_mode():
        for model in models.values():
            model.generate(**batch, **settings)  # warm-up
        for name in interleaved_order(list(models), spec["repeats"]):
            start = time.perf_counter()
            models[name].generate(**batch, **settings)
            seconds[name].append(time.perf_counter() - start)
    tokens = spec["batch_size"] * spec["new_tokens"]
    return {name: summarise([tokens / s for s in samples]) for name, samples in seconds.items()}


def positions_training_worker(spec: dict) -> dict:
    """Training target tokens/s of one position type's model (the main job's recipe, the same batches)."""
    from transformers import AutoModelForSeq2SeqLM

    data = json.loads(Path(spec["data"]).read_text())
    model = AutoModelForSeq2SeqLM.from_pretrained(
        Path(data["workdir"]) / spec["preset"] / f"positions-{spec['position_type']}").train()
    timer = _StepTimer(spec["warmup"])
    with tempfile.TemporaryDirectory() as output_dir:
        _trainer(OURS, model, data, output_dir, spec["warmup"] + spec["steps"], [timer]).train()
    tokens_per_step = MAIN_JOB["per_device_train_batch_size"] * statistics.mean(
        len(pair["labels"]) for pair in data["pairs"])
    return {"tokens_per_second": tokens_per_step * len(timer.seconds) / sum(timer.seconds)}


def compare_positions(data_dir: str, position_types=("sinusoidal", "learned", "alibi", "rotary"),
                      preset: str = "main-job", repeats: int = 4, threads: int = 2, new_tokens: int = 32,
                      batch_size: int = 32, train_steps: int = 30) -> dict:
    """generate() (greedy) and training throughput of every position type at one size, as ratios to the first."""
    with tempfile.TemporaryDirectory(prefix="transformer-mt-benchmark-") as workdir:
        data = prepare_data(Path(workdir), data_dir, num_train=2000, num_sources=batch_size, presets=())
        position_models(Path(workdir), preset, position_types)
        generation = run_worker("positions_generation_worker", {
            "data": str(data), "preset": preset, "position_types": list(position_types), "repeats": repeats,
            "new_tokens": new_tokens, "batch_size": batch_size}, threads)
        samples = {name: [] for name in position_types}
        for name in interleaved_order(list(position_types), repeats):
            samples[name].append(run_worker("positions_training_worker", {
                "data": str(data), "preset": preset, "position_type": name, "warmup": 3, "steps": train_steps},
                threads)["tokens_per_second"])
    return {"threads": threads, "preset": preset, "generation": generation,
            "training": {name: summarise(values) for name, values in samples.items()}}


def positions_report(results: dict) -> str:
    baseline = next(iter(results["generation"]))
    tables = {"generate() greedy": results["generation"], "training step": results["training"]}
    rows = [row for task, engines in tables.items() for row in ratio_rows({task: engines}, baseline, "tokens/s")]
    return (f"**position types, {results['preset']} preset** ({results['threads']} threads; ratios to "
            f"{baseline})\n\n{markdown_table(rows)}")


# --- generate() against CTranslate2 ------------------------------------------------------------------------------

def ctranslate2_worker(spec: dict) -> dict:
    """One engine (generate(), or CTranslate2 at a compute type) decoding every batch once: tokens/s and outputs."""
    from .bridges.ctranslate2 import generated_tokens, source_tokens, translate_options
    from .checkpoints import load_translator

    model, tokenizer = load_translator(spec["model_dir"])
    sentences, size = spec["sentences"], spec["batch_size"]
    batches = [sentences[i:i + size] for i in range(0, len(sentences), size)]
    if spec["engine"] == "generate()":
        model.eval()
        inputs = [tokenizer(batch, return_tensors="pt", padding=True) for batch in batches]

        def decode(batch):
            with torch.inference_mode():
                ids = model.generate(**batch, num_beams=spec["num_beams"], do_sample=False,
                                     max_new_tokens=spec["max_new_tokens"], early_stopping=True)
            return generated_tokens(tokenizer, ids, model.generation_config.eos_token_id)
    else:
        import ctranslate2

        translator = ctranslate2.Translator(spec["export_dir"], compute_type=spec["engine"],
                                            intra_threads=torch.get_num_threads(), inter_threads=1)
        inputs = [source_tokens(tokenizer, batch) for batch in batches]
        options = translate_options(spec["num_beams"], spec["max_new_tokens"])

        def decode(batch):
            return [result.hypotheses[0] for result in translator.translate_batch(batch, **options)]

    decode(inputs[0])  # warm-up
    start = time.perf_counter()
    outputs = [hypothesis for batch in inputs for hypothesis in decode(batch)]
    seconds = time.perf_counter() - start
    return {"tokens_per_second": sum(map(len, outputs)) / seconds, "outputs": outputs}


def compare_with_ctranslate2(model_dir: str, sentences: list[str], batch_size: int = 16, max_new_tokens: int = 64,
                             threads: int = 1, repeats: int = 3, beam_sizes=(1, 4)) -> dict:
    """generate() vs CTranslate2 float32 and int8: each engine in its own process per repeat, interleaved."""
    from .bridges.ctranslate2 import export_ctranslate2

    engines = ["generate()", "float32", "int8"]
    results = {"threads": threads, "sentences": len(sentences), "batch_size": batch_size, "search": {}}
    with tempfile.TemporaryDirectory(prefix="transformer-mt-ct2-") as workdir:
        exports = {kind: export_ctranslate2(model_dir, f"{workdir}/{kind}", quantization=kind)
                   for kind in engines[1:]}
        for num_beams in beam_sizes:
            runs = {engine: [] for engine in engines}
            for engine in interleaved_order(engines, repeats):
                runs[engine].append(run_worker("ctranslate2_worker", {
                    "model_dir": model_dir, "export_dir": exports.get(engine), "engine": engine,
                    "sentences": sentences, "batch_size": batch_size, "num_beams": num_beams,
                    "max_new_tokens": max_new_tokens}, threads))
            reference = runs["generate()"][0]["outputs"]
            search = "greedy" if num_beams == 1 else f"beam {num_beams}"
            results["search"][search] = {
                ("generate()" if engine == "generate()" else f"CTranslate2 {engine}"): {
                    **summarise([run["tokens_per_second"] for run in engine_runs]),
                    "outputs equal to generate()":
                        f"{sum(a == b for a, b in zip(engine_runs[0]['outputs'], reference))}"
                                                   f"/{len(reference)}",
                }
                for engine, engine_runs in runs.items()
            }
    return results


def ctranslate2_report(results: dict) -> str:
    rows = ratio_rows(results["search"], "generate()", "tokens/s")
    return (f"{results['sentences']} sentences, batch {results['batch_size']}, {results['threads']} thread(s)\n\n"
            + markdown_table(rows))
