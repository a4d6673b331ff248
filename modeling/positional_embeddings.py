"""Position embeddings: one module per strategy, one call signature `position_ids -> (..., T, d_model)`.

`build_position_embedding(config)` is the one place that picks the strategy. Callers compute `position_ids`
(offset by the cache length when decoding) and call `reserve(num_positions)` first, with a Python int:
the sinusoid extends its table there and learned positions reject lengths they have no row for, before any
kernel runs and without reading device tensors. `table(num_positions)` gives the vectors of positions
0..num_positions-1 to whoever needs them whole (exporters, plots).
"""

import math

import torch
from torch import nn


def sinusoid_table(num_positions: int, dim: int, layout: str = "interleaved", dtype=torch.float32, device=None):
    """The paper's PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d)).

    layout="interleaved" places sin/cos in even/odd dimensions (the paper); "concatenated" places the
    sines in the first half and the cosines in the second (Marian). Computed in float64, then cast.
    """
    position = torch.arange(num_positions, dtype=torch.float64, device=device).unsqueeze(1)  # (N, 1)
    inv_freq = torch.exp(torch.arange(0, dim, 2, dtype=torch.float64, device=device) * (-math.log(10000.0) / dim))
    angles = position * inv_freq  # (N, d/2)
    if layout == "interleaved":
        table = torch.stack((angles.sin(), angles.cos()), dim=-1).flatten(1)  # (N, d/2, 2) -> (N, d)
    else:
        table = torch.cat((angles.sin(), angles.cos()), dim=-1)
    return table.to(dtype)


class SinusoidalPositionalEmbedding(nn.Module):
    """Fixed sinusoids for any length: a cached table, grown (doubled) only when a longer input arrives."""

    max_positions = None  # no limit: the table grows with the input

    def __init__(self, num_positions: int, embedding_dim: int, layout: str = "interleaved"):
        super().__init__()
        self.embedding_dim = embedding_dim
        self.layout = layout
        # Not persistent: derived from the config, so checkpoints stay free of it. PreTrainedModel._init_weights
        # refills it after from_pretrained (which restores non-persistent buffers uninitialised).
        self.register_buffer("sinusoids", self.build_table(num_positions), persistent=False)

    def build_table(self, num_positions: int, device=None, dtype=torch.float32) -> torch.Tensor:
        return sinusoid_table(num_positions, self.embedding_dim, self.layout, dtype=dtype, device=device)

    def reserve(self, num_positions: int) -> None:
        if num_positions > self.sinusoids.size(0):
            size = max(num_positions, 2 * self.sinusoids.size(0))
            self.sinusoids = self.build_table(size, device=self.sinusoids.device, dtype=self.sinusoids.dtype)

    def table(self, num_positions: int) -> torch.Tensor:
        self.reserve(num_positions)
        return self.sinusoids[:num_positions]

    def forward(self, position_ids: torch.LongTensor) -> torch.Tensor:
        return nn.functional.embedding(position_ids, self.sinusoids)


class LearnedPositionalEmbedding(nn.Embedding):
    """A trained vector per position (BERT, BART), limited to `num_positions`."""

    def __init__(self, num_positions: int, embedding_dim: int):
        super().__init__(num_positions, embedding_dim)
        self.max_positions = num_positions

    def reserve(self, num_positions: int) -> None:
        if num_positions > self.max_positions:
            raise ValueError(
                f"The input needs {num_positions} positions (with the cache when decoding; a static cache counts "
                f"its whole length) but learned position embeddings have only max_position_embeddings="
                f"{self.max_positions}. Shorten the input or the generation, or use "
                "position_embedding_type='sinusoidal', which has no length limit."
            )

    def table(self, num_positions: int) -> torch.Tensor:
        self.reserve(num_positions)
        return self.weight[:num_positions]


def build_position_embedding(config) -> nn.Module:
    """The position strategy named by `config.position_embedding_type`."""
    if config.position_embedding_type == "learned":
        return LearnedPositionalEmbedding(config.max_position_embeddings, config.d_model)
    return SinusoidalPositionalEmbedding(config.max_position_embeddings, config.d_model, config.sinusoidal_layout)
