import math

import pytest
import torch

from transformer_mt.modeling.positional_embeddings import (
    LearnedPositionalEmbedding,
    SinusoidalPositionalEmbedding,
    build_position_embedding,
    sinusoid_table,
)

from .utils import tiny_config


def paper_formula(pos: int, dim: int, d_model: int) -> float:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d)), in float64."""
    i = dim // 2
    angle = pos / 10000 ** (2 * i / d_model)
    return math.sin(angle) if dim % 2 == 0 else math.cos(angle)


@pytest.mark.parametrize("pos", [0, 1, 7, 63, 500, 4097])
@pytest.mark.parametrize("dim", [0, 1, 2, 3, 30, 31, 62, 63])
def test_interleaved_sinusoid_golden_values(pos, dim):
    table = sinusoid_table(4100, 64, "interleaved", dtype=torch.float64)
    assert table[pos, dim].item() == pytest.approx(paper_formula(pos, dim, 64), abs=1e-12)


def test_concatenated_layout_is_sines_then_cosines():
    d = 16
    interleaved = sinusoid_table(50, d, "interleaved", dtype=torch.float64)
    concatenated = sinusoid_table(50, d, "concatenated", dtype=torch.float64)
    torch.testing.assert_close(concatenated[:, : d // 2], interleaved[:, 0::2], rtol=0, atol=0)
    torch.testing.assert_close(concatenated[:, d // 2 :], interleaved[:, 1::2], rtol=0, atol=0)
    assert concatenated[3, 1].item() == pytest.approx(math.sin(3 / 10000 ** (2 / d)), abs=1e-12)


def test_sinusoid_works_for_any_length_and_grows_its_cached_table_once():
    module = SinusoidalPositionalEmbedding(64, 32)
    length = 3 * 64
    module.reserve(length)
    grown = module.sinusoids
    assert grown.size(0) >= length
    out = module(torch.arange(length))
    expected = torch.tensor([[paper_formula(p, i, 32) for i in range(32)] for p in range(length)])
    torch.testing.assert_close(out, expected, rtol=0, atol=1e-6)
    module.reserve(length - 1)  # shorter inputs reuse the cached table
    assert module.sinusoids is grown


def test_learned_positions_past_the_limit_raise_the_documented_error():
    module = LearnedPositionalEmbedding(64, 32)
    module.reserve(64)
    with pytest.raises(ValueError, match=r"needs 65 positions .* max_position_embeddings=64"):
        module.reserve(65)


def test_factory_picks_the_configured_strategy():
    assert isinstance(build_position_embedding(tiny_config()), SinusoidalPositionalEmbedding)
    learned = build_position_embedding(tiny_config(position_embedding_type="learned"))
    assert isinstance(learned, LearnedPositionalEmbedding) and learned.weight.shape == (64, 32)
    concatenated = build_position_embedding(tiny_config(sinusoidal_layout="concatenated"))
    torch.testing.assert_close(concatenated.table(64), sinusoid_table(64, 32, "concatenated"), rtol=0, atol=0)


def test_every_strategy_gives_its_table_through_one_method(position_type):
    module = build_position_embedding(tiny_config(position_embedding_type=position_type))
    table = module.table(40)
    assert table.shape == (40, 32)
    torch.testing.assert_close(module(torch.arange(40)), table, rtol=0, atol=0)
    if position_type == "sinusoidal":
        assert module.max_positions is None
        assert module.table(200).shape == (200, 32)  # any length
        torch.testing.assert_close(module.table(200)[:40], table, rtol=0, atol=0)
    else:
        assert module.max_positions == 64
        with pytest.raises(ValueError, match="max_position_embeddings=64"):
            module.table(65)
