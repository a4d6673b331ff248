"""PNG plots for the main job: the loss curves of a training run and the sinusoidal encoding's "barcode"."""

import matplotlib


matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

from transformer_mt.modeling.positional_embeddings import sinusoid_table  # noqa: E402


def plot_losses(log_history: list[dict], path: str, title: str = "") -> None:
    """Training loss per logging step and validation loss per evaluation, from `trainer.state.log_history`."""
    train = [(e["step"], e["loss"]) for e in log_history if "loss" in e]
    evaluation = [(e["step"], e["eval_loss"]) for e in log_history if "eval_loss" in e]
    fig, ax = plt.subplots(figsize=(7, 4))
    if train:
        ax.plot(*zip(*train), label="training loss (label-smoothed)")
    if evaluation:
        ax.plot(*zip(*evaluation), "o-", label="validation loss (label-smoothed)")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("cross-entropy (nats/token)")
    ax.set_title(title or "TransformerMT training")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_sinusoid(path: str, num_positions: int = 100, d_model: int = 512, layout: str = "interleaved") -> None:
    """The position x dimension heatmap of PE(pos, 2i) = sin(pos/10000^(2i/d)), PE(pos, 2i+1) = cos(...)."""
    table = sinusoid_table(num_positions, d_model, layout).numpy()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    image = ax.imshow(table, aspect="auto", cmap="RdBu", vmin=-1, vmax=1, interpolation="nearest")
    ax.set_xlabel("embedding dimension")
    ax.set_ylabel("position")
    ax.set_title(f"Sinusoidal positional encoding ({layout}, d_model={d_model})")
    fig.colorbar(image, ax=ax)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
