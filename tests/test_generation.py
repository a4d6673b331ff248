import pytest
import torch
from transformers import CompileConfig, EncoderDecoderCache

import transformer_mt.generation
from transformer_mt import TransformerMTForConditionalGeneration

from .utils import batch, overfit, tiny_model


def test_cached_and_uncached_decoding_give_the_same_logits_at_every_step(position_type):
    model = tiny_model(position_embedding_type=position_type)
    input_ids, attention_mask = batch(0)
    out = model.generate(
        input_ids,
        attention_mask=attention_mask,
        max_new_tokens=12,
        min_new_tokens=12,
        do_sample=False,
        output_logits=True,
        return_dict_in_generate=True,
        use_cache=True,
    )
    uncached = model.generate(
        input_ids,
        attention_mask=attention_mask,
        max_new_tokens=12,
        min_new_tokens=12,
        do_sample=False,
        output_logits=True,
        return_dict_in_generate=True,
        use_cache=False,
    )
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
        out = model(
            encoder_outputs=encoder_outputs,
            attention_mask=attention_mask,
            decoder_input_ids=decoder_input_ids[:, t : t + 1],
            cache=cache,
            use_cache=True,
        )
        cache = out.cache
        assert isinstance(cache, EncoderDecoderCache) and cache.get_seq_length() == t + 1
        torch.testing.assert_close(out.logits[:, 0], full[:, t], rtol=0, atol=1e-5)


def test_deprecated_past_key_values_name_still_feeds_the_cache():
    model = tiny_model()
    input_ids, attention_mask = batch(0)
    decoder_input_ids = torch.tensor([[1, 5, 9]] * 3)
    full = model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids).logits
    first = model(
        input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids[:, :2], use_cache=True
    )
    step = model(
        input_ids=input_ids,
        attention_mask=attention_mask,
        decoder_input_ids=decoder_input_ids[:, 2:],
        past_key_values=first.cache,
        use_cache=True,
    )
    torch.testing.assert_close(step.logits[:, 0], full[:, 2], rtol=0, atol=1e-5)


def test_greedy_generate_equals_a_hand_written_loop_over_forward(position_type):
    model = tiny_model(position_embedding_type=position_type)
    input_ids, attention_mask = batch(1, batch_size=1)
    generated = model.generate(
        input_ids, attention_mask=attention_mask, max_new_tokens=10, do_sample=False, num_beams=1
    )
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
    model = tiny_model(dropout=0.0, attention_dropout=0.0, activation_dropout=0.0)
    source = torch.tensor([[5, 6, 7, 2], [8, 9, 10, 2]])
    overfit(model, {"input_ids": source}, source, loss_below=0.01)
    generated = model.generate(source, max_new_tokens=20, do_sample=False)
    torch.testing.assert_close(generated, torch.cat([torch.ones(2, 1, dtype=torch.long), source], dim=1))


@pytest.mark.parametrize("strategy", [dict(num_beams=4), dict(do_sample=True, top_k=10)])
def test_beam_search_and_sampling_with_num_return_sequences(position_type, strategy):
    model = tiny_model(position_embedding_type=position_type)
    input_ids, attention_mask = batch(0)
    torch.manual_seed(0)
    out = model.generate(
        input_ids,
        attention_mask=attention_mask,
        max_new_tokens=6,
        num_return_sequences=3,
        return_dict_in_generate=True,
        output_scores=True,
        **strategy,
    )
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
    kwargs = dict(
        attention_mask=attention_mask,
        max_new_tokens=6,
        do_sample=False,
        output_logits=True,
        return_dict_in_generate=True,
    )
    plain = model.generate(input_ids, **kwargs)
    segmented = model.generate(input_ids, token_type_ids=torch.ones_like(input_ids), **kwargs)
    assert not torch.allclose(plain.logits[0], segmented.logits[0])


def compile_config(backend: str) -> CompileConfig:
    """The package's compiled decoding step (generation.compile_config), with the given torch.compile backend."""
    config = transformer_mt.generation.compile_config()
    config.backend = backend
    return config


@pytest.mark.parametrize("num_beams", [1, 3])
def test_static_cache_gives_the_same_tokens_as_the_dynamic_cache(position_type, num_beams):
    model = tiny_model(position_embedding_type=position_type)
    input_ids, attention_mask = batch(0)
    kwargs = dict(
        attention_mask=attention_mask,
        max_new_tokens=10,
        do_sample=False,
        num_beams=num_beams,
        output_logits=True,
        return_dict_in_generate=True,
    )
    dynamic = model.generate(input_ids, **kwargs)
    static = model.generate(input_ids, cache_implementation="static", **kwargs)
    torch.testing.assert_close(static.sequences, dynamic.sequences, rtol=0, atol=0)
    for step, (a, b) in enumerate(zip(static.logits, dynamic.logits)):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-5, msg=f"step {step}")


@pytest.mark.parametrize("backend", ["eager", pytest.param("inductor", marks=pytest.mark.slow)])  # compiling: slow
def test_full_graph_compiled_generation_gives_the_same_tokens_as_eager(position_type, backend):
    """`eager` traces the whole step as one graph (any break raises) and runs it; `inductor` also compiles it."""
    assert TransformerMTForConditionalGeneration._can_compile_fullgraph
    model = tiny_model(position_embedding_type=position_type)
    input_ids, attention_mask = batch(0)
    kwargs = dict(attention_mask=attention_mask, max_new_tokens=10, do_sample=False)
    expected = model.generate(input_ids, **kwargs)
    torch._dynamo.reset()
    graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    compiled = model.generate(
        input_ids, cache_implementation="static", compile_config=compile_config(backend), **kwargs
    )
    torch.testing.assert_close(compiled, expected, rtol=0, atol=0)
    # It did compile, on the CPU: transformers still honours the private CompileConfig._compile_all_devices that
    # generation.compile_config sets (there is no public switch in 5.24); a rename would fail here, not pass eager.
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] > graphs


def test_a_static_cache_longer_than_the_learned_table_is_refused_up_front():
    model = tiny_model(position_embedding_type="learned")  # max_position_embeddings=64
    input_ids, attention_mask = batch(0)
    with pytest.raises(
        ValueError,
        match=r"needs 69 positions .* a static cache counts its whole length.* "
        r"max_position_embeddings=64",
    ):
        model.generate(input_ids, attention_mask=attention_mask, max_length=70, cache_implementation="static")


def test_out_of_range_ids_are_still_refused_before_generation_starts():
    model = tiny_model()
    input_ids, attention_mask = batch(0)
    input_ids[1, 0] = 500
    with pytest.raises(ValueError, match=r"`input_ids` contains 500, outside \[0, vocab_size=99\)"):
        model.generate(input_ids, attention_mask=attention_mask, max_new_tokens=3)
    with pytest.raises(ValueError, match=r"`decoder_input_ids` contains 120"):
        model.generate(batch(0)[0], decoder_input_ids=torch.tensor([[1, 120]] * 3), max_new_tokens=3)


def test_a_left_padded_row_with_its_position_ids_equals_the_unpadded_row(position_type):
    model = tiny_model(position_embedding_type=position_type)
    with torch.no_grad():  # positions that matter as much as trained ones do
        for stack in (model.model.encoder, model.model.decoder):
            if position_type == "learned":
                stack.embeddings.embed_positions.weight.normal_()
    source = torch.tensor([[5, 17, 23, 42, 2]])
    target = torch.tensor([[1, 8, 9]])
    expected = model(input_ids=source, decoder_input_ids=target).logits
    # two pads on the left of the source, one on the left of the target
    padded_source = torch.cat([torch.zeros(1, 2, dtype=torch.long), source], dim=1)
    source_mask = (padded_source != 0).long()
    padded_target = torch.cat([torch.zeros(1, 1, dtype=torch.long), target], dim=1)
    target_mask = torch.tensor([[0, 1, 1, 1]])
    logits = model(
        input_ids=padded_source,
        attention_mask=source_mask,
        position_ids=(source_mask.cumsum(-1) - 1).clamp(min=0),
        decoder_input_ids=padded_target,
        decoder_attention_mask=target_mask,
        decoder_position_ids=(target_mask.cumsum(-1) - 1).clamp(min=0),
    ).logits
    torch.testing.assert_close(logits[:, 1:], expected, rtol=0, atol=1e-5)
    unpositioned = model(input_ids=padded_source, attention_mask=source_mask, decoder_input_ids=target).logits
    if model.get_encoder().embeddings.embed_positions.absolute:
        assert (unpositioned - expected).abs().max() > 1e-3  # without them the pads shift every source position
    else:  # relative positions see distances only, which pads on the left do not change
        torch.testing.assert_close(unpositioned, expected, rtol=0, atol=1e-5)


def test_position_ids_are_checked_at_the_boundary():
    model = tiny_model(position_embedding_type="learned")
    input_ids, _ = batch(0)
    with pytest.raises(ValueError, match=r"`position_ids` contains -1, but positions must be >= 0"):
        model(input_ids=input_ids, position_ids=torch.full_like(input_ids, -1), decoder_input_ids=input_ids)
    with pytest.raises(ValueError, match=r"needs 101 positions .* max_position_embeddings=64"):
        model(input_ids=input_ids, decoder_input_ids=input_ids, decoder_position_ids=torch.full_like(input_ids, 100))
    with pytest.raises(ValueError, match=r"`decoder_position_ids` has shape \(3, 2\)"):
        model(input_ids=input_ids, decoder_input_ids=input_ids, decoder_position_ids=input_ids[:, :2])


@pytest.mark.parametrize("use_cache", [True, False])
def test_generate_continues_the_last_decoder_segment(use_cache):
    model = tiny_model()
    with torch.no_grad():
        model.model.decoder.embeddings.token_type_embeddings.weight.normal_()  # segments that matter
    input_ids, attention_mask = batch(0)
    prompt = torch.tensor([[1, 7]] * 3)
    segments = torch.tensor([[0, 1]] * 3)
    generated = model.generate(
        input_ids,
        attention_mask=attention_mask,
        decoder_input_ids=prompt,
        decoder_token_type_ids=segments,
        max_new_tokens=6,
        min_new_tokens=6,
        do_sample=False,
        use_cache=use_cache,
        output_logits=True,
        return_dict_in_generate=True,
    )

    def greedy_loop(new_segment: int):
        decoder_input_ids, step_logits = prompt, []
        for _ in range(6):
            new = torch.full_like(decoder_input_ids[:, 2:], new_segment)
            logits = model(
                input_ids=input_ids,
                attention_mask=attention_mask,
                decoder_input_ids=decoder_input_ids,
                decoder_token_type_ids=torch.cat([segments, new], dim=1),
            ).logits[:, -1]
            step_logits.append(logits)
            decoder_input_ids = torch.cat([decoder_input_ids, logits.argmax(-1, keepdim=True)], dim=1)
        return decoder_input_ids, step_logits

    expected, expected_logits = greedy_loop(new_segment=1)  # generated tokens continue segment 1
    torch.testing.assert_close(generated.sequences, expected, rtol=0, atol=0)
    for step, (a, b) in enumerate(zip(generated.logits, expected_logits)):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-5, msg=f"step {step}")
    _, segment_zero_logits = greedy_loop(new_segment=0)
    assert (segment_zero_logits[-1] - expected_logits[-1]).abs().max() > 1e-3  # the choice is visible


def test_compile_generation_makes_it_the_default_and_keeps_the_tokens(tmp_path):
    model = tiny_model()
    input_ids, attention_mask = batch(0)
    expected = model.generate(input_ids, attention_mask=attention_mask, max_new_tokens=6, do_sample=False)
    transformer_mt.generation.compile_generation(model)
    model.generation_config.compile_config.backend = "eager"  # trace-only here; the inductor test is above
    torch._dynamo.reset()
    assert model.generation_config.cache_implementation == "static"
    torch.testing.assert_close(
        model.generate(input_ids, attention_mask=attention_mask, max_new_tokens=6, do_sample=False),
        expected,
        rtol=0,
        atol=0,
    )
    model.save_pretrained(tmp_path)  # a compiled generation config still saves
