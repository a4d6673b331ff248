"""What a training run learns besides its loss: whether the decoder reads its source.

A translation model can lower its loss for a long while as a language model of the target side alone, writing fluent
text that ignores its input. `AlignmentProbe` watches for that on a fixed batch of validation pairs every `every`
steps and appends one JSON line per probe to `output_dir/probe.jsonl`:

- `loss`: cross-entropy of the references with their own sources;
- `source_gain`: how much worse the references score when every row is given another row's source (nats per
  token). Near 0, the decoder ignores its input; it is the measure that separates a run that aligns from one that
  does not;
- `cross_attention_entropy`: mean entropy of the cross-attention over the source, divided by log(source length)
  (1 is uniform attention, 0 a single source token), per decoder layer;
- `grad_norm`: gradient norm per block (embeddings, encoder, decoder self-attention, cross-attention, feed-forward)
  at the step before the probe;
- `embedding_rms`: root mean square of the scaled token embeddings and of the position term added to them (None
  for relative positions, which add none).
"""

import contextlib
import json
import math
import os

import torch
from transformers import TrainerCallback


def probe_batch(tokenized_split, collator, size: int = 64) -> dict:
    """The first `size` pairs of a tokenized split, padded by the run's collator: the probe's fixed batch."""
    rows = [tokenized_split[i] for i in range(min(size, len(tokenized_split)))]
    return {key: value for key, value in collator(rows).items() if key in ("input_ids", "attention_mask", "labels")}


def _block(name: str) -> str | None:
    if "embed" in name or name.startswith("model.shared"):
        return "embeddings"
    if ".encoder." in name or name.startswith("model.encoder"):
        return "encoder"
    if ".encoder_attn" in name:
        return "cross_attention"
    if ".self_attn" in name:
        return "decoder_self_attention"
    if ".decoder." in name:
        return "decoder_feed_forward"
    return None


@contextlib.contextmanager
def eager_attention(model):
    """Run the block with the eager attention kernel, the one that returns attention weights (sdpa does not)."""
    implementation = model.config._attn_implementation
    model.set_attn_implementation("eager")
    try:
        yield model
    finally:
        model.set_attn_implementation(implementation)


@torch.no_grad()
def measure(model, batch: dict) -> dict:
    """Loss, source gain and cross-attention entropy of `model` on `batch` (see the module docstring)."""
    batch = {key: value.to(model.device) for key, value in batch.items()}
    with eager_attention(model):
        out = model(**batch, output_attentions=True)
    shuffled = dict(
        batch, input_ids=batch["input_ids"].roll(1, dims=0), attention_mask=batch["attention_mask"].roll(1, dims=0)
    )
    shuffled_loss = model(**shuffled).loss
    source_mask = batch["attention_mask"].bool()[:, None, None, :]  # (B, 1, 1, S)
    target_mask = (batch["labels"] != -100)[:, None, :]  # (B, 1, T)
    source_lengths = batch["attention_mask"].sum(-1).clamp(min=2).float()[:, None, None]  # (B, 1, 1)
    entropies = []
    for attention in out.cross_attentions:  # per decoder layer: (B, H, T, S)
        p = attention.masked_fill(~source_mask, 0.0)
        entropy = -(p * p.clamp(min=1e-12).log()).sum(-1) / source_lengths.log()  # (B, H, T)
        entropies.append(float(entropy.mean(1)[target_mask[:, 0]].mean()))
    return {
        "loss": float(out.loss),
        "source_gain": float(shuffled_loss - out.loss),
        "cross_attention_entropy": entropies,
    }


def embedding_rms(model, batch: dict) -> dict:
    """RMS of the scaled token embeddings of the batch's sources (padding left out) and of the position term."""
    embeddings = model.get_encoder().embeddings
    ids, mask = batch["input_ids"].to(model.device), batch["attention_mask"].to(model.device).bool()
    with torch.no_grad():
        tokens = embeddings.embed_tokens(ids)[mask] * embeddings.embed_scale  # (real tokens, d)
        positions = embeddings.embed_positions(torch.arange(ids.size(1), device=ids.device))  # (T, d) or None
    return {
        "tokens": float(tokens.pow(2).mean().sqrt()),
        "positions": float(positions.pow(2).mean().sqrt()) if positions is not None else None,
    }


class AlignmentProbe(TrainerCallback):
    """Every `every` steps, `measure` on a fixed batch plus per-block gradient norms, appended to probe.jsonl."""

    def __init__(self, batch: dict, every: int = 100):
        self.batch, self.every, self.grad_norm = batch, every, {}

    def on_pre_optimizer_step(self, args, state, control, model=None, **kwargs):
        if (state.global_step + 1) % self.every:
            return
        squares = {}
        for name, parameter in model.named_parameters():
            block = _block(name)
            if block and parameter.grad is not None:
                squares[block] = squares.get(block, 0.0) + float(parameter.grad.float().pow(2).sum())
        self.grad_norm = {block: math.sqrt(value) for block, value in squares.items()}

    def on_step_end(self, args, state, control, model=None, **kwargs):
        if state.global_step % self.every or not state.is_world_process_zero:
            return
        was_training = model.training
        model.eval()
        row = {
            "step": state.global_step,
            **measure(model, self.batch),
            "grad_norm": self.grad_norm,
            "embedding_rms": embedding_rms(model, self.batch),
        }
        model.train(was_training)
        with open(os.path.join(args.output_dir, "probe.jsonl"), "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")


def alignment_heads(config) -> tuple[int, int]:
    """The decoder layer (an index from 0) and the number of its first heads that word alignments average
    (`config.alignment_layer`, `config.alignment_heads`; all heads by default)."""
    return config.alignment_layer % config.decoder_layers, config.alignment_heads or config.decoder_attention_heads


def read_probe(output_dir: str) -> list[dict]:
    """The rows an `AlignmentProbe` wrote into `output_dir`, one per step (a resumed run measures some steps again:
    the last measurement counts); empty when it did not run."""
    path = os.path.join(output_dir, "probe.jsonl")
    if not os.path.isfile(path):
        return []
    with open(path, encoding="utf-8") as f:
        rows = {row["step"]: row for row in map(json.loads, filter(str.strip, f))}
    return [rows[step] for step in sorted(rows)]


__all__ = [
    "AlignmentProbe",
    "alignment_heads",
    "eager_attention",
    "embedding_rms",
    "measure",
    "probe_batch",
    "read_probe",
]
