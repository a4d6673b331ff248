"""The batch API (transformer_mt.translation): each text split into sentences, translated in length-sorted batches
and joined back; lengths bounded; n-best hypotheses with scores; warnings that name the text and the sentence."""

import logging
import types

import pytest

from transformer_mt.checkpoints import load_translator
from transformer_mt.engines.inputs import length_batches
from transformer_mt.lengths import length_budget
from transformer_mt.translation import translate, translate_nbest

from .utils import REPO, SENTENCES, save_tiny


SHIPPED = REPO / "models" / "transformer-mt-en-de"
THREE = "Open the Tools menu. Choose Options. Click OK to close the dialog."
# the shipped model's translations of THREE's sentences, each alone, and of THREE as one sequence (before its
# formality fine-tune, whose joined pairs taught it more, it wrote two sentences there and lost "Click OK")
THREE_ALONE = [
    "Öffnen Sie das Menü Extras.",
    "Wählen Sie Optionen.",
    "Klicken Sie auf OK, um den Dialog zu schließen.",
]
THREE_WHOLE = "Öffnen Sie das Menü Extras. Wählen Sie Optionen. Klicken Sie auf OK, um den Dialog zu schließen."


def test_a_long_input_is_translated_whole_or_named_in_a_warning(short_translator, caplog, monkeypatch):
    _, model, tokenizer = short_translator
    # what training saves now: the position table, not the targets' length; undone after the test, since the
    # fixture's model is shared (test_pipelines reads its saved max_length 8 from it)
    monkeypatch.setattr(model.generation_config, "max_length", 512)
    long_text = " ".join(SENTENCES * 6)
    length = len(tokenizer(long_text)["input_ids"])
    assert length_budget(model, length) == 2 * length + 10
    with caplog.at_level(logging.WARNING, logger="transformer_mt"):
        (translation,) = translate(model, tokenizer, [long_text], num_beams=1, split_sentences=False)
    ids = tokenizer(translation)["input_ids"]
    records = [record for record in caplog.records if record.name.startswith("transformer_mt")]
    ended = not records
    # this random model rarely stops: then the bound was reached and said so; else it ended on its own
    assert ended or ("reached the length bound" in records[0].getMessage() and len(ids) > length)


def test_translate_keeps_the_order_of_texts_of_different_lengths(short_translator):
    _, model, tokenizer = short_translator
    texts = [SENTENCES[0] * 3, SENTENCES[1], SENTENCES[2] * 2, SENTENCES[3]]
    batched = translate(model, tokenizer, texts, batch_size=2, max_new_tokens=4)
    one_by_one = [translate(model, tokenizer, [text], max_new_tokens=4)[0] for text in texts]
    assert batched == one_by_one


def test_translate_warns_about_a_tokenizer_that_is_not_the_models_own(tmp_path, caplog):
    from transformer_mt import train_tokenizer
    from transformer_mt.tokenization import tokenizer_fingerprint

    model, tokenizer = save_tiny(tmp_path)
    model.config.tokenizer_fingerprint = tokenizer_fingerprint(tokenizer)  # as training records it
    translate(model, tokenizer, SENTENCES[:1], max_new_tokens=2)
    assert "is not the one the model was trained with" not in caplog.text
    other = train_tokenizer(["Ein ganz anderer Text.", "Another text entirely."] * 20, vocab_size=300)
    translate(model, other, SENTENCES[:1], max_new_tokens=2)
    assert "translate(): the tokenizer" in caplog.text and "is not the one the model was trained with" in caplog.text


def test_the_length_bound_is_the_decoders_position_table():
    from transformer_mt.modeling.positional_embeddings import build_position_embedding

    from .utils import tiny_config, tiny_model

    model = tiny_model(position_embedding_type="learned")  # both tables: 64 rows
    model.generation_config.max_length = None
    short = tiny_config(position_embedding_type="learned", max_position_embeddings=20)
    model.model.decoder.embeddings.embed_positions = build_position_embedding(short, short.decoder_attention_heads)
    assert length_budget(model, 30) == 19  # the decoder's 20 rows, less its start token; not the encoder's 64


def test_length_batches_sort_by_length_and_cover_every_index():
    lengths = [5, 1, 4, 1, 3, 9, 2]
    batches = length_batches(lengths, 3)
    assert batches == [[1, 3, 6], [4, 2, 0], [5]]
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))


@pytest.fixture(scope="module")
def shipped():
    return load_translator(SHIPPED)


def test_each_sentence_of_a_text_is_translated_as_it_is_alone(shipped):
    model, tokenizer = shipped
    sentences = ["Open the Tools menu.", "Choose Options.", "Click OK to close the dialog."]
    assert [translate(model, tokenizer, [sentence])[0] for sentence in sentences] == THREE_ALONE
    assert translate(model, tokenizer, [THREE]) == [" ".join(THREE_ALONE)]
    assert translate(model, tokenizer, [THREE], batch_size=1) == [" ".join(THREE_ALONE)]
    # the separators are the source's; a text without a sentence end is one sentence
    assert translate(
        model,
        tokenizer,
        ["Open the Tools menu.\nChoose Options.  Click OK to close the dialog.", "Click OK to close the dialog"],
    ) == [
        "Öffnen Sie das Menü Extras.\nWählen Sie Optionen.  Klicken Sie auf OK, um den Dialog zu schließen.",
        "Klicken Sie auf OK, um den Dialog zu schließen",
    ]
    # without splitting: one sequence, as before
    assert translate(model, tokenizer, [THREE], split_sentences=False) == [THREE_WHOLE]


def test_nbest_joins_the_kth_hypotheses_and_sums_their_scores(shipped):
    model, tokenizer = shipped
    sentences = ["Choose Options.", "Click OK to close the dialog."]
    settings = dict(num_beams=4, num_return_sequences=3, scores=True)
    # the same two sentences in the same batch, given as two texts
    first, second = translate_nbest(model, tokenizer, sentences, split_sentences=False, **settings)
    assert len({text for text, _ in first}) == 3 and len({text for text, _ in second}) == 3
    assert translate_nbest(model, tokenizer, [" ".join(sentences)], **settings) == [
        [(f"{first[k][0]} {second[k][0]}", first[k][1] + second[k][1]) for k in range(3)]
    ]
    assert first[0][0] == "Wählen Sie Optionen." and second[1][0] == "Klicken Sie hier, um den Dialog zu schließen."


def test_a_blank_text_gives_nothing_and_calls_no_model(shipped, monkeypatch):
    model, tokenizer = shipped
    rows, generate = [], model.generate

    def counting_generate(**inputs):
        rows.append(inputs["input_ids"].shape[0])
        return generate(**inputs)

    monkeypatch.setattr(model, "generate", counting_generate)
    assert translate(model, tokenizer, ["", "  \t", "Choose Options."]) == ["", "", THREE_ALONE[1]]
    assert rows == [1]
    assert translate_nbest(model, tokenizer, ["", " "], scores=True) == [[], []] and rows == [1]
    assert translate(model, tokenizer, [" ", THREE], split_sentences=False) == ["", THREE_WHOLE] and rows == [1, 1]


def test_warnings_name_the_text_and_the_sentence(short_translator, caplog):
    _, model, tokenizer = short_translator
    texts = ["Close the dialog.", "Click the Save button. Close the dialog."]
    never_ends = dict(num_beams=1, suppress_tokens=[tokenizer.eos_token_id])  # every translation reaches the bound
    with caplog.at_level(logging.WARNING, logger="transformer_mt"):
        translate(model, tokenizer, texts, **never_ends)
        split = sorted(record.getMessage().split(":")[0] for record in caplog.records)
        caplog.clear()
        translate(model, tokenizer, texts, split_sentences=False, **never_ends)
        whole = sorted(record.getMessage().split(":")[0] for record in caplog.records)
    assert split == ["Text 1, sentence 1", "Text 2, sentence 1", "Text 2, sentence 2"]
    assert whole == ["Text 1", "Text 2"]


def test_without_a_language_splitting_asks_for_one(tmp_path):
    save_tiny(tmp_path, source_lang=None)
    model, tokenizer = load_translator(tmp_path)
    with pytest.raises(
        ValueError,
        match=rf"{tmp_path} has no source_lang in its config: pass --source_lang \(or "
        r"source_lang=\), or --no_split_sentences",
    ):
        translate(model, tokenizer, SENTENCES[:1], max_new_tokens=2)
    given = translate(model, tokenizer, SENTENCES[:1], max_new_tokens=2, source_lang="en")
    assert given == translate(model, tokenizer, SENTENCES[:1], max_new_tokens=2, split_sentences=False)


class EchoEngine:
    """An engine that writes back what it is shown (the tokens a span-token model learned to carry), recording it."""

    name, reason, device, workers, max_positions = "echo", "a test engine", "cpu", 1, None
    calibration = calibration_problem = None  # the protocol's: no calibration beside it
    tokenizer = None  # no character offsets: nothing is aligned or repaired

    def __init__(self, span_tokens: bool):
        self.config = types.SimpleNamespace(source_lang="en", target_lang="de", span_tokens=span_tokens)
        self.seen = []

    def translate_sentences(self, sentences, options, names=None, target_prefix=None):
        self.seen += sentences
        return [[(sentence.replace("Open", "Öffne"), None)] for sentence in sentences]


def test_a_span_token_model_sees_its_spans_as_tokens_and_others_are_warned_once(caplog):
    from transformer_mt.options import TranslationOptions
    from transformer_mt.translation import translate_texts

    text = "Open %s at https://example.org/x in 1.5 s"
    engine = EchoEngine(span_tokens=True)
    assert translate_texts(engine, [text], TranslationOptions()) == [[(text.replace("Open", "Öffne"), None)]]
    assert engine.seen == ["Open {0} at {1} in {2} s"]
    engine = EchoEngine(span_tokens=False)
    with caplog.at_level(logging.WARNING, logger="transformer_mt.translation"):
        for _ in range(2):
            assert translate_texts(engine, [text], TranslationOptions()) == [[(text.replace("Open", "Öffne"), None)]]
    assert engine.seen == [text, text]
    assert [record.getMessage() for record in caplog.records].count(
        "this model was not trained with span tokens: placeholders, URLs, paths and numbers are left to it, then "
        "checked and put back where it lost them (each one named)"
    ) == 1
