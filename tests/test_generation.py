import pytest
import torch
from transformers import EncoderDecoderCache

from .utils import batch, tiny_model


def test_cached_and_uncached_decoding_give_the_same_logits_at_every_step(position_type):
    model = tiny_model(position_embedding_type=position_type)
    input_ids, attention_mask = batch(0)
    out = model.generate(input_ids, attention_mask=attention_mask, max_new_tokens=12, min_new_tokens=12,
                         do_sample=False, output_logits=True, return_dict_in_generate=True, use_cache=True)
    uncached = model.generate(input_ids, attention_mask=attention_mask, max_new_tokens=12, min_new_tokens=12,
                              do_sample=False, output_logits=True, return_dict_in_generate=True, use_cache=False)
    assert len(out.logits) == 12
    torch.testing.assert_close(out.sequences, uncached.sequences, rtol=0, atol=0)
    for step, (cached_logits, full_logits) in enumerate(zip(out.logits, uncached.logits)):
        torch.testing.assert_close(cached_logits, full_logits, rtol=0, atol=1e-5, msg=f"step {step}")


def test_forward_with_cache_matches_forward_without(position_type):
    model = tiny_model(position_embedding_type=position_type)
    input_ids, attention_mask = batch(0)
    decoder_input_ids = torch.tensor([[1, 5, 9, 12, 7, 30]] * 3)
    full = model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids).logits
    encoder_outputs = model.get_encoder()(input_ids=input_ids, attention_mask=attention_mask)
    cache = None
    for t in range(decoder_input_ids.size(1)):
        out = model(encoder_outputs=encoder_outputs, attention_mask=attention_mask,
                    decoder_input_ids=decoder_input_ids[:, t : t + 1], cache=cache, use_cache=True)
        cache = out.cache
        assert isinstance(cache, EncoderDecoderCache) and cache.get_seq_length() == t + 1
        torch.testing.assert_close(out.logits[:, 0], full[:, t], rtol=0, atol=1e-5)


def test_deprecated_past_key_values_name_still_feeds_the_cache():
    model = tiny_model()
    input_ids, attention_mask = batch(0)
    decoder_input_ids = torch.tensor([[1, 5, 9]] * 3)
    full = model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids).logits
    first = model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids[:, :2],
                  use_cache=True)
    step = model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids[:, 2:],
                 past_key_values=first.cache, use_cache=True)
    torch.testing.assert_close(step.logits[:, 0], full[:, 2], rtol=0, atol=1e-5)


def test_greedy_generate_equals_a_hand_written_loop_over_forward(position_type):
    model = tiny_model(position_embedding_type=position_type)
    input_ids, attention_mask = batch(1, batch_size=1)
    generated = model.generate(input_ids, attention_mask=attention_mask, max_new_tokens=10, do_sample=False,
                               num_beams=1)
    decoder_input_ids = torch.tensor([[model.config.decoder_start_token_id]])
    for _ in range(10):
        logits = model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids).logits
        next_token = logits[:, -1].argmax(-1, keepdim=True)
        decoder_input_ids = torch.cat([decoder_input_ids, next_token], dim=1)
        if next_token.item() == model.config.eos_token_id:
            break
    torch.testing.assert_close(generated, decoder_input_ids, rtol=0, atol=0)


def test_a_trained_model_stops_at_eos():
    """Overfit a copy task for a few steps so generation must end with </s> before max_new_tokens."""
    model = tiny_model(dropout=0.0, attention_dropout=0.0, activation_dropout=0.0).train()
    source = torch.tensor([[5, 6, 7, 2], [8, 9, 10, 2]])
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for _ in range(60):
        optimizer.zero_grad()
        model(input_ids=source, labels=source).loss.backward()
        optimizer.step()
    generated = model.eval().generate(source, max_new_tokens=20, do_sample=False)
    torch.testing.assert_close(generated, torch.cat([torch.ones(2, 1, dtype=torch.long), source], dim=1))


@pytest.mark.parametrize("strategy", [dict(num_beams=4), dict(do_sample=True, top_k=10)])
def test_beam_search_and_sampling_with_num_return_sequences(position_type, strategy):
    model = tiny_model(position_embedding_type=position_type)
    input_ids, attention_mask = batch(0)
    torch.manual_seed(0)
    out = model.generate(input_ids, attention_mask=attention_mask, max_new_tokens=6, num_return_sequences=3,
                         return_dict_in_generate=True, output_scores=True, **strategy)
    assert out.sequences.shape[0] == 9
    assert (out.sequences[:, 0] == model.config.decoder_start_token_id).all()
    if "num_beams" in strategy:
        # beams come back sorted by score and distinct
        scores = out.sequences_scores.view(3, 3)
        assert (scores[:, :-1] >= scores[:, 1:]).all()
        assert all(len({tuple(s.tolist()) for s in out.sequences[3 * i : 3 * i + 3]}) == 3 for i in range(3))


@pytest.mark.parametrize("num_beams", [1, 3])
def test_padded_batch_gives_the_same_output_as_one_by_one(position_type, num_beams):
    model = tiny_model(position_embedding_type=position_type)
    input_ids, attention_mask = batch(2, batch_size=3, length=9)
    kwargs = dict(max_new_tokens=8, min_new_tokens=8, num_beams=num_beams, do_sample=False)
    batched = model.generate(input_ids, attention_mask=attention_mask, **kwargs)
    for row in range(3):
        length = int(attention_mask[row].sum())
        single = model.generate(input_ids[row : row + 1, :length], **kwargs)
        torch.testing.assert_close(batched[row : row + 1, : single.size(1)], single, rtol=0, atol=0)


def test_generate_passes_token_type_ids_to_the_encoder():
    model = tiny_model()
    input_ids, attention_mask = batch(0)
    kwargs = dict(attention_mask=attention_mask, max_new_tokens=6, do_sample=False, output_logits=True,
                  return_dict_in_generate=True)
    plain = model.generate(input_ids, **kwargs)
    segmented = model.generate(input_ids, token_type_ids=torch.ones_like(input_ids), **kwargs)
    assert not torch.allclose(plain.logits[0], segmented.logits[0])
