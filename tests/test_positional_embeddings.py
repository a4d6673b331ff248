import math

import pytest
import torch

from transformer_mt.modeling.positional_embeddings import (
    POSITION_STRATEGIES,
    AlibiPositionBias,
    LearnedPositionalEmbedding,
    PositionStrategy,
    RotaryPositionEmbedding,
    SinusoidalPositionalEmbedding,
    alibi_slopes,
    build_position_embedding,
    position_strategy_class,
    rotate,
    sinusoid_table,
)

from .utils import ABSOLUTE_POSITION_TYPES, POSITION_TYPES, RELATIVE_POSITION_TYPES, tiny_config


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
    assert isinstance(build_position_embedding(tiny_config(), 4), SinusoidalPositionalEmbedding)
    learned = build_position_embedding(tiny_config(position_embedding_type="learned"), 4)
    assert isinstance(learned, LearnedPositionalEmbedding) and learned.weight.shape == (64, 32)
    concatenated = build_position_embedding(tiny_config(sinusoidal_layout="concatenated"), 4)
    torch.testing.assert_close(concatenated.table(64), sinusoid_table(64, 32, "concatenated"), rtol=0, atol=0)
    alibi = build_position_embedding(tiny_config(position_embedding_type="alibi"), 4)
    assert isinstance(alibi, AlibiPositionBias) and alibi.slopes.shape == (4,)
    rotary = build_position_embedding(tiny_config(position_embedding_type="rotary"), 4)
    assert isinstance(rotary, RotaryPositionEmbedding) and rotary.head_dim == 8


@pytest.mark.parametrize("position_type", POSITION_TYPES)
def test_every_strategy_keeps_the_protocol(position_type):
    strategy = build_position_embedding(tiny_config(position_embedding_type=position_type), 4)
    assert isinstance(strategy, PositionStrategy)
    positions, mask = torch.arange(3), torch.zeros(1, 1, 3, 3)
    strategy.reserve(3)
    if strategy.absolute:  # vectors for the embeddings; nothing for attention
        assert strategy(positions).shape == (3, 32) and strategy.table(3).shape == (3, 32)
        assert strategy.self_attention_mask(mask, positions, positions, causal=True, dtype=torch.float32) is mask
        assert strategy.rotation(positions) is None
    else:  # nothing for the embeddings, no table, no length limit; a term in self-attention
        assert strategy(positions) is None and strategy.table(3) is None and strategy.max_positions is None


@pytest.mark.parametrize("position_type", POSITION_TYPES)
def test_the_class_members_say_what_the_built_strategy_does(position_type):
    """Exporters and engines read a config's capabilities from position_strategy_class without building a model;
    the model built from the same config does what they say."""
    config = tiny_config(position_embedding_type=position_type, max_position_embeddings=48)
    strategy_class = position_strategy_class(config)
    strategy = build_position_embedding(config, 4)
    assert type(strategy) is strategy_class and strategy_class.name == position_type
    assert strategy.absolute == strategy_class.absolute
    assert strategy.max_positions == strategy_class.position_limit(config)
    rotary_dim = strategy_class.rotary_dim(config, 4)
    assert (rotary_dim is None) == (strategy_class.rotary_base is None)
    rotation = strategy.rotation(torch.arange(3))
    assert rotation is None if rotary_dim is None else rotation[0].shape == (1, 1, 3, rotary_dim)
    assert strategy_class.ctranslate2_problem is None or strategy_class.ctranslate2_problem.strip()


def test_every_configurable_type_has_one_strategy():
    assert list(POSITION_STRATEGIES) == POSITION_TYPES  # the config's order: messages list them so
    assert [
        position_strategy_class(tiny_config(position_embedding_type=name)).name for name in POSITION_TYPES
    ] == POSITION_TYPES


@pytest.mark.parametrize("position_type", POSITION_TYPES)
def test_reset_buffers_refills_what_the_strategy_derives_from_the_config(position_type):
    strategy = build_position_embedding(tiny_config(position_embedding_type=position_type), 4)
    expected = {name: buffer.clone() for name, buffer in strategy.named_buffers()}
    assert bool(expected) != (position_type == "learned")  # learned positions are a parameter, nothing derived
    for buffer in strategy.buffers():
        buffer.zero_()  # what from_pretrained leaves in a non-persistent buffer: anything
    strategy.reset_buffers()
    for name, buffer in strategy.named_buffers():
        torch.testing.assert_close(buffer, expected[name], rtol=0, atol=0)


@pytest.mark.parametrize("position_type", ABSOLUTE_POSITION_TYPES)
def test_every_strategy_gives_its_table_through_one_method(position_type):
    module = build_position_embedding(tiny_config(position_embedding_type=position_type), 4)
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


def test_alibi_slopes_are_the_papers():
    # Press et al. 2022: 2^(-8/n), 2^(-16/n), ... for n heads, n a power of two.
    assert alibi_slopes(8).tolist() == [2 ** -(i + 1) for i in range(8)]
    assert alibi_slopes(4).tolist() == [2**-2, 2**-4, 2**-6, 2**-8]
    # 6 heads: the 4-head slopes, then the odd ones of the 8-head sequence (their reference code).
    assert alibi_slopes(6).tolist() == pytest.approx([2**-2, 2**-4, 2**-6, 2**-8, 2**-1, 2**-3])


def test_alibi_bias_is_minus_slope_times_distance():
    module = AlibiPositionBias(2)
    queries, keys = torch.tensor([0, 1, 2]), torch.tensor([0, 1, 2])
    symmetric = module.attention_bias(queries, keys, causal=False)
    assert symmetric.shape == (1, 2, 3, 3)
    expected = -torch.tensor([0.0625, 0.00390625])[:, None, None] * (queries[:, None] - keys[None]).abs()
    torch.testing.assert_close(symmetric[0], expected, rtol=0, atol=0)
    causal = module.attention_bias(torch.tensor([[5, 6]]), torch.arange(7)[None], causal=True)  # two new tokens
    assert causal.shape == (1, 2, 2, 7) and causal[0, 0, 1, 6] == 0 and causal[0, 0, 1, 0] == -0.0625 * 6


def test_rotary_scores_depend_only_on_the_distance():
    module = RotaryPositionEmbedding(8)
    generator = torch.Generator().manual_seed(0)
    query, key = torch.randn(1, 1, 1, 8, generator=generator), torch.randn(1, 1, 1, 8, generator=generator)

    def score(query_position, key_position):
        q = rotate(query, *module.rotation(torch.tensor([query_position])))
        k = rotate(key, *module.rotation(torch.tensor([key_position])))
        return float((q * k).sum())

    assert score(5, 2) == pytest.approx(score(105, 102), abs=1e-4)
    assert score(5, 2) != pytest.approx(score(5, 4), abs=1e-3)
    assert score(0, 0) == pytest.approx(float((query * key).sum()), abs=1e-6)  # position 0: no rotation
    # the half-split layout: dimension i pairs with i + D/2 at angle position x 10000^(-2i/D)
    cos, sin = module.rotation(torch.tensor([3]))
    assert cos.shape == (1, 1, 1, 8)
    assert cos[0, 0, 0, 1].item() == pytest.approx(math.cos(3 * 10000 ** (-2 / 8)), abs=1e-6)
    assert cos[0, 0, 0, 5].item() == pytest.approx(cos[0, 0, 0, 1].item())


@pytest.mark.parametrize("position_type", RELATIVE_POSITION_TYPES)
def test_relative_strategies_act_in_self_attention_only(position_type):
    strategy = build_position_embedding(tiny_config(position_embedding_type=position_type), 4)
    positions = torch.arange(3)
    biased = strategy.self_attention_mask(None, positions, positions, causal=False, dtype=torch.float32)
    assert (biased is not None) == (position_type == "alibi")
    assert (strategy.rotation(positions) is not None) == (position_type == "rotary")


def test_alibi_adds_its_bias_to_every_kind_of_mask():
    module, minimum = AlibiPositionBias(2), torch.finfo(torch.float32).min
    queries, keys = torch.arange(3), torch.arange(3)
    bias = module.attention_bias(queries, keys, causal=True)  # (1, 2, 3, 3)
    allowed = torch.ones(3, 3, dtype=torch.bool).tril()
    # No mask (sdpa's is_causal case): the later keys are masked here.
    merged = module.self_attention_mask(None, queries, keys, causal=True, dtype=torch.float32)
    torch.testing.assert_close(merged, bias.masked_fill(~allowed, minimum), rtol=0, atol=0)
    # A bool mask (True: attend) and an additive one give the same mask.
    from_bool = module.self_attention_mask(allowed[None, None], queries, keys, causal=True, dtype=torch.float32)
    additive = torch.zeros(1, 1, 3, 3).masked_fill(~allowed, minimum)
    from_additive = module.self_attention_mask(additive, queries, keys, causal=True, dtype=torch.float32)
    torch.testing.assert_close(from_bool, merged, rtol=0, atol=0)
    torch.testing.assert_close(from_additive, merged, rtol=0, atol=0)  # clamped: no -inf from min + bias
    # The encoder's bidirectional case: no mask stays a bias over every key.
    symmetric = module.self_attention_mask(None, queries, keys, causal=False, dtype=torch.float32)
    torch.testing.assert_close(symmetric, module.attention_bias(queries, keys, causal=False), rtol=0, atol=0)
