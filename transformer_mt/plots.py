"""PNG figures: the loss curves of a training run, a position embedding's table (the sinusoid's "barcode"), and where
a trained model's decoder looks in the source (cross-attention)."""

import torch
from matplotlib.figure import Figure

from .diagnostics import eager_attention
from .lengths import length_budget, length_settings


def figure(**kwargs) -> Figure:
    """A figure that only writes files: matplotlib's object API, no pyplot, so no global backend is chosen or
    changed for the program that imports this module."""
    return Figure(**kwargs)


def plot_losses(log_history: list[dict], path: str, title: str = "", label_smoothing: float = 0.0) -> Figure:
    """Training loss per logging step and validation loss per evaluation, from `trainer.state.log_history`; both
    are label-smoothed when the run's `label_smoothing` was, and the legend says so."""
    train = [(e["step"], e["loss"]) for e in log_history if "loss" in e]
    evaluation = [(e["step"], e["eval_loss"]) for e in log_history if "eval_loss" in e]
    smoothed = f" (label-smoothed, {label_smoothing:g})" if label_smoothing else ""
    fig = figure(figsize=(7, 4))
    ax = fig.subplots()
    if train:
        ax.plot(*zip(*train), label=f"training loss{smoothed}")
    if evaluation:
        ax.plot(*zip(*evaluation), "o-", label=f"validation loss{smoothed}")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("cross-entropy (nats/token)")
    ax.set_title(title or "TransformerMT training")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return fig


def plot_position_table(position_embedding, path: str, num_positions: int = 100, title: str = "") -> None:
    """The position x dimension heatmap of a position module's vectors (`position_embedding.table(n)`)."""
    with torch.no_grad():
        table = position_embedding.table(num_positions).float().cpu().numpy()
    limit = max(abs(table.min()), abs(table.max()))
    fig = figure(figsize=(8, 4.5))
    ax = fig.subplots()
    image = ax.imshow(table, aspect="auto", cmap="RdBu", vmin=-limit, vmax=limit, interpolation="nearest")
    ax.set_xlabel("embedding dimension")
    ax.set_ylabel("position")
    ax.set_title(title or f"{type(position_embedding).__name__} (d_model={table.shape[1]})")
    fig.colorbar(image, ax=ax)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def plot_cross_attention(
    model, tokenizer, source: str, path: str, layer: int | None = None, head: int | None = None
) -> str:
    """Translate `source` greedily and draw where each output token looked: the decoder's cross-attention weights,
    target tokens x source tokens, one panel per layer averaged over heads (or only `layer`, `head`). Returns
    the translation.

    The weights come from the eager attention kernel (sdpa does not return them), selected for this call only.
    """
    encoded = tokenizer(source, return_tensors="pt").to(model.device)
    model.eval()
    with eager_attention(model), torch.no_grad():
        generated = model.generate(
            **encoded,
            num_beams=1,
            do_sample=False,
            **length_settings(length_budget(model, encoded["input_ids"].shape[1])),
        )
        outputs = model(**encoded, decoder_input_ids=generated[:, :-1], output_attentions=True)
    layers = range(len(outputs.cross_attentions)) if layer is None else [layer]
    panels = []
    for index in layers:
        weights = outputs.cross_attentions[index][0]  # (heads, target, source)
        panels.append((index, weights.mean(0) if head is None else weights[head]))

    def labels(ids, **side):  # use_source_tokenizer: source ids, where source and target have their own vocabularies
        return [tokenizer.decode([token], **side).strip() or "␣" for token in ids]

    source_labels = labels(encoded["input_ids"][0].tolist(), use_source_tokenizer=True)
    target_labels = labels(generated[0, 1:].tolist())
    fig = figure(figsize=(0.45 * len(source_labels) * len(panels) + 2, 0.4 * len(target_labels) + 2))
    axes = fig.subplots(1, len(panels), squeeze=False)
    for ax, (index, weights) in zip(axes[0], panels):
        ax.imshow(weights.float().cpu().numpy(), cmap="Blues", vmin=0, vmax=1, aspect="auto")
        ax.set_xticks(range(len(source_labels)), source_labels, rotation=90)
        ax.set_yticks(range(len(target_labels)), target_labels)
        ax.set_title(f"layer {index}" + (" (mean over heads)" if head is None else f", head {head}"))
    axes[0][0].set_ylabel("output token")
    fig.supxlabel("source token")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return tokenizer.decode(generated[0], skip_special_tokens=True).strip()
