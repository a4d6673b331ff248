"""PNG figures: the loss curves of a training run and a position embedding's table (the sinusoid's "barcode")."""

import matplotlib


matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402


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


def plot_position_table(position_embedding, path: str, num_positions: int = 100, title: str = "") -> None:
    """The position x dimension heatmap of a position module's vectors (`position_embedding.table(n)`)."""
    with torch.no_grad():
        table = position_embedding.table(num_positions).float().cpu().numpy()
    limit = max(abs(table.min()), abs(table.max()))
    fig, ax = plt.subplots(figsize=(8, 4.5))
    image = ax.imshow(table, aspect="auto", cmap="RdBu", vmin=-limit, vmax=limit, interpolation="nearest")
    ax.set_xlabel("embedding dimension")
    ax.set_ylabel("position")
    ax.set_title(title or f"{type(position_embedding).__name__} (d_model={table.shape[1]})")
    fig.colorbar(image, ax=ax)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
