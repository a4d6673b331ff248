"""The decoder used alone: TransformerMTForCausalLM, and as the decoder of transformers' EncoderDecoderModel."""

import inspect

import pytest
import torch
from transformers import AutoModelForCausalLM, DynamicCache, EncoderDecoderModel

from transformer_mt import TransformerMTForCausalLM
from transformer_mt.modeling import TransformerMTEncoder

from .utils import batch, tiny_config, tiny_model


def causal_lm(seed=0, **overrides) -> TransformerMTForCausalLM:
    torch.manual_seed(seed)
    return TransformerMTForCausalLM(tiny_config(**overrides)).eval()


def test_a_later_token_never_changes_an_earlier_output(position_type):
    model = causal_lm(position_embedding_type=position_type)
    ids = torch.tensor([[5, 9, 14, 30, 7, 11, 2]])
    logits = model(input_ids=ids).logits
    for k in range(1, ids.size(1)):
        changed = ids.clone()
        changed[0, k] = (changed[0, k] + 1) % 99
        other = model(input_ids=changed).logits
        torch.testing.assert_close(other[:, :k], logits[:, :k], rtol=0, atol=0, msg=f"token {k}")
        assert not torch.equal(other[:, k:], logits[:, k:])


def test_the_decoder_alone_has_no_cross_attention_and_one_cache():
    model = causal_lm(attn_implementation="eager")
    ids = torch.tensor([[5, 9, 14, 30]])
    out = model(input_ids=ids, use_cache=True, output_attentions=True)
    assert isinstance(out.cache, DynamicCache) and out.cache.get_seq_length() == 4
    assert out.cross_attentions is None or len(out.cross_attentions) == 0
    assert out.attentions[0][0].triu(1).abs().max() == 0


@pytest.mark.parametrize("num_beams", [1, 3])
def test_cached_and_uncached_decoder_only_generation_agree(position_type, num_beams):
    # More decoder than encoder layers: the cache must be sized by the decoder's.
    model = causal_lm(position_embedding_type=position_type, encoder_layers=1, decoder_layers=3)
    prompt = torch.tensor([[1, 5, 9, 14], [1, 30, 7, 11]])
    kwargs = dict(
        max_new_tokens=8,
        min_new_tokens=8,
        do_sample=False,
        num_beams=num_beams,
        output_logits=True,
        return_dict_in_generate=True,
    )
    cached = model.generate(prompt, use_cache=True, **kwargs)
    uncached = model.generate(prompt, use_cache=False, **kwargs)
    torch.testing.assert_close(cached.sequences, uncached.sequences, rtol=0, atol=0)
    for step, (a, b) in enumerate(zip(cached.logits, uncached.logits)):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-5, msg=f"step {step}")
    if num_beams == 1:  # greedy equals the argmax loop over full forwards
        ids = prompt
        for _ in range(8):
            ids = torch.cat([ids, model(input_ids=ids).logits[:, -1:].argmax(-1)], dim=1)
        torch.testing.assert_close(cached.sequences, ids, rtol=0, atol=0)


def test_the_loss_predicts_the_next_token_and_ignores_minus_100():
    model = causal_lm()
    ids = torch.tensor([[5, 9, 14, 30, 7]])
    labels = ids.clone()
    labels[0, 2] = -100
    out = model(input_ids=ids, labels=labels)
    log_probs = out.logits.double().log_softmax(-1)[0]
    picked = [-log_probs[t, labels[0, t + 1]] for t in range(4) if labels[0, t + 1] != -100]
    assert out.loss.item() == pytest.approx(torch.stack(picked).mean().item(), abs=1e-6)


def test_labels_with_no_target_after_the_shift_are_refused_not_a_nan_loss():
    model = causal_lm()
    ids = torch.tensor([[5, 9, 14]])
    with pytest.raises(
        ValueError,
        match=r"`labels` are all -100 after the first position \(a causal LM predicts "
        r"labels\[:, 1:\]\)",
    ):
        model(input_ids=ids, labels=torch.tensor([[5, -100, -100]]))
    assert torch.isfinite(model(input_ids=ids, labels=torch.tensor([[-100, -100, 14]])).loss)


def test_registered_loads_and_ties_its_head(tmp_path):
    model = causal_lm()
    assert model.lm_head.weight is model.model.decoder.embeddings.embed_tokens.weight
    assert model.config.is_decoder and not model.config.is_encoder_decoder
    model.save_pretrained(tmp_path)
    loaded, info = AutoModelForCausalLM.from_pretrained(tmp_path, output_loading_info=True)
    assert type(loaded) is TransformerMTForCausalLM and info["missing_keys"] == set()
    assert loaded.lm_head.weight is loaded.model.decoder.embeddings.embed_tokens.weight
    ids = torch.tensor([[5, 9, 14]])
    torch.testing.assert_close(loaded.eval()(input_ids=ids).logits, model(input_ids=ids).logits, rtol=0, atol=0)
    loaded.resize_token_embeddings(120)
    assert loaded.config.decoder_vocab_size == loaded.config.vocab_size == 120
    assert loaded.lm_head.weight is loaded.model.decoder.embeddings.embed_tokens.weight
    assert loaded(input_ids=torch.tensor([[119, 5]])).logits.shape == (1, 2, 120)


def test_encoder_decoder_model_with_transformer_mt_halves_trains_and_generates():
    torch.manual_seed(0)
    config = tiny_config(dropout=0.0, attention_dropout=0.0, activation_dropout=0.0)
    model = EncoderDecoderModel(encoder=TransformerMTEncoder(config), decoder=TransformerMTForCausalLM(config))
    model.config.decoder_start_token_id, model.config.pad_token_id = 1, 0
    input_ids, attention_mask = batch(0)
    labels = torch.tensor([[5, 6, 7, 2], [8, 9, 2, -100], [10, 2, -100, -100]])
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model.train()
    loss = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss
    loss.backward()
    optimizer.step()
    assert torch.isfinite(loss)
    cross = "decoder.model.decoder.layers.0.encoder_attn.q_proj.weight"
    assert not torch.equal(dict(model.named_parameters())[cross], before[cross])  # cross-attention is trained
    generated = model.eval().generate(
        input_ids, attention_mask=attention_mask, max_new_tokens=6, min_new_tokens=6, do_sample=False
    )
    assert generated.shape == (3, 7) and (generated[:, 0] == 1).all()
    # generate's cached decoding equals a greedy loop over full forwards
    decoder_input_ids = generated[:, :1]
    for _ in range(6):
        logits = model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids).logits
        decoder_input_ids = torch.cat([decoder_input_ids, logits[:, -1:].argmax(-1)], dim=1)
    torch.testing.assert_close(generated, decoder_input_ids, rtol=0, atol=0)


def test_a_custom_4d_mask_packs_two_sequences_as_if_run_apart(position_type):
    """Packed training and shared prefixes: a 4-D additive mask with per-sequence position_ids."""
    torch.manual_seed(0)
    model = TransformerMTForCausalLM(tiny_config(position_embedding_type=position_type)).eval()
    first, second = torch.tensor([[5, 6, 7, 8]]), torch.tensor([[9, 10, 11]])
    allowed = torch.zeros(7, 7, dtype=torch.bool)
    allowed[:4, :4] = torch.ones(4, 4, dtype=torch.bool).tril()
    allowed[4:, 4:] = torch.ones(3, 3, dtype=torch.bool).tril()
    mask = torch.where(allowed, 0.0, torch.finfo(torch.float32).min)[None, None]  # (1, 1, 7, 7)
    packed = model(
        input_ids=torch.cat([first, second], 1),
        attention_mask=mask,
        position_ids=torch.tensor([[0, 1, 2, 3, 0, 1, 2]]),
    ).logits
    torch.testing.assert_close(packed[:, :4], model(input_ids=first).logits, rtol=0, atol=1e-5)
    torch.testing.assert_close(packed[:, 4:], model(input_ids=second).logits, rtol=0, atol=1e-5)


def test_prepare_inputs_for_generation_has_generation_mixins_signature():
    from transformers import GenerationMixin

    model = tiny_model()
    inputs = model.prepare_inputs_for_generation(
        input_ids=torch.tensor([[1, 5]]), encoder_outputs=None, attention_mask=None, custom_kwarg="forwarded"
    )
    assert inputs["decoder_input_ids"].tolist() == [[1, 5]] and inputs["custom_kwarg"] == "forwarded"
    ours = inspect.signature(type(model).prepare_inputs_for_generation).parameters
    assert list(ours)[:2] == list(inspect.signature(GenerationMixin.prepare_inputs_for_generation).parameters)[:2]
