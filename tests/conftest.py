"""Tiny configs and models shared by the tests: CPU, seeded, no network."""

import pytest
import torch

import transformer_mt  # noqa: F401  (registers the Auto classes)
from transformer_mt import TransformerMTConfig, TransformerMTForConditionalGeneration


POSITION_TYPES = ["sinusoidal", "learned"]


def tiny_config(**overrides) -> TransformerMTConfig:
    kwargs = dict(
        vocab_size=99,
        d_model=32,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_position_embeddings=64,
        dropout=0.1,
        attention_dropout=0.1,
        activation_dropout=0.1,
    )
    kwargs.update(overrides)
    return TransformerMTConfig(**kwargs)


def tiny_model(seed: int = 0, **overrides) -> TransformerMTForConditionalGeneration:
    torch.manual_seed(seed)
    return TransformerMTForConditionalGeneration(tiny_config(**overrides)).eval()


def batch(seed: int = 0, batch_size: int = 3, length: int = 7, vocab_size: int = 99, pad_token_id: int = 0):
    """Random source ids ending in </s> (id 2) with right padding of different lengths per row."""
    generator = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(4, vocab_size, (batch_size, length), generator=generator)
    attention_mask = torch.ones_like(input_ids)
    for row in range(1, batch_size):
        cut = max(2, length - 2 * row)
        input_ids[row, cut:] = pad_token_id
        attention_mask[row, cut:] = 0
    lengths = attention_mask.sum(1)
    input_ids[torch.arange(batch_size), lengths - 1] = 2
    return input_ids, attention_mask


def remove_weight(checkpoint_dir, key: str) -> None:
    """Delete one tensor from a saved checkpoint's model.safetensors (to test missing-weight errors)."""
    from safetensors.torch import load_file, save_file

    path = f"{checkpoint_dir}/model.safetensors"
    weights = load_file(path)
    del weights[key]
    save_file(weights, path, metadata={"format": "pt"})


@pytest.fixture(params=POSITION_TYPES)
def position_type(request) -> str:
    return request.param
