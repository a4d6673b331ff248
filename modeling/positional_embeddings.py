"""Positions: one module per strategy, chosen once by `build_position_embedding(config, num_heads)`.

Every strategy answers the same three questions, so that nothing else asks which one it is:

- `forward(position_ids) -> (..., T, d_model)`: the vectors the embedding block adds to the token embeddings;
  absolute strategies only (`absolute` is True): the paper's sinusoids and BERT's learned table;
- `attention_bias(query_positions, key_positions, causal) -> (B or 1, H, T, S)`: what self-attention adds to its
  scores (ALiBi, Press et al. 2022), or None;
- `rotation(position_ids) -> (cos, sin)`: the angles self-attention rotates queries and keys by (rotary, Su et
  al. 2021), or None.

Cross-attention gets no position term from any strategy. Callers compute `position_ids` (offset by the cache
length when decoding) in one place and call `reserve(num_positions)` first, with a Python int: the sinusoid
extends its table there and learned positions reject lengths they have no row for, before any kernel runs and
without reading device tensors. `table(num_positions)` gives the vectors of absolute positions 0..num_positions-1
to whoever needs them whole (exporters, plots).
"""

import math

import torch
from torch import nn


SINUSOID_PRECOMPUTED = 1024  # rows of the sinusoid table built with the model


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


class AbsolutePositions(nn.Module):
    """What absolute strategies share: they add vectors to the embeddings and nothing to attention."""

    absolute = True

    def attention_bias(self, query_positions, key_positions, causal: bool) -> None:
        return None

    def rotation(self, position_ids) -> None:
        return None


class SinusoidalPositionalEmbedding(AbsolutePositions):
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


class LearnedPositionalEmbedding(nn.Embedding, AbsolutePositions):
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


def alibi_slopes(num_heads: int) -> torch.Tensor:
    """ALiBi's per-head slopes: the geometric sequence 2^(-8/n), 2^(-16/n), ... for n a power of two; otherwise
    those of the power of two below, then every other slope of the one above (Press et al. 2022, appendix)."""
    closest = 2 ** math.floor(math.log2(num_heads))
    slopes = [2 ** (-8 * (i + 1) / closest) for i in range(closest)]
    slopes += [2 ** (-8 * (2 * i + 1) / (2 * closest)) for i in range(num_heads - closest)]
    return torch.tensor(slopes, dtype=torch.float32)


class RelativePositions(nn.Module):
    """What relative strategies share: nothing added to the embeddings, no table and no length limit."""

    absolute = False
    max_positions = None

    def forward(self, position_ids: torch.LongTensor) -> None:
        return None

    def reserve(self, num_positions: int) -> None:
        pass

    def attention_bias(self, query_positions, key_positions, causal: bool) -> torch.Tensor | None:
        return None

    def rotation(self, position_ids) -> tuple[torch.Tensor, torch.Tensor] | None:
        return None


class AlibiPositionBias(RelativePositions):
    """ALiBi: self-attention scores get -slope_h x (query position - key position), a fixed slope per head;
    symmetric (the distance's absolute value) in the encoder, causal in the decoder."""

    def __init__(self, num_heads: int):
        super().__init__()
        # Not persistent, like the sinusoids: derived from the config and refilled by _init_weights.
        self.register_buffer("slopes", alibi_slopes(num_heads), persistent=False)

    def attention_bias(self, query_positions, key_positions, causal: bool) -> torch.Tensor:
        # positions: (T,) / (S,) or (B, T) / (B, S) -> distance (1 or B, 1, T, S)
        distance = query_positions[..., :, None] - key_positions[..., None, :]
        distance = distance if distance.dim() == 3 else distance[None]
        if not causal:
            distance = distance.abs()  # future keys of a causal query are masked; their sign does not matter
        return -self.slopes[None, :, None, None] * distance[:, None].to(self.slopes.dtype)


class RotaryPositionEmbedding(RelativePositions):
    """Rotary positions: each pair of query/key dimensions (i, i + D/2) rotated by position x base^(-2i/D), so
    that their dot product depends only on the distance (GPT-NeoX's half-split layout, as in transformers)."""

    base = 10000.0

    def __init__(self, head_dim: int):
        super().__init__()
        self.head_dim = head_dim
        self.register_buffer("inv_freq", self.build_inv_freq(), persistent=False)

    def build_inv_freq(self, device=None) -> torch.Tensor:
        exponents = torch.arange(0, self.head_dim, 2, dtype=torch.float64, device=device) / self.head_dim
        return (self.base ** -exponents).float()

    def rotation(self, position_ids) -> tuple[torch.Tensor, torch.Tensor]:
        angles = position_ids[..., None].float() * self.inv_freq  # (B or 1, T, D/2)
        angles = torch.cat((angles, angles), dim=-1)
        angles = angles if angles.dim() == 3 else angles[None]
        return angles.cos()[:, None], angles.sin()[:, None]  # (B or 1, 1, T, D): broadcast over heads


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary positions applied to (B, H, T, D) queries or keys."""
    first, second = x.chunk(2, dim=-1)
    return (x * cos + torch.cat((-second, first), dim=-1) * sin).to(x.dtype)


def build_position_embedding(config, num_heads: int) -> nn.Module:
    """The position strategy named by `config.position_embedding_type`, for a stack of `num_heads` heads."""
    if config.position_embedding_type == "learned":
        return LearnedPositionalEmbedding(config.max_position_embeddings, config.d_model)
    if config.position_embedding_type == "alibi":
        return AlibiPositionBias(num_heads)
    if config.position_embedding_type == "rotary":
        return RotaryPositionEmbedding(config.d_model // num_heads)
    # The sinusoid table starts at most this long and grows on demand: a large max_position_embeddings costs nothing.
    initial = min(config.max_position_embeddings, SINUSOID_PRECOMPUTED)
    return SinusoidalPositionalEmbedding(initial, config.d_model, config.sinusoidal_layout)
