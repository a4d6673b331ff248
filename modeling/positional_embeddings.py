"""Positions: one module per strategy, chosen once by `build_position_embedding(config, num_heads)`.

Every strategy is a `PositionStrategy`, which names everything the model, exporters and tools may ask of one, so
that nothing else asks which one it is. `position_strategy_class(config)` gives the class a config names without
building a model; its class members answer what exporters and engines ask of a config:

- `name`: the `position_embedding_type` that selects it;
- `absolute`: True when the strategy adds vectors to the token embeddings (the paper's sinusoids, BERT's learned
  table), False when it acts in self-attention instead (ALiBi, Press et al. 2022; rotary, Su et al. 2021);
- `ctranslate2_problem`: why a CTranslate2 export cannot hold the strategy, or None when it can;
- `rotary_base`: the wavelength base self-attention rotates queries and keys by (rotary), or None;
- `position_limit(config)`: how many positions a model of `config` has (learned: the table's rows), or None for
  any length; `rotary_dim(config, num_heads)`: the dimensions of a head that rotate, or None;
- `from_config(config, num_heads)`: the strategy of a stack of `num_heads` heads.

The built module adds:

- `max_positions`: how many positions it has (`position_limit` of its config), or None for any length;
- `reserve(num_positions)`: called first with a Python int, before any kernel runs and without reading device
  tensors: the sinusoid extends its table there and learned positions reject lengths they have no row for;
- `forward(position_ids) -> (..., T, d_model)`: the vectors the embedding block adds, or None (relative);
- `table(num_positions) -> (num_positions, d_model)`: the vectors of positions 0..num_positions-1 whole, for
  exporters and plots, or None (relative);
- `self_attention_mask(mask, query_positions, key_positions, causal, dtype)`: self-attention's mask with the
  strategy's score term added (ALiBi's bias), or the mask unchanged;
- `rotation(position_ids) -> (cos, sin)`: the angles self-attention rotates queries and keys by (rotary), or None;
- `reset_buffers()`: refill the buffers derived from the config (`_init_weights` calls it: from_pretrained
  restores non-persistent buffers uninitialised).

Cross-attention gets no position term from any strategy. Callers compute `position_ids` (offset by the cache
length when decoding) in one place.
"""

import abc
import math
from typing import ClassVar

import torch
from torch import nn
from transformers import initialization as init


SINUSOID_PRECOMPUTED = 1024  # rows of the sinusoid table built with the model
ROTARY_BASE = 10000.0  # rotary's wavelength base, as in Su et al. 2021 and transformers' default RoPE


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


class PositionStrategy(nn.Module, abc.ABC):
    """The position protocol: every member the model, exporters and tools use (the module docstring says each)."""

    # What a config's strategy can do, known without building it (class members).
    name: ClassVar[str]
    absolute: ClassVar[bool]
    ctranslate2_problem: ClassVar[str | None] = None
    rotary_base: ClassVar[float | None] = None
    max_positions: int | None

    @classmethod
    def position_limit(cls, config) -> int | None:
        """How many positions a model of `config` has (its modules' `max_positions`); None for any length."""
        return None

    @classmethod
    def rotary_dim(cls, config, num_heads: int) -> int | None:
        """How many dimensions of each of `num_heads` heads self-attention rotates; None when it rotates none."""
        return None

    @classmethod
    @abc.abstractmethod
    def from_config(cls, config, num_heads: int) -> "PositionStrategy":
        """The strategy of `config` for a stack of `num_heads` heads."""

    @abc.abstractmethod
    def reserve(self, num_positions: int) -> None:
        """Make positions 0..num_positions-1 readable, or raise a ValueError naming the limit."""

    @abc.abstractmethod
    def forward(self, position_ids: torch.LongTensor) -> torch.Tensor | None:
        """(T,) or (B, T) positions -> (T or B, T, d_model) vectors to add to the embeddings; None if relative."""

    @abc.abstractmethod
    def table(self, num_positions: int) -> torch.Tensor | None:
        """(num_positions, d_model): the vectors of positions 0..num_positions-1; None if relative."""

    @abc.abstractmethod
    def self_attention_mask(
        self,
        mask: torch.Tensor | None,
        query_positions: torch.Tensor,
        key_positions: torch.Tensor,
        causal: bool,
        dtype: torch.dtype,
    ) -> torch.Tensor | None:
        """Self-attention's mask (masking_utils', or None) with this strategy's score term added, or unchanged."""

    @abc.abstractmethod
    def rotation(self, position_ids: torch.LongTensor) -> tuple[torch.Tensor, torch.Tensor] | None:
        """(cos, sin), each (B or 1, 1, T, head_dim): how self-attention rotates queries and keys; or None."""

    @abc.abstractmethod
    def reset_buffers(self) -> None:
        """Refill the buffers computed from the config (none: nothing to do)."""


class AbsolutePositions(PositionStrategy):
    """What absolute strategies share: they add vectors to the embeddings and nothing to attention."""

    absolute = True

    def self_attention_mask(self, mask, query_positions, key_positions, causal: bool, dtype) -> torch.Tensor | None:
        return mask

    def rotation(self, position_ids) -> None:
        return None


class SinusoidalPositionalEmbedding(AbsolutePositions):
    """Fixed sinusoids for any length: a cached table, grown (doubled) only when a longer input arrives."""

    name = "sinusoidal"
    max_positions = None  # no limit: the table grows with the input

    @classmethod
    def from_config(cls, config, num_heads: int) -> "SinusoidalPositionalEmbedding":
        # The table starts at most this long and grows on demand: a large max_position_embeddings costs nothing.
        initial = min(config.max_position_embeddings, SINUSOID_PRECOMPUTED)
        return cls(initial, config.d_model, config.sinusoidal_layout)

    def __init__(self, num_positions: int, embedding_dim: int, layout: str = "interleaved"):
        super().__init__()
        self.embedding_dim = embedding_dim
        self.layout = layout
        # Not persistent: derived from the config, so checkpoints stay free of it (reset_buffers refills it).
        self.register_buffer("sinusoids", self.build_table(num_positions), persistent=False)

    def build_table(self, num_positions: int, device=None, dtype=torch.float32) -> torch.Tensor:
        return sinusoid_table(num_positions, self.embedding_dim, self.layout, dtype=dtype, device=device)

    def reset_buffers(self) -> None:
        init.copy_(self.sinusoids, self.build_table(self.sinusoids.size(0), dtype=self.sinusoids.dtype))

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

    name = "learned"

    def __init__(self, num_positions: int, embedding_dim: int):
        super().__init__(num_positions, embedding_dim)
        self.max_positions = num_positions

    @classmethod
    def position_limit(cls, config) -> int:
        return config.max_position_embeddings

    @classmethod
    def from_config(cls, config, num_heads: int) -> "LearnedPositionalEmbedding":
        return cls(cls.position_limit(config), config.d_model)

    def reset_buffers(self) -> None:
        pass  # a parameter only, which the model's initialisation draws like every embedding table

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


class RelativePositions(PositionStrategy):
    """What relative strategies share: nothing added to the embeddings, no table and no length limit."""

    absolute = False
    max_positions = None

    def forward(self, position_ids: torch.LongTensor) -> None:
        return None

    def table(self, num_positions: int) -> None:
        return None

    def reserve(self, num_positions: int) -> None:
        pass

    def self_attention_mask(self, mask, query_positions, key_positions, causal: bool, dtype) -> torch.Tensor | None:
        return mask

    def rotation(self, position_ids) -> tuple[torch.Tensor, torch.Tensor] | None:
        return None


def alibi_slopes(num_heads: int) -> torch.Tensor:
    """ALiBi's per-head slopes: the geometric sequence 2^(-8/n), 2^(-16/n), ... for n a power of two; otherwise
    those of the power of two below, then every other slope of the one above (Press et al. 2022, appendix)."""
    closest = 2 ** math.floor(math.log2(num_heads))
    slopes = [2 ** (-8 * (i + 1) / closest) for i in range(closest)]
    slopes += [2 ** (-8 * (2 * i + 1) / (2 * closest)) for i in range(num_heads - closest)]
    return torch.tensor(slopes, dtype=torch.float32)


class AlibiPositionBias(RelativePositions):
    """ALiBi: self-attention scores get -slope_h x (query position - key position), a fixed slope per head;
    symmetric (the distance's absolute value) in the encoder, causal in the decoder."""

    name = "alibi"
    ctranslate2_problem = "CTranslate2 applies ALiBi in decoders only, and this model's encoder uses it too"

    def __init__(self, num_heads: int):
        super().__init__()
        # Not persistent, like the sinusoids: derived from the config and refilled by reset_buffers.
        self.register_buffer("slopes", alibi_slopes(num_heads), persistent=False)

    @classmethod
    def from_config(cls, config, num_heads: int) -> "AlibiPositionBias":
        return cls(num_heads)

    def reset_buffers(self) -> None:
        init.copy_(self.slopes, alibi_slopes(self.slopes.numel()))

    def attention_bias(self, query_positions, key_positions, causal: bool) -> torch.Tensor:
        # positions: (T,) / (S,) or (B, T) / (B, S) -> distance (1 or B, 1, T, S)
        distance = query_positions[..., :, None] - key_positions[..., None, :]
        distance = distance if distance.dim() == 3 else distance[None]
        if not causal:
            distance = distance.abs()  # future keys of a causal query are masked; their sign does not matter
        return -self.slopes[None, :, None, None] * distance[:, None].to(self.slopes.dtype)

    def self_attention_mask(self, mask, query_positions, key_positions, causal: bool, dtype) -> torch.Tensor:
        """An additive (B or 1, H, T, S) mask: masking_utils' mask (bool, additive, or None where sdpa needs none)
        plus the bias. A None causal mask means the queries are the last T keys and sdpa would have masked the
        later keys itself (`is_causal`): that is done here instead."""
        minimum = torch.finfo(dtype).min
        bias = self.attention_bias(query_positions, key_positions, causal).to(dtype)
        if mask is None:
            if causal:
                query_length, key_length = bias.shape[-2:]
                later = (
                    torch.ones(query_length, key_length, dtype=torch.bool, device=bias.device)
                    .tril(key_length - query_length)
                    .logical_not()
                )
                bias = bias.masked_fill(later, minimum)
            return bias
        if mask.dtype == torch.bool:
            return bias.masked_fill(~mask, minimum)
        return (mask.to(dtype) + bias).clamp(min=minimum)


class RotaryPositionEmbedding(RelativePositions):
    """Rotary positions: each pair of query/key dimensions (i, i + D/2) rotated by position x base^(-2i/D), so
    that their dot product depends only on the distance (GPT-NeoX's half-split layout, as in transformers)."""

    name = "rotary"
    rotary_base = ROTARY_BASE

    def __init__(self, head_dim: int):
        super().__init__()
        self.head_dim = head_dim
        self.register_buffer("inv_freq", self.build_inv_freq(), persistent=False)

    @classmethod
    def rotary_dim(cls, config, num_heads: int) -> int:
        return config.d_model // num_heads  # the whole head

    @classmethod
    def from_config(cls, config, num_heads: int) -> "RotaryPositionEmbedding":
        return cls(cls.rotary_dim(config, num_heads))

    def build_inv_freq(self, device=None) -> torch.Tensor:
        exponents = torch.arange(0, self.head_dim, 2, dtype=torch.float64, device=device) / self.head_dim
        return (self.rotary_base**-exponents).float()

    def reset_buffers(self) -> None:
        init.copy_(self.inv_freq, self.build_inv_freq())

    def rotation(self, position_ids) -> tuple[torch.Tensor, torch.Tensor]:
        angles = position_ids[..., None].float() * self.inv_freq  # (B or 1, T, D/2)
        angles = torch.cat((angles, angles), dim=-1)
        angles = angles if angles.dim() == 3 else angles[None]
        return angles.cos()[:, None], angles.sin()[:, None]  # (B or 1, 1, T, D): broadcast over heads


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary positions applied to (B, H, T, D) queries or keys."""
    first, second = x.chunk(2, dim=-1)
    return (x * cos + torch.cat((-second, first), dim=-1) * sin).to(x.dtype)


# Every strategy by its `position_embedding_type`, in the config's order of the types.
POSITION_STRATEGIES: dict[str, type[PositionStrategy]] = {
    strategy.name: strategy
    for strategy in (
        SinusoidalPositionalEmbedding,
        LearnedPositionalEmbedding,
        AlibiPositionBias,
        RotaryPositionEmbedding,
    )
}


def position_strategy_class(config) -> type[PositionStrategy]:
    """The strategy class `config.position_embedding_type` names: its class members say what a model of `config`
    does with positions, without building one."""
    return POSITION_STRATEGIES[config.position_embedding_type]


def build_position_embedding(config, num_heads: int) -> PositionStrategy:
    """The position strategy named by `config.position_embedding_type`, for a stack of `num_heads` heads."""
    return position_strategy_class(config).from_config(config, num_heads)
