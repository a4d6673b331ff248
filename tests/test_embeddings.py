import math

import pytest
import torch

from transformer_mt.modeling.embeddings import TransformerMTEmbeddings
from transformer_mt.modeling.positional_embeddings import sinusoid_table

from .utils import ABSOLUTE_POSITION_TYPES, RELATIVE_POSITION_TYPES, tiny_config


def make(**overrides):
    torch.manual_seed(0)
    config = tiny_config(dropout=0.0, **overrides)
    return TransformerMTEmbeddings(config, config.vocab_size, config.encoder_attention_heads).eval(), config


def test_recipe_token_times_scale_plus_segment_plus_position():
    module, config = make()
    ids = torch.tensor([[5, 6, 7]])
    segments = torch.tensor([[0, 1, 1]])
    expected = (
        module.embed_tokens(ids) * math.sqrt(config.d_model)
        + module.token_type_embeddings(segments)
        + sinusoid_table(3, config.d_model)
    )
    torch.testing.assert_close(module(ids, segments), expected, rtol=0, atol=1e-6)


def test_token_type_ids_change_the_output_and_absent_means_segment_zero(position_type):
    module, _ = make(position_embedding_type=position_type)
    ids = torch.tensor([[5, 6, 7, 8]])
    zeros = module(ids, torch.zeros_like(ids))
    torch.testing.assert_close(module(ids), zeros, rtol=0, atol=0)
    ones = module(ids, torch.tensor([[0, 0, 1, 1]]))
    torch.testing.assert_close(ones[:, :2], zeros[:, :2], rtol=0, atol=0)
    assert not torch.allclose(ones[:, 2:], zeros[:, 2:])


def test_type_vocab_size_zero_ignores_token_type_ids():
    module, _ = make(type_vocab_size=0)
    assert module.token_type_embeddings is None
    ids = torch.tensor([[5, 6, 7]])
    torch.testing.assert_close(module(ids, torch.tensor([[0, 1, 5]])), module(ids), rtol=0, atol=0)


@pytest.mark.parametrize("position_type", ABSOLUTE_POSITION_TYPES)
def test_positions_continue_from_the_cache_offset(position_type):
    module, _ = make(position_embedding_type=position_type)
    ids = torch.tensor([[5, 6, 7, 8, 9]])
    full = module(ids)
    step = module(ids[:, 3:4], position_ids=torch.arange(1) + 3)
    torch.testing.assert_close(step, full[:, 3:4], rtol=0, atol=0)
    tensor_offset = module(ids[:, 3:4], position_ids=torch.arange(1) + torch.tensor(3))  # a static cache's offset
    torch.testing.assert_close(tensor_offset, full[:, 3:4], rtol=0, atol=0)


@pytest.mark.parametrize("position_type", RELATIVE_POSITION_TYPES)
def test_relative_positions_add_nothing_to_the_embeddings(position_type):
    module, config = make(position_embedding_type=position_type)
    ids, segments = torch.tensor([[5, 6, 7]]), torch.tensor([[0, 1, 1]])
    expected = module.embed_tokens(ids) * math.sqrt(config.d_model) + module.token_type_embeddings(segments)
    torch.testing.assert_close(module(ids, segments, position_ids=torch.tensor([7, 8, 9])), expected, rtol=0, atol=0)


@pytest.mark.parametrize("position_type", ABSOLUTE_POSITION_TYPES)
def test_given_position_ids_replace_the_default_per_row(position_type):
    module, _ = make(position_embedding_type=position_type)
    ids = torch.tensor([[5, 6, 7, 8], [9, 5, 6, 7]])
    full = module(ids)
    torch.testing.assert_close(module(ids, position_ids=torch.arange(4)), full, rtol=0, atol=0)
    shifted = module(ids, position_ids=torch.tensor([[0, 1, 2, 3], [0, 0, 1, 2]]))  # row 1: left-padded by one
    torch.testing.assert_close(shifted[0], full[0], rtol=0, atol=0)
    torch.testing.assert_close(shifted[1, 1:], module(ids[1:, 1:])[0], rtol=0, atol=0)


def test_layernorm_embedding_normalises_the_sum():
    module, _ = make(layernorm_embedding=True)
    out = module(torch.tensor([[5, 6, 7]]))
    torch.testing.assert_close(out.mean(-1), torch.zeros(1, 3), rtol=0, atol=1e-5)
    torch.testing.assert_close(out.var(-1, unbiased=False), torch.ones(1, 3), rtol=0, atol=1e-3)
