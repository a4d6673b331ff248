"""Token tables, tying and resizing: what from_pretrained and resize_token_embeddings leave behind."""

import pytest
import torch
from safetensors import safe_open
from transformers import AutoModelForSeq2SeqLM

from transformer_mt import TransformerMTForConditionalGeneration
from transformer_mt.modeling.positional_embeddings import sinusoid_table

from .utils import batch, remove_weight, tiny_config, tiny_model


# (share_encoder_decoder_embeddings, decoder_vocab_size): one vocabulary, or a separate target vocabulary
VOCABULARIES = [(True, None), (False, 51)]


def tables(model):
    """Every token table and the output projection, by name."""
    return {
        "shared": model.model.shared.weight,
        "encoder": model.model.encoder.embeddings.embed_tokens.weight,
        "decoder": model.model.decoder.embeddings.embed_tokens.weight,
        "lm_head": model.lm_head.weight,
    }


def assert_tying(model):
    """encoder = shared always; decoder = shared when the vocabulary is shared; lm_head = the decoder's table when
    tie_word_embeddings; nothing else aliased."""
    config, t = model.config, tables(model)
    assert t["encoder"] is t["shared"]
    assert (t["decoder"] is t["shared"]) == config.share_encoder_decoder_embeddings
    assert (t["lm_head"] is t["decoder"]) == config.tie_word_embeddings
    assert t["decoder"].shape[0] == t["lm_head"].shape[0] == config.decoder_vocab_size
    assert t["shared"].shape[0] == config.vocab_size


def decoder_ids(model, seed=1):
    ids, _ = batch(seed, length=5, vocab_size=model.config.decoder_vocab_size)
    return ids


def generate_inputs(vocab_size=99):
    return batch(0, vocab_size=vocab_size)


@pytest.mark.parametrize("share, decoder_vocab_size", VOCABULARIES)
@pytest.mark.parametrize("tie_word_embeddings", [True, False])
def test_tables_are_separate_modules_tied_by_parameter_and_reload_identically(
    tmp_path, share, decoder_vocab_size, tie_word_embeddings
):
    model = tiny_model(
        share_encoder_decoder_embeddings=share,
        decoder_vocab_size=decoder_vocab_size,
        tie_word_embeddings=tie_word_embeddings,
    )
    assert model.model.encoder.embeddings.embed_tokens is not model.model.shared  # owned, not handed in
    assert_tying(model)
    input_ids, attention_mask = generate_inputs()
    inputs = dict(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_ids(model))
    expected = model(**inputs).logits

    model.save_pretrained(tmp_path)
    with safe_open(tmp_path / "model.safetensors", "pt") as f:
        saved = set(f.keys())
    stored_tables = {k for k in saved if "embed_tokens" in k or k in ("model.shared.weight", "lm_head.weight")}
    assert stored_tables == {"model.shared.weight"} | ({"lm_head.weight"} if not tie_word_embeddings else set()) | (
        {"model.decoder.embeddings.embed_tokens.weight"} if not share else set()
    )
    loaded, info = AutoModelForSeq2SeqLM.from_pretrained(tmp_path, output_loading_info=True)
    assert info["missing_keys"] == set() and info["unexpected_keys"] == set()
    assert_tying(loaded)
    torch.testing.assert_close(loaded.eval()(**inputs).logits, expected, rtol=0, atol=0)


@pytest.mark.parametrize("share, decoder_vocab_size", VOCABULARIES)
def test_a_checkpoint_without_its_token_tables_reports_them_missing_and_initialises_them(
    tmp_path, share, decoder_vocab_size
):
    model = tiny_model(share_encoder_decoder_embeddings=share, decoder_vocab_size=decoder_vocab_size)
    model.save_pretrained(tmp_path)
    removed = ["model.shared.weight"] + ([] if share else ["model.decoder.embeddings.embed_tokens.weight"])
    for key in removed:
        remove_weight(tmp_path, key)
    loaded, info = AutoModelForSeq2SeqLM.from_pretrained(tmp_path, output_loading_info=True)
    assert set(removed) <= info["missing_keys"]
    assert not [name for name, p in [*loaded.named_parameters(), *loaded.named_buffers()] if p.is_meta]
    assert_tying(loaded)
    assert loaded.model.shared.weight.std() > 0 and torch.isfinite(loaded.model.shared.weight).all()
    input_ids, attention_mask = generate_inputs()
    logits = loaded.eval()(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_ids(model))
    assert torch.isfinite(logits.logits).all()
    # the rest came from the checkpoint
    torch.testing.assert_close(
        loaded.model.encoder.layers[0].fc1.weight, model.model.encoder.layers[0].fc1.weight, rtol=0, atol=0
    )


def test_untying_at_load_time_keeps_encoder_and_decoder_on_the_shared_table(tmp_path):
    model = tiny_model()
    model.save_pretrained(tmp_path)
    loaded, info = AutoModelForSeq2SeqLM.from_pretrained(tmp_path, tie_word_embeddings=False, output_loading_info=True)
    assert info["missing_keys"] == {"lm_head.weight"}  # stored once, as the shared table: a new head starts fresh
    assert_tying(loaded)
    torch.testing.assert_close(loaded.model.shared.weight, model.model.shared.weight, rtol=0, atol=0)


def test_built_on_meta_then_initialised_leaves_nothing_uninitialised(position_type):
    with torch.device("meta"):
        model = TransformerMTForConditionalGeneration(tiny_config(position_embedding_type=position_type))
    assert all(t.is_meta for t in [*model.parameters(), *model.buffers()])
    model.to_empty(device="cpu")
    with torch.no_grad():
        for tensor in [*model.parameters(), *model.buffers()]:
            tensor.fill_(float("nan"))
    model.init_weights()
    for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
        assert torch.isfinite(tensor).all(), name
    assert_tying(model)
    if position_type == "sinusoidal":
        torch.testing.assert_close(
            model.model.encoder.embeddings.embed_positions.sinusoids, sinusoid_table(64, 32), rtol=0, atol=0
        )


@pytest.mark.parametrize("share, decoder_vocab_size", VOCABULARIES)
@pytest.mark.parametrize("use_final_logits_bias", [False, True])
@pytest.mark.parametrize("new_size", [120, 60])
def test_resizing_keeps_the_model_consistent_through_save_load_and_generate(
    tmp_path, share, decoder_vocab_size, use_final_logits_bias, new_size
):
    model = tiny_model(
        share_encoder_decoder_embeddings=share,
        decoder_vocab_size=decoder_vocab_size,
        use_final_logits_bias=use_final_logits_bias,
    )
    if use_final_logits_bias:
        with torch.no_grad():
            model.final_logits_bias.normal_()
    old_bias = model.final_logits_bias.clone() if use_final_logits_bias else None
    old_shared = model.model.shared.weight.detach().clone()
    model.resize_token_embeddings(new_size)
    if not share:
        model.resize_decoder_token_embeddings(new_size - 10)
    target_size = new_size if share else new_size - 10
    assert (model.config.vocab_size, model.config.decoder_vocab_size) == (new_size, target_size)
    assert_tying(model)
    kept = min(new_size, 99)
    torch.testing.assert_close(model.model.shared.weight[:kept], old_shared[:kept], rtol=0, atol=0)
    if use_final_logits_bias:
        assert model.final_logits_bias.shape == (1, target_size)
        kept_bias = min(target_size, old_bias.size(1))
        torch.testing.assert_close(model.final_logits_bias[:, :kept_bias], old_bias[:, :kept_bias], rtol=0, atol=0)

    input_ids, attention_mask = generate_inputs(vocab_size=min(new_size, 99))
    input_ids[0, 0] = new_size - 1  # a row only the resized source table has
    target = decoder_ids(model)
    target[0, 1] = target_size - 1
    logits = model.eval()(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=target).logits
    assert logits.shape[-1] == target_size
    model.save_pretrained(tmp_path)
    loaded, info = AutoModelForSeq2SeqLM.from_pretrained(tmp_path, output_loading_info=True)
    assert info["missing_keys"] == set() and info["mismatched_keys"] == set()
    assert_tying(loaded)
    torch.testing.assert_close(
        loaded.eval()(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=target).logits,
        logits,
        rtol=0,
        atol=0,
    )
    generated = loaded.generate(input_ids, attention_mask=attention_mask, max_new_tokens=5, do_sample=False)
    torch.testing.assert_close(
        generated,
        model.generate(input_ids, attention_mask=attention_mask, max_new_tokens=5, do_sample=False),
        rtol=0,
        atol=0,
    )


def test_resizing_to_a_multiple_resizes_the_bias_to_the_padded_size():
    model = tiny_model(use_final_logits_bias=True)
    model.resize_token_embeddings(101, pad_to_multiple_of=8)
    assert model.config.vocab_size == model.config.decoder_vocab_size == 104
    assert model.final_logits_bias.shape == (1, 104)
    input_ids, attention_mask = generate_inputs()
    logits = model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=input_ids).logits
    assert logits.shape[-1] == 104


def test_the_decoder_vocabulary_alone_is_resized_only_when_separate():
    with pytest.raises(ValueError, match="shares one, so call `resize_token_embeddings`"):
        tiny_model().resize_decoder_token_embeddings(50)
