"""The main job: train a small English-German TransformerMT on the shipped corpus, evaluate, translate, plot.

`MAIN_JOB` is the recipe, as defaults for `training.parse_args`; `run_main_job` runs it and writes the plots (loss
curves, the position table, the cross-attention of an example) and a `summary.json` next to the model.
scripts/main_job.py is the command.
"""

import json
import os
import time

import torch

from .pipelines import translate
from .plots import plot_cross_attention, plot_losses, plot_position_table
from .training import run


EXAMPLES = [
    "Click the Save button.",
    "Choose Format - Cells and click the Numbers tab.",
    "Deletes the selected rows.",
    "You can print the document on both sides of the paper.",
    "Select the cells that you want to sort.",
]

# Chosen for 2 CPU cores and 15 minutes (see README, "Results"): a narrow pre-LN model, which trains stably at a
# high learning rate, warmup then inverse-sqrt decay, label smoothing 0.1, and a small joint vocabulary.
MAIN_JOB = dict(
    do_train=True,
    do_eval=True,
    do_predict=True,
    position_embedding_type="sinusoidal",
    tokenizer_vocab_size=4000,
    d_model=192,
    encoder_layers=2,
    decoder_layers=2,
    encoder_attention_heads=4,
    decoder_attention_heads=4,
    encoder_ffn_dim=768,
    decoder_ffn_dim=768,
    normalize_before=True,
    # Glorot-sized linear layers (fairseq's and Marian's init): BERT's 0.02 is a quarter of that at d_model 192, and
    # with it whether a run learned to align by 2,000 steps depended on the seed (README, "The recipe").
    init_std=0.05,
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
    # Validation every 500 steps, greedy, on the first 400 pairs (~10 s): it picks the checkpoint that is tested
    # (beam 4) and stops a run that no longer improves; the last 3 checkpoints stay for averaging.
    eval_strategy="steps",
    eval_steps=500,
    max_eval_samples=400,
    generation_num_beams=1,
    num_beams=4,
    early_stopping_patience=4,
    logging_steps=50,
    save_strategy="steps",
    save_steps=500,
    save_total_limit=3,
    predict_with_generate=True,
    report_to="tensorboard",
    seed=0,
)


# The same job on a CUDA GPU (chosen by `main_job_recipe`; not yet measured, see README): the paper's base model,
# bf16 autocast (sdpa attention is the default everywhere), a batch that fills a large GPU, the paper's
# learning-rate schedule, an 8k vocabulary.
MAIN_JOB_GPU = dict(
    MAIN_JOB,
    tokenizer_vocab_size=8000,
    d_model=512,
    encoder_layers=6,
    decoder_layers=6,
    encoder_attention_heads=8,
    decoder_attention_heads=8,
    encoder_ffn_dim=2048,
    decoder_ffn_dim=2048,
    per_device_train_batch_size=256,
    per_device_eval_batch_size=256,
    learning_rate=1e-3,
    warmup_steps=1000,
    bf16=True,
    dataloader_num_workers=2,
)


def main_job_recipe(cuda: bool | None = None) -> dict:
    """MAIN_JOB_GPU where a CUDA GPU with bf16 is present, else MAIN_JOB (CPU: nothing changes)."""
    if cuda is None:
        cuda = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    return MAIN_JOB_GPU if cuda else MAIN_JOB


def _step_of(checkpoint: str | None) -> int | None:
    return int(checkpoint.rsplit("-", 1)[1]) if checkpoint else None


def matmul_gflops(size: int = 2048, threads: int = 2, repeats: int = 5) -> float:
    """fp32 GFLOP/s of a size x size matmul on `threads` threads: the machine's figure, stated beside wall times
    (machines of one kind here differ 3x)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        a, b = torch.randn(size, size), torch.randn(size, size)
        a @ b
        start = time.perf_counter()
        for _ in range(repeats):
            a @ b
        return 2 * size**3 * repeats / (time.perf_counter() - start) / 1e9
    finally:
        torch.set_num_threads(previous)


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
        "examples": dict(zip(EXAMPLES, translate(model, tokenizer, EXAMPLES))),
    }
    with open(os.path.join(output_dir, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2, ensure_ascii=False)
    return summary
