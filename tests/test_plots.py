"""The figures: losses, position tables, cross-attention maps."""

import os
import subprocess
import sys

import pytest
import torch

from transformer_mt.modeling.positional_embeddings import build_position_embedding
from transformer_mt.plots import plot_cross_attention, plot_losses, plot_position_table

from .utils import SENTENCES, save_tiny, tiny_config


def test_loss_and_position_figures(tmp_path):
    plot_losses(
        [
            {"step": 5, "loss": 3.0},
            {
                "step": 10,
                "loss": 2.0,
            },
            {"step": 10, "eval_loss": 2.5},
        ],
        str(tmp_path / "loss.png"),
    )
    for kind, positions in (("sinusoidal", 100), ("learned", 64)):  # a sinusoid has no table limit; 64 rows learned
        strategy = build_position_embedding(tiny_config(position_embedding_type=kind), num_heads=4)
        plot_position_table(strategy, str(tmp_path / f"{kind}.png"), num_positions=positions)
    assert all((tmp_path / name).stat().st_size > 5_000 for name in ("loss.png", "sinusoidal.png", "learned.png"))


def test_cross_attention_map_draws_every_layer_and_leaves_the_model_as_it_was(tmp_path):
    model, tokenizer = save_tiny(tmp_path / "model")
    model.generation_config.max_length = 6
    before = model.config._attn_implementation
    translation = plot_cross_attention(model, tokenizer, SENTENCES[0], str(tmp_path / "attention.png"))
    assert isinstance(translation, str) and (tmp_path / "attention.png").stat().st_size > 5_000
    assert model.config._attn_implementation == before
    plot_cross_attention(model, tokenizer, SENTENCES[2], str(tmp_path / "head.png"), layer=1, head=0)
    assert (tmp_path / "head.png").exists()
    assert torch.is_grad_enabled()


def test_the_loss_legend_says_label_smoothed_only_when_it_was(tmp_path):
    history = [{"step": 5, "loss": 3.0}, {"step": 10, "eval_loss": 2.5}]
    plain = plot_losses(history, str(tmp_path / "plain.png"))
    assert plain.axes[0].get_legend_handles_labels()[1] == ["training loss", "validation loss"]
    smoothed = plot_losses(history, str(tmp_path / "smoothed.png"), label_smoothing=0.1)
    assert smoothed.axes[0].get_legend_handles_labels()[1] == [
        "training loss (label-smoothed, 0.1)",
        "validation loss (label-smoothed, 0.1)",
    ]


@pytest.mark.slow  # over 3 s on 2 cores: the fast loop keeps under 3 minutes
def test_importing_the_plots_leaves_matplotlibs_backend_alone():
    code = "import transformer_mt.plots, matplotlib; print(matplotlib.get_backend())"
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, MPLBACKEND="pdf"),
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "pdf"
