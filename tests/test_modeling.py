import pytest
import torch
from transformers import AutoModel, AutoModelForSeq2SeqLM

from transformer_mt import TransformerMTForConditionalGeneration, TransformerMTModel
from transformer_mt.modeling.modeling_transformer_mt import shift_tokens_right
from transformer_mt.modeling.positional_embeddings import sinusoid_table

from .utils import REPO, batch, tiny_config, tiny_model


def forward_inputs(seed=0):
    input_ids, attention_mask = batch(seed)
    decoder_input_ids, decoder_attention_mask = batch(seed + 1, length=5)
    return dict(
        input_ids=input_ids,
        attention_mask=attention_mask,
        token_type_ids=(torch.arange(input_ids.size(1)) >= 3).long().expand_as(input_ids),
        decoder_input_ids=decoder_input_ids,
        decoder_attention_mask=decoder_attention_mask,
    )


@pytest.mark.parametrize("normalize_before", [False, True])
def test_save_load_gives_bit_identical_logits_and_rebuilds_the_sinusoid(tmp_path, position_type, normalize_before):
    model = tiny_model(position_embedding_type=position_type, normalize_before=normalize_before)
    inputs = forward_inputs()
    expected = model(**inputs).logits
    model.save_pretrained(tmp_path)
    assert (tmp_path / "model.safetensors").exists() and not list(tmp_path.glob("*.bin"))

    loaded = AutoModelForSeq2SeqLM.from_pretrained(tmp_path).eval()
    assert type(loaded) is TransformerMTForConditionalGeneration
    torch.testing.assert_close(loaded(**inputs).logits, expected, rtol=0, atol=0)
    if position_type == "sinusoidal":
        for stack in (loaded.model.encoder, loaded.model.decoder):
            torch.testing.assert_close(
                stack.embeddings.embed_positions.sinusoids, sinusoid_table(64, 32), rtol=0, atol=0
            )


def test_checkpoint_holds_no_derived_tensors(tmp_path):
    from safetensors import safe_open

    tiny_model().save_pretrained(tmp_path)
    with safe_open(tmp_path / "model.safetensors", "pt") as f:
        keys = set(f.keys())
    assert not any("table" in key for key in keys)  # the sinusoid is derived from the config
    assert "model.shared.weight" in keys and "lm_head.weight" not in keys  # tied, stored once


def test_automodel_loads_the_base_model(tmp_path, position_type):
    model = tiny_model(position_embedding_type=position_type)
    model.save_pretrained(tmp_path)
    base = AutoModel.from_pretrained(tmp_path).eval()
    assert type(base) is TransformerMTModel
    inputs = forward_inputs()
    torch.testing.assert_close(
        base(**inputs).last_hidden_state, model.model(**inputs).last_hidden_state, rtol=0, atol=0
    )


def test_tied_weights_stay_tied_after_loading(tmp_path):
    tiny_model().save_pretrained(tmp_path)
    loaded = AutoModelForSeq2SeqLM.from_pretrained(tmp_path)
    shared = loaded.model.shared.weight
    assert loaded.lm_head.weight is shared
    assert loaded.model.encoder.embeddings.embed_tokens.weight is shared
    assert loaded.model.decoder.embeddings.embed_tokens.weight is shared


def test_separate_vocabularies_and_final_logits_bias(tmp_path):
    model = tiny_model(share_encoder_decoder_embeddings=False, decoder_vocab_size=51, use_final_logits_bias=True)
    decoder_embed = model.model.decoder.get_input_embeddings()
    assert decoder_embed.weight.shape == (51, 32) and model.model.shared.weight.shape == (99, 32)
    assert model.lm_head.weight is decoder_embed.weight  # the output projection ties to the target table
    assert model.model.encoder.get_input_embeddings().weight is model.model.shared.weight
    with torch.no_grad():
        model.final_logits_bias.normal_()
    inputs = forward_inputs()
    inputs["decoder_input_ids"] = inputs["decoder_input_ids"] % 51
    logits = model(**inputs).logits
    assert logits.shape[-1] == 51
    hidden = model.model(**inputs).last_hidden_state
    torch.testing.assert_close(logits, hidden @ decoder_embed.weight.T + model.final_logits_bias, rtol=0, atol=1e-5)

    model.save_pretrained(tmp_path)
    loaded = AutoModelForSeq2SeqLM.from_pretrained(tmp_path).eval()
    assert loaded.lm_head.weight is loaded.model.decoder.get_input_embeddings().weight
    torch.testing.assert_close(loaded(**inputs).logits, logits, rtol=0, atol=0)
    with pytest.raises(ValueError, match=r"`decoder_input_ids` contains 60, outside \[0, decoder_vocab_size=51\)"):
        model(input_ids=inputs["input_ids"], decoder_input_ids=torch.tensor([[1, 60]] * 3))


def test_untied_output_projection_is_saved_and_loaded(tmp_path):
    model = tiny_model(tie_word_embeddings=False)
    assert model.lm_head.weight is not model.model.shared.weight
    model.save_pretrained(tmp_path)
    loaded = AutoModelForSeq2SeqLM.from_pretrained(tmp_path)
    torch.testing.assert_close(loaded.lm_head.weight, model.lm_head.weight, rtol=0, atol=0)


@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_eager_and_sdpa_agree(position_type, padding_side):
    inputs = forward_inputs()
    if padding_side == "left":
        for ids, mask in (("input_ids", "attention_mask"), ("decoder_input_ids", "decoder_attention_mask")):
            lengths = inputs[mask].sum(1)
            shifts = inputs[mask].size(1) - lengths
            for row in range(len(lengths)):
                inputs[ids][row] = inputs[ids][row].roll(int(shifts[row]))
                inputs[mask][row] = inputs[mask][row].roll(int(shifts[row]))
        assert inputs["attention_mask"][-1, 0] == 0
    outputs = {}
    for implementation in ("eager", "sdpa"):
        torch.manual_seed(0)
        model = TransformerMTForConditionalGeneration(
            tiny_config(position_embedding_type=position_type, attn_implementation=implementation)
        ).eval()
        assert model.config._attn_implementation == implementation
        outputs[implementation] = model(**inputs).logits
    keep = inputs["decoder_attention_mask"].bool()  # padded query rows are undefined in both kernels
    torch.testing.assert_close(outputs["sdpa"][keep], outputs["eager"][keep], rtol=0, atol=1e-5)


def test_loss_equals_hand_computed_cross_entropy_ignoring_minus_100():
    model = tiny_model()
    input_ids, attention_mask = batch(0)
    labels = torch.tensor([[5, 6, 7, 2], [8, 9, 2, -100], [10, 2, -100, -100]])
    out = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
    # decoder inputs are the labels shifted right behind decoder_start_token_id (1), -100 -> pad (0)
    decoder_input_ids = torch.tensor([[1, 5, 6, 7], [1, 8, 9, 2], [1, 10, 2, 0]])
    torch.testing.assert_close(shift_tokens_right(labels, 0, 1), decoder_input_ids, rtol=0, atol=0)
    logits = model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids).logits
    torch.testing.assert_close(out.logits, logits, rtol=0, atol=0)
    log_probs = logits.double().log_softmax(-1)
    picked = [-log_probs[b, t, labels[b, t]] for b in range(3) for t in range(4) if labels[b, t] != -100]
    assert out.loss.item() == pytest.approx(torch.stack(picked).mean().item(), abs=1e-6)


def test_gradient_checkpointing_gives_the_same_gradients(position_type):
    inputs = forward_inputs()
    labels = inputs.pop("decoder_input_ids").masked_fill(inputs.pop("decoder_attention_mask") == 0, -100)
    grads = []
    for checkpointing in (False, True):
        model = tiny_model(
            position_embedding_type=position_type, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0
        ).train()
        if checkpointing:
            model.activation_checkpointing_enable()
            assert model.model.encoder.layers[0].gradient_checkpointing
        model(**inputs, labels=labels).loss.backward()
        grads.append({name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None})
    assert grads[0].keys() == grads[1].keys() and len(grads[0]) > 20
    for name in grads[0]:
        torch.testing.assert_close(grads[1][name], grads[0][name], rtol=0, atol=1e-6, msg=name)


def test_encoder_and_decoder_take_their_own_heads_and_ffn_sizes():
    model = tiny_model(encoder_attention_heads=2, decoder_attention_heads=8, encoder_ffn_dim=40, decoder_ffn_dim=24)
    encoder_layer, decoder_layer = model.model.encoder.layers[0], model.model.decoder.layers[0]
    assert (encoder_layer.self_attn.num_heads, encoder_layer.fc1.out_features) == (2, 40)
    assert (decoder_layer.self_attn.num_heads, decoder_layer.encoder_attn.num_heads) == (8, 8)
    assert decoder_layer.fc1.out_features == 24
    assert decoder_layer.self_attn.is_causal and not encoder_layer.self_attn.is_causal
    assert model(**forward_inputs()).logits.shape == (3, 5, 99)


def test_builds_on_the_meta_device(position_type):
    with torch.device("meta"):
        model = TransformerMTForConditionalGeneration(tiny_config(position_embedding_type=position_type))
    assert all(p.is_meta for p in model.parameters())
    assert all(b.is_meta for b in model.buffers())


def test_output_attentions_hidden_states_and_tuples():
    model = tiny_model(attn_implementation="eager")
    inputs = forward_inputs()
    out = model(**inputs, output_attentions=True, output_hidden_states=True)
    assert len(out.encoder_attentions) == 2 and out.encoder_attentions[0].shape == (3, 4, 7, 7)
    assert len(out.decoder_attentions) == 2 and out.decoder_attentions[0].shape == (3, 4, 5, 5)
    assert len(out.cross_attentions) == 2 and out.cross_attentions[0].shape == (3, 4, 5, 7)
    assert len(out.encoder_hidden_states) == 3 and len(out.decoder_hidden_states) == 3
    torch.testing.assert_close(out.encoder_hidden_states[-1], out.encoder_last_hidden_state, rtol=0, atol=0)
    # causal: no weight on future target positions; padding: no weight on padded source positions
    assert out.decoder_attentions[0][0].triu(1).abs().max() == 0
    assert out.cross_attentions[0][2][..., inputs["attention_mask"][2] == 0].abs().max() == 0

    as_tuple = model(**inputs, return_dict=False)
    assert isinstance(as_tuple, tuple)
    torch.testing.assert_close(as_tuple[0], out.logits, rtol=0, atol=0)


def test_inputs_embeds_equal_input_ids(position_type):
    model = tiny_model(position_embedding_type=position_type)
    inputs = forward_inputs()
    embed = model.get_input_embeddings()
    expected = model(**inputs).logits
    inputs["inputs_embeds"] = embed(inputs.pop("input_ids"))
    inputs["decoder_inputs_embeds"] = embed(inputs.pop("decoder_input_ids"))
    torch.testing.assert_close(model(**inputs).logits, expected, rtol=0, atol=1e-6)


def test_bfloat16_forward_is_close_to_float32():
    model = tiny_model()
    inputs = forward_inputs()
    expected = model(**inputs).logits
    logits = model.to(torch.bfloat16)(**inputs).logits
    assert logits.dtype == torch.bfloat16
    torch.testing.assert_close(logits.float(), expected, rtol=0, atol=0.1)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda x: x.update(input_ids=x["input_ids"] + 99), r"`input_ids` contains \d+, outside \[0, vocab_size=99\)"),
        (lambda x: x["input_ids"].__setitem__((0, 0), -1), r"`input_ids` contains -1, outside \[0, vocab_size=99\)"),
        (
            lambda x: x["decoder_input_ids"].__setitem__((1, 1), 120),
            r"`decoder_input_ids` contains 120, outside \[0, decoder_vocab_size=99\)",
        ),
        (
            lambda x: x.update(token_type_ids=x["token_type_ids"] * 2),
            r"`token_type_ids` contains 2, outside \[0, type_vocab_size=2\)",
        ),
        (
            lambda x: x.update(attention_mask=x["attention_mask"][:, :-1]),
            r"`attention_mask` has shape \(3, 6\) but must be \(3, 7\)",
        ),
        (
            lambda x: x.update(token_type_ids=x["token_type_ids"][:2]),
            r"`token_type_ids` has shape \(2, 7\) but `input_ids` has shape \(3, 7\)",
        ),
        (
            lambda x: x.update(decoder_attention_mask=x["decoder_attention_mask"][:, :2]),
            r"`decoder_attention_mask` has shape \(3, 2\) but must be \(3, 5\)",
        ),
        (lambda x: x.update(input_ids=x["input_ids"][0]), r"`input_ids` must have shape \(batch, length\)"),
        (
            lambda x: x.update(labels=x["decoder_input_ids"] + 99),
            r"`labels` contains \d+, outside \[0, decoder_vocab_size=99\) \(use -100",
        ),
        (lambda x: x.update(labels=torch.full_like(x["decoder_input_ids"], -5)), r"`labels` contains -5, outside"),
        (
            lambda x: x.update(labels=torch.full_like(x["decoder_input_ids"], -100)),
            r"`labels` are all -100: there is no target token",
        ),
        (
            lambda x: x.update(labels=x["decoder_input_ids"].float()),
            r"`labels` must hold integer ids .* torch.float32",
        ),
        (
            lambda x: x.update(input_ids=x["input_ids"][:, :0], attention_mask=None, token_type_ids=None),
            r"`input_ids` is empty \(shape \(3, 0\)\): there is nothing to encode",
        ),
        (
            lambda x: x.update(input_ids=x["input_ids"][:0], attention_mask=None, token_type_ids=None),
            r"`input_ids` is empty \(shape \(0, 7\)\)",
        ),
        (
            lambda x: x.update(decoder_input_ids=x["decoder_input_ids"][:, :0], decoder_attention_mask=None),
            r"`decoder_input_ids` is empty .* nothing to decode",
        ),
        (
            lambda x: x.update(
                inputs_embeds=torch.zeros(3, 0, 32), input_ids=None, attention_mask=None, token_type_ids=None
            ),
            r"`inputs_embeds` is empty \(shape \(3, 0, 32\)\): there is nothing to encode",
        ),
        (lambda x: x.update(input_ids=x["input_ids"].float()), r"`input_ids` must hold integer ids .* torch.float32"),
        (lambda x: x.update(token_type_ids=x["token_type_ids"] > 0), r"`token_type_ids` must hold integer ids .*bool"),
        (
            lambda x: x.update(inputs_embeds=torch.zeros(3, 7, 16), input_ids=None),
            r"`inputs_embeds` must have shape \(batch, length, d_model=32\), got \(3, 7, 16\)",
        ),
        (
            lambda x: x.update(attention_mask=x["attention_mask"][:, None]),
            r"`attention_mask` must have shape \(batch, length\) \(or be a prepared 4-D mask\), got 3 dimensions",
        ),
    ],
)
def test_bad_input_raises_a_value_error_naming_the_argument(change, message):
    model = tiny_model()
    inputs = forward_inputs()
    change(inputs)
    with pytest.raises(ValueError, match=message):
        model(**inputs)


def test_without_a_segment_table_only_segment_zero_is_accepted():
    model = tiny_model(type_vocab_size=0)
    inputs = forward_inputs()
    with pytest.raises(
        ValueError,
        match=r"`token_type_ids` contains 1, but this model has no segment table "
        r"\(type_vocab_size=0\): pass no token_type_ids, or zeros",
    ):
        model(**inputs)
    expected = model(**{**inputs, "token_type_ids": None}).logits
    zeros = model(**{**inputs, "token_type_ids": torch.zeros_like(inputs["token_type_ids"])}).logits
    torch.testing.assert_close(zeros, expected, rtol=0, atol=0)  # what tokenizers return is still accepted


@pytest.mark.parametrize("missing", ["pad_token_id", "decoder_start_token_id"])
def test_labels_need_the_ids_that_shift_them(missing):
    model = tiny_model(**{missing: None})
    inputs = forward_inputs()
    labels = inputs.pop("decoder_input_ids")
    inputs.pop("decoder_attention_mask")
    with pytest.raises(ValueError, match=rf"`labels` without `decoder_input_ids`: .* config.{missing} is None"):
        model(**inputs, labels=labels)
    assert torch.isfinite(model(**inputs, labels=labels, decoder_input_ids=labels).loss)  # given inputs need neither


def test_learned_positions_reject_too_long_input_at_the_boundary():
    model = tiny_model(position_embedding_type="learned")
    with pytest.raises(ValueError, match="needs 65 positions .* max_position_embeddings=64"):
        model(input_ids=torch.full((1, 65), 5), decoder_input_ids=torch.full((1, 3), 5))


@pytest.mark.parametrize("position_type", ["sinusoidal", "alibi", "rotary"])
def test_models_without_a_table_run_three_times_past_max_position_embeddings(position_type):
    model = tiny_model(position_embedding_type=position_type)
    source = torch.randint(4, 99, (1, 3 * 64), generator=torch.Generator().manual_seed(0))
    logits = model(input_ids=source, decoder_input_ids=torch.full((1, 130), 5)).logits
    assert torch.isfinite(logits).all() and logits.shape == (1, 130, 99)
    # Cached decoding out there agrees with the full forward too.
    generated = model.generate(
        source,
        max_new_tokens=3 * 64,
        min_new_tokens=3 * 64,
        do_sample=False,
        output_logits=True,
        return_dict_in_generate=True,
        max_length=None,
    )
    full = model(input_ids=source, decoder_input_ids=generated.sequences[:, :-1]).logits
    torch.testing.assert_close(torch.stack(generated.logits, dim=1), full, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("position_type", ["sinusoidal", "learned"])  # the types release 0.1.0 had
def test_a_checkpoint_saved_by_release_0_1_0_loads_with_identical_logits(position_type):
    """tests/fixtures/v0.1.0 was saved by the first release (before the layers and stacks were rewritten);
    module and parameter names are a contract with every checkpoint and converter."""
    from safetensors.torch import load_file

    directory = REPO / "tests" / "fixtures" / "v0.1.0" / position_type
    model = AutoModelForSeq2SeqLM.from_pretrained(directory).eval()
    expected = load_file(directory / "expected.safetensors")
    logits = model(
        input_ids=expected["input_ids"],
        token_type_ids=expected["token_type_ids"],
        decoder_input_ids=expected["decoder_input_ids"],
    ).logits
    # Equal to float rounding: the fixture's logits were computed on another CPU, whose kernels may sum in another
    # order (differences of ~6e-7 seen); a wrong or misnamed weight moves logits by orders of magnitude more.
    torch.testing.assert_close(logits, expected["logits"], rtol=1e-5, atol=1e-5)


def test_a_config_edited_after_the_model_was_built_is_named_not_crashed_on():
    model = tiny_model()
    input_ids, attention_mask = batch(0)
    model.config.decoder_attention_heads = 8
    with pytest.raises(
        ValueError,
        match=r"config.decoder_attention_heads is 8 but the model was built with 4: a "
        r"built model keeps its shape",
    ):
        model.generate(input_ids, attention_mask=attention_mask, max_new_tokens=2)


def test_an_empty_batch_of_labels_is_named_as_empty():
    model = tiny_model()
    with pytest.raises(ValueError, match=r"`labels` is empty \(shape \(0, 5\)\)"):
        model(input_ids=torch.ones(0, 5, dtype=torch.long), labels=torch.ones(0, 5, dtype=torch.long))


def test_a_large_max_position_embeddings_costs_no_memory_for_sinusoids():
    model = tiny_model(max_position_embeddings=2**20)
    assert model.get_encoder().embeddings.embed_positions.sinusoids.shape[0] == 1024
