"""The alignment probe measures what it says: no source path gives no gain, flat attention gives entropy 1."""

import pytest
import torch

from transformer_mt.diagnostics import embedding_rms, measure

from .utils import batch, tiny_model


def probe_inputs():
    input_ids, attention_mask = batch(seed=1, batch_size=4, length=9)
    labels = torch.randint(4, 99, (4, 6), generator=torch.Generator().manual_seed(2))
    labels[2, 4:] = -100
    return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}


def test_a_decoder_cut_off_from_its_source_gains_nothing_from_it(position_type):
    model = tiny_model(
        position_embedding_type=position_type, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0
    )
    inputs = probe_inputs()
    assert measure(model, inputs)["source_gain"] != pytest.approx(0.0, abs=1e-4)  # a random model reads it a bit
    with torch.no_grad():
        for layer in model.model.decoder.layers:
            layer.encoder_attn.out_proj.weight.zero_()
    assert measure(model, inputs)["source_gain"] == pytest.approx(0.0, abs=1e-6)


def test_attention_that_cannot_tell_source_tokens_apart_has_entropy_one(position_type):
    model = tiny_model(position_embedding_type=position_type, attention_dropout=0.0)
    with torch.no_grad():
        for layer in model.model.decoder.layers:
            layer.encoder_attn.q_proj.weight.zero_()
            layer.encoder_attn.q_proj.bias.zero_()
    entropies = measure(model, probe_inputs())["cross_attention_entropy"]
    assert entropies == pytest.approx([1.0, 1.0], abs=1e-5)
    assert model.config._attn_implementation == "sdpa"  # measured with eager weights, then put back


def test_embedding_rms_leaves_padding_out(position_type):
    model = tiny_model(position_embedding_type=position_type)
    inputs = probe_inputs()
    embeddings = model.get_encoder().embeddings
    mask = inputs["attention_mask"].bool()
    tokens = embeddings.embed_tokens(inputs["input_ids"])[mask] * embeddings.embed_scale
    rms = embedding_rms(model, inputs)
    assert rms["tokens"] == pytest.approx(float(tokens.pow(2).mean().sqrt()), rel=1e-6)
    assert (rms["positions"] is None) == (not embeddings.embed_positions.absolute)
