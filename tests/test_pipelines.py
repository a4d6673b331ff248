import pytest
import torch
from transformers import pipeline

from transformer_mt import TranslationPipeline

from .utils import SENTENCES, save_tiny


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = tmp_path_factory.mktemp("translator")
    model, tokenizer = save_tiny(path)
    model.generation_config.num_beams = 2
    model.generation_config.max_length = 8
    model.generation_config.save_pretrained(path)
    return path, model, tokenizer


def test_translation_pipeline_equals_generate_and_decode(saved):
    path, model, tokenizer = saved
    translator = pipeline("translation", model=str(path))
    assert isinstance(translator, TranslationPipeline)
    expected = []
    for sentence in SENTENCES[::2]:
        ids = model.generate(**tokenizer(sentence, return_tensors="pt"))
        assert ids.shape[1] <= 8  # the saved generation config (beam 2, max_length 8) is used
        expected.append({"translation_text": tokenizer.decode(ids[0], skip_special_tokens=True).strip()})
    assert translator(SENTENCES[::2]) == expected
    assert translator(SENTENCES[0]) == expected[:1]


def test_generation_parameters_pass_through(saved):
    path, _, _ = saved
    translator = pipeline("translation", model=str(path))
    results = translator(SENTENCES[:2], num_beams=3, num_return_sequences=3, max_new_tokens=4)
    assert [len(r) for r in results] == [3, 3]
    torch.manual_seed(0)
    assert len(translator(SENTENCES[0], do_sample=True, num_return_sequences=2)) == 2


def test_non_string_input_is_rejected(saved):
    translator = pipeline("translation", model=str(saved[0]))
    with pytest.raises(ValueError, match="translates strings, got int"):
        translator(42)


def test_a_long_input_is_translated_whole_or_named_in_a_warning(saved, caplog):
    import logging

    from transformer_mt import translate
    from transformer_mt.pipelines import length_budget

    _, model, tokenizer = saved
    model.generation_config.max_length = 512  # what training saves now: the position table, not the targets' length
    long_text = " ".join(SENTENCES * 6)
    length = len(tokenizer(long_text)["input_ids"])
    assert length_budget(model, length) == 2 * length + 10
    with caplog.at_level(logging.WARNING, logger="transformer_mt"):
        (translation,) = translate(model, tokenizer, [long_text], num_beams=1)
    ids = tokenizer(translation)["input_ids"]
    records = [record for record in caplog.records if record.name.startswith("transformer_mt")]
    ended = not records
    # this random model rarely stops: then the bound was reached and said so; else it ended on its own
    assert ended or ("reached the length bound" in records[0].getMessage() and len(ids) > length)


def test_translate_keeps_the_order_of_texts_of_different_lengths(saved):
    from transformer_mt import translate

    _, model, tokenizer = saved
    texts = [SENTENCES[0] * 3, SENTENCES[1], SENTENCES[2] * 2, SENTENCES[3]]
    batched = translate(model, tokenizer, texts, batch_size=2, max_new_tokens=4)
    one_by_one = [translate(model, tokenizer, [text], max_new_tokens=4)[0] for text in texts]
    assert batched == one_by_one


def test_translate_warns_about_a_tokenizer_that_is_not_the_models_own(tmp_path, caplog):
    from transformer_mt import train_tokenizer, translate
    from transformer_mt.tokenization import tokenizer_fingerprint

    model, tokenizer = save_tiny(tmp_path)
    model.config.tokenizer_fingerprint = tokenizer_fingerprint(tokenizer)  # as training records it
    translate(model, tokenizer, SENTENCES[:1], max_new_tokens=2)
    assert "is not the one the model was trained with" not in caplog.text
    other = train_tokenizer(["Ein ganz anderer Text.", "Another text entirely."] * 20, vocab_size=300)
    translate(model, other, SENTENCES[:1], max_new_tokens=2)
    assert "translate(): the tokenizer" in caplog.text and "is not the one the model was trained with" in caplog.text


def test_the_length_bound_is_the_decoders_position_table():
    from transformer_mt.modeling.positional_embeddings import LearnedPositionalEmbedding
    from transformer_mt.pipelines import length_budget

    from .utils import tiny_model

    model = tiny_model(position_embedding_type="learned")  # both tables: 64 rows
    model.generation_config.max_length = None
    model.model.decoder.embeddings.embed_positions = LearnedPositionalEmbedding(20, 32)
    assert length_budget(model, 30) == 19  # the decoder's 20 rows, less its start token; not the encoder's 64
