"""What a CUDA machine is checked for, in one run of under 10 minutes (scripts/gpu_check.py is the command).

- bf16: forward and backward under bf16 autocast are finite and close to fp32 (loss, gradient direction);
- attention: sdpa equals eager (fp32 logits);
- training throughput of the paper's base model in bf16, and its MFU: FLOPs per step from the config (every
  matrix product, attention scores included, x3 for the backward) against the GPU's bf16 peak;
- generate() against MarianMTModel with the same weights (`benchmarks.model_pair`), greedy and beam 4, batch 64;
- a short main job on the GPU recipe (`presets.MAIN_JOB_GPU`) with its BLEU.

`dry_run` runs every check at the tests' tiny size on whatever device is given (the CPU in tests/test_gpu_check.py),
so that the device's minutes are never spent on a typo. Results are one JSON-able dict.
"""

import time

import torch

from transformer_mt.engines import EngineSettings, load_engine
from transformer_mt.presets import TINY

from .benchmarks import GENERATION_TASKS, MODEL_SIZES, model_pair


# Dense bf16 tensor-core peaks (no sparsity), TFLOP/s, by a piece of the device name.
BF16_PEAK_TFLOPS = {"H200": 989.0, "H100": 989.0, "A100": 312.0, "L40S": 362.0, "A10G": 125.0, "L4": 121.0}
# --dry_run's main job: presets.TINY's model, a few steps on 400 pairs.
TINY_MAIN_JOB = dict(
    TINY,
    max_train_samples=400,
    max_eval_samples=32,
    max_predict_samples=32,
    max_steps=5,
    warmup_steps=2,
    eval_strategy="no",
    save_strategy="no",
    early_stopping_patience=None,
    generation_num_beams=2,
    num_beams=2,
)


def bf16_peak_tflops(device: torch.device) -> float | None:
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((peak for key, peak in BF16_PEAK_TFLOPS.items() if key in name), None)


def training_flops_per_step(config, batch_size: int, source_length: int, target_length: int) -> float:
    """Forward + backward FLOPs of one step: 2 per multiply-add, x3 for the backward, every matrix product (the
    projections, the feed-forward layers, the attention scores and their weighted sum, the output projection)."""
    d, ffn = config.d_model, config.encoder_ffn_dim
    s, t = source_length, target_length
    encoder = config.encoder_layers * (s * (4 * d * d + 2 * d * ffn) + 2 * s * s * d)
    decoder = config.decoder_layers * (
        t * (4 * d * d + 2 * d * config.decoder_ffn_dim)
        + 2 * t * t * d
        + t * 2 * d * d
        + s * 2 * d * d
        + 2 * t * s * d
    )
    output = t * d * config.vocab_size
    return 3 * 2 * batch_size * (encoder + decoder + output)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _batch(config, batch_size: int, length: int, device, seed: int = 0) -> dict:
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(4, config.vocab_size, (batch_size, length), generator=generator)
    ids[:, -1] = config.eos_token_id
    return {"input_ids": ids.to(device), "labels": ids.roll(1, dims=0).to(device)}


def check_bf16(model, device) -> dict:
    """Loss and gradients of one batch in fp32 and under bf16 autocast."""
    model = model.to(device).train()
    batch = _batch(model.config, 8, 24, device)

    def loss_and_grads(autocast: bool):
        model.zero_grad()
        torch.manual_seed(0)  # the same dropout masks
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast):
            loss = model(**batch).loss
        loss.backward()
        gradients = [p.grad.flatten().float() for p in model.parameters() if p.grad is not None]
        return loss.float().item(), torch.cat(gradients)

    loss32, grad32 = loss_and_grads(False)
    loss16, grad16 = loss_and_grads(True)
    model.zero_grad()
    cosine = torch.nn.functional.cosine_similarity(grad32, grad16, dim=0).item()
    finite = bool(torch.isfinite(torch.tensor(loss16)) and torch.isfinite(grad16).all())
    relative = abs(loss16 - loss32) / abs(loss32)
    return {
        "loss_fp32": loss32,
        "loss_bf16": loss16,
        "loss_relative_difference": relative,
        "gradient_cosine": cosine,
        "finite": finite,
        "ok": finite and relative < 2e-2 and cosine > 0.99,
    }


def check_attention(model, device) -> dict:
    """Greatest |logit| difference between sdpa and eager attention, same weights, fp32, padded batch."""
    model = model.to(device).eval()
    batch = _batch(model.config, 4, 20, device)
    mask = torch.ones_like(batch["input_ids"])
    mask[1, 15:] = 0
    logits = {}
    for implementation in ("eager", "sdpa"):
        model.set_attn_implementation(implementation)
        with torch.inference_mode():
            logits[implementation] = model(
                input_ids=batch["input_ids"], attention_mask=mask, decoder_input_ids=batch["labels"]
            ).logits
    difference = (logits["eager"] - logits["sdpa"]).abs().max().item()
    return {"max_abs_logit_difference": difference, "ok": difference < 1e-3}


def training_throughput(model, device, batch_size: int, length: int, steps: int) -> dict:
    """AdamW steps in bf16 autocast (fp32 weights), after 3 warm-up steps: tokens/s, TFLOP/s, MFU."""
    model = model.to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=device.type == "cuda")
    batch = _batch(model.config, batch_size, length, device)
    autocast = device.type == "cuda"

    def step():
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast):
            loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for _ in range(3):
        step()
    _sync(device)
    start = time.perf_counter()
    for _ in range(steps):
        step()
    _sync(device)
    seconds = (time.perf_counter() - start) / steps
    flops = training_flops_per_step(model.config, batch_size, length, length)
    peak = bf16_peak_tflops(device)
    result = {
        "batch_size": batch_size,
        "length": length,
        "bf16": autocast,
        "step_ms": 1000 * seconds,
        "target_tokens_per_s": batch_size * length / seconds,
        "tflops": flops / seconds / 1e12,
        "peak_bf16_tflops": peak,
        "mfu": flops / seconds / 1e12 / peak if peak else None,
    }
    if device.type == "cuda":
        result["peak_memory_gib"] = torch.cuda.max_memory_allocated(device) / 2**30
    return result


def generation_speed(marian, ours, device, batch_size: int, new_tokens: int, repeats: int) -> dict:
    """generate() tokens/s of both models, interleaved, after a warm-up, and whether both generated the same tokens
    (`same_tokens`: scripts/gpu_check.py fails the run on it once every check has written its numbers)."""
    batch = _batch(ours.config, batch_size, 24, device)
    results = {}
    for task, (_, beams) in GENERATION_TASKS.items():
        if task.startswith("greedy b1"):
            continue
        settings = dict(
            input_ids=batch["input_ids"],
            num_beams=beams,
            max_new_tokens=new_tokens,
            min_new_tokens=new_tokens,
            do_sample=False,
        )
        times = {"MarianMT": [], "TransformerMT": []}
        outputs = {}
        for repeat in range(repeats + 1):
            for name, model in (
                (("MarianMT", marian), ("TransformerMT", ours))
                if repeat % 2
                else (("TransformerMT", ours), ("MarianMT", marian))
            ):
                _sync(device)
                start = time.perf_counter()
                with torch.inference_mode():
                    outputs[name] = model.generate(**settings)
                _sync(device)
                if repeat:  # the first round warms up
                    times[name].append(time.perf_counter() - start)
        tokens = batch_size * new_tokens
        speed = {
            name: {"worst_tokens_per_s": tokens / max(t), "best_tokens_per_s": tokens / min(t)}
            for name, t in times.items()
        }
        results[task.replace("b32", f"b{batch_size}")] = {
            **speed,
            "same_tokens": torch.equal(outputs["MarianMT"], outputs["TransformerMT"]),
            "ratio_best": speed["TransformerMT"]["best_tokens_per_s"] / speed["MarianMT"]["best_tokens_per_s"],
        }
    return results


def short_main_job(data_dir: str, output_dir: str, minutes: float, dry_run: bool) -> dict:
    """The main job with the recipe for the device (MAIN_JOB_GPU on a CUDA GPU), for `minutes` of training."""
    from transformer_mt.recipes import main_job_recipe, recipe_arguments, run_main_job

    summary = run_main_job(
        *recipe_arguments(
            {
                **main_job_recipe(),
                **(TINY_MAIN_JOB if dry_run else {}),
                "data": data_dir,
                "output_dir": output_dir,
                "max_train_minutes": minutes,
                "report_to": "none",
                "overwrite_output_dir": True,
                "disable_tqdm": True,
                **({"bf16": False} if dry_run else {}),
            }
        )
    )
    return {key: summary[key] for key in ("test_bleu", "test_chrf", "train_steps", "wall_minutes")}


def server_check(model_dir: str, device: torch.device) -> dict:
    """The server on `device` (--device) with each engine: one paragraph through POST /translate (in process, no
    socket), the two engines' answers compared."""
    from fastapi.testclient import TestClient

    from transformer_mt.serving.app import ServedModel, create_app  # FastAPI: the [serve] extra

    paragraph = "Open the file. Click the Save button. Close the window."
    answers = {}
    for name in ("transformers", "ctranslate2"):
        engine = load_engine(model_dir, EngineSettings(name, device=device.type))
        with TestClient(create_app([ServedModel(engine, "en", "de")])) as client:
            answers[name] = client.post("/translate", json={"q": paragraph, "source": "en", "target": "de"}).json()
        answers[f"{name}_device"] = engine.device
    return {**answers, "same": answers["transformers"] == answers["ctranslate2"]}


def run_checks(
    data_dir: str, output_dir: str, device: str | None = None, dry_run: bool = False, main_job_minutes: float = 4.0
) -> dict:
    """Every check, on `device` (default: CUDA if present, else CPU); `dry_run` at the tiny size, in seconds."""
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    preset = "tiny" if dry_run else "base"
    results = {
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__,
        "dry_run": dry_run,
        "preset": MODEL_SIZES[preset],
    }
    marian, ours = model_pair(preset)
    results["bf16"] = check_bf16(ours, device)
    results["attention"] = check_attention(ours, device)
    results["training"] = training_throughput(
        ours, device, batch_size=8 if dry_run else 128, length=24 if dry_run else 64, steps=2 if dry_run else 30
    )
    marian, ours = model_pair(preset)  # the training check changed the weights: a fresh pair, equal again
    marian, ours = marian.to(device).eval(), ours.to(device).eval()
    results["generation"] = generation_speed(
        marian,
        ours,
        device,
        batch_size=4 if dry_run else 64,
        new_tokens=4 if dry_run else 64,
        repeats=1 if dry_run else 3,
    )
    del marian, ours
    # the dry run's max_steps ends it; its budget is passed, never reached, however busy the machine
    results["main_job"] = short_main_job(data_dir, output_dir, 5.0 if dry_run else main_job_minutes, dry_run)
    results["server"] = server_check(output_dir, device)  # the main job's model, served on the device
    return results
