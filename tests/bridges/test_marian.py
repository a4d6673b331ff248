"""Marian -> TransformerMT: identical logits and decoding, a fast tokenizer with Marian's ids (offsets: span repair),
the target language of an Opus-MT model of several targets on the source side, bad checkpoints named."""

import json
import subprocess
import sys

import pytest
import torch
from transformers import (
    AutoModelForSeq2SeqLM,
    AutoTokenizer,
    BertConfig,
    BertModel,
    MarianConfig,
    MarianMTModel,
    pipeline,
)

from transformer_mt import TransformerMTForConditionalGeneration
from transformer_mt.bridges.marian import convert_marian, convert_marian_model
from transformer_mt.checkpoints import load_translator
from transformer_mt.engines.alignment import encode_aligned_pairs
from transformer_mt.engines.inputs import source_rows
from transformer_mt.options import TranslationOptions
from transformer_mt.tags import model_target_languages, target_language_id
from transformer_mt.translation import translate

from ..utils import REPO, marian_checkpoint, remove_weight, require


require("sentencepiece", "MarianTokenizer needs sentencepiece (in the test extra)")


@pytest.fixture(params=[True, False], ids=["shared-vocab", "separate-vocab"])
def converted(request, tmp_path):
    marian_dir, output_dir = tmp_path / "marian", tmp_path / "converted"
    marian = marian_checkpoint(marian_dir, share=request.param)
    convert_marian(str(marian_dir), str(output_dir))
    return marian, marian_dir, output_dir


def test_converted_model_matches_marian_logits_and_decoding(converted):
    marian, marian_dir, output_dir = converted
    model = AutoModelForSeq2SeqLM.from_pretrained(output_dir).eval()
    assert type(model) is TransformerMTForConditionalGeneration
    assert model.config.sinusoidal_layout == "concatenated" and model.config.type_vocab_size == 0
    marian = MarianMTModel.from_pretrained(marian_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(output_dir)
    assert type(tokenizer).__name__ == "TransformerMTTokenizerFast"  # built from its files: the same ids
    batch = tokenizer(
        ["Click the Save button.", "Schließen Sie das Fenster bitte."], return_tensors="pt", padding=True
    )
    assert (
        batch["input_ids"].tolist()
        == AutoTokenizer.from_pretrained(marian_dir)(
            ["Click the Save button.", "Schließen Sie das Fenster bitte."], return_tensors="pt", padding=True
        )["input_ids"].tolist()
    )
    decoder_input_ids = torch.tensor([[marian.config.decoder_start_token_id, 5, 9, 14, 3]] * 2)
    expected = marian(**batch, decoder_input_ids=decoder_input_ids).logits
    logits = model(**batch, decoder_input_ids=decoder_input_ids).logits
    assert (logits - expected).abs().max().item() <= 1e-5
    for settings in (dict(num_beams=1, do_sample=False), dict(num_beams=4, do_sample=False)):
        torch.testing.assert_close(
            model.generate(**batch, max_new_tokens=12, **settings),
            marian.generate(**batch, max_new_tokens=12, **settings),
            rtol=0,
            atol=0,
        )


def test_live_model_conversion_exercises_the_concatenated_sinusoid():
    torch.manual_seed(0)
    config = MarianConfig(
        vocab_size=50,
        d_model=16,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=32,
        decoder_ffn_dim=32,
        max_position_embeddings=128,
        pad_token_id=49,
        decoder_start_token_id=49,
    )
    marian = MarianMTModel(config).eval()
    model = convert_marian_model(marian)
    table = model.model.encoder.embeddings.embed_positions.table(128)
    torch.testing.assert_close(table, marian.model.encoder.embed_positions.weight, rtol=0, atol=1e-6)
    input_ids = torch.randint(0, 49, (2, 100))  # long inputs: positions far into the table
    decoder_input_ids = torch.randint(0, 49, (2, 90))
    expected = marian(input_ids=input_ids, decoder_input_ids=decoder_input_ids).logits
    assert (model(input_ids=input_ids, decoder_input_ids=decoder_input_ids).logits - expected).abs().max() <= 1e-5


def test_the_languages_are_the_ones_given_else_the_checkpoints(tmp_path):
    marian_checkpoint(tmp_path / "marian", share=True)
    convert_marian(str(tmp_path / "marian"), str(tmp_path / "unknown"))
    assert _languages(tmp_path / "unknown") == (None, None)
    convert_marian(str(tmp_path / "marian"), str(tmp_path / "given"), source_lang="en", target_lang="de")
    assert _languages(tmp_path / "given") == ("en", "de")
    for name, languages in (
        ("config.json", {"source_lang": "fr"}),
        ("tokenizer_config.json", {"source_lang": "en", "target_lang": "it"}),
    ):
        path = tmp_path / "marian" / name
        path.write_text(json.dumps({**json.loads(path.read_text()), **languages}))
    convert_marian(str(tmp_path / "marian"), str(tmp_path / "read"))
    assert _languages(tmp_path / "read") == ("fr", "it")  # the config's first, then the tokenizer config's
    convert_marian(str(tmp_path / "marian"), str(tmp_path / "overridden"), source_lang="de")
    assert _languages(tmp_path / "overridden") == ("de", "it")
    marian = MarianMTModel(
        MarianConfig(
            vocab_size=50,
            d_model=16,
            encoder_layers=1,
            decoder_layers=1,
            encoder_attention_heads=2,
            decoder_attention_heads=2,
            encoder_ffn_dim=32,
            decoder_ffn_dim=32,
            pad_token_id=49,
            decoder_start_token_id=49,
        )
    )
    config = convert_marian_model(marian, source_lang="en", target_lang="de").config
    assert (config.source_lang, config.target_lang) == ("en", "de")


def _languages(model_dir) -> tuple:
    config = json.loads((model_dir / "config.json").read_text())
    return config.get("source_lang"), config.get("target_lang")


def test_the_command_records_the_languages(tmp_path):
    from transformer_mt.scripts.convert_marian import main

    marian_checkpoint(tmp_path / "marian", share=True)
    main([str(tmp_path / "marian"), str(tmp_path / "out"), "--source_lang", "en", "--target_lang", "de"])
    assert _languages(tmp_path / "out") == ("en", "de")


def test_another_model_type_is_rejected(tmp_path):
    BertModel(
        BertConfig(vocab_size=30, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32)
    ).save_pretrained(tmp_path / "bert")
    with pytest.raises(ValueError, match="holds a 'bert' checkpoint, not a Marian"):
        convert_marian(str(tmp_path / "bert"), str(tmp_path / "out"))


def test_missing_weight_is_named(tmp_path):
    marian_checkpoint(tmp_path / "marian", share=True)
    remove_weight(tmp_path / "marian", "model.decoder.layers.1.fc2.weight")
    with pytest.raises(ValueError, match=r"missing weights \['model.decoder.layers.1.fc2.weight'\]"):
        convert_marian(str(tmp_path / "marian"), str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()  # nothing half-written


def test_vocabulary_mismatch_is_named(tmp_path):
    marian_checkpoint(tmp_path / "marian", share=True)
    config = json.loads((tmp_path / "marian" / "config.json").read_text())
    config["vocab_size"] = 40
    config["decoder_vocab_size"] = 40
    (tmp_path / "marian" / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="vocab.json has 61 tokens but config.json's vocab_size is 40"):
        convert_marian(str(tmp_path / "marian"), str(tmp_path / "out"))


@pytest.mark.slow  # two convert_marian.py processes
def test_command_line_refuses_to_overwrite(tmp_path):
    marian_checkpoint(tmp_path / "marian", share=True)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    script = [
        sys.executable,
        str(REPO / "scripts" / "convert_marian.py"),
        str(tmp_path / "marian"),
        str(tmp_path / "out"),
    ]
    result = subprocess.run(script, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "is not empty" in result.stderr
    assert (tmp_path / "out" / "keep.txt").read_text() == "mine"
    result = subprocess.run([*script, "--overwrite"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "model.safetensors").exists() and (tmp_path / "out" / "keep.txt").exists()


def test_an_opus_mt_model_of_several_targets_reads_the_target_on_the_source_side(tmp_path, caplog):
    marian_checkpoint(tmp_path / "marian", language_tokens=(">>fra<<", ">>de<<"))
    convert_marian(str(tmp_path / "marian"), str(tmp_path / "out"), source_lang="en")
    model, tokenizer = load_translator(str(tmp_path / "out"))
    assert model.config.source_language_tokens and model_target_languages(model.config, tokenizer) == ["de", "fr"]
    vocab, sentence = tokenizer.get_vocab(), "Click the Save button."
    # ISO 639-1 or 639-3, whichever the vocabulary lists; the decoder is forced to write nothing
    for target, token in (("fr", ">>fra<<"), ("fra", ">>fra<<"), ("de", ">>de<<"), ("deu", ">>de<<")):
        ids, _ = source_rows(tokenizer, model.config, [sentence], TranslationOptions(target_lang=target), ["1"], None)
        assert ids == [[vocab[token], *tokenizer(sentence)["input_ids"]]]
        assert target_language_id(model.config, tokenizer, target) is None
    french = TranslationOptions(target_lang="fr")
    assert translate(model, tokenizer, [sentence], target_lang="fr", num_beams=1, max_new_tokens=3)
    # word alignments read the source so begun, and the language token belongs to no word
    source, _, words, _ = encode_aligned_pairs(tokenizer, model.config, [sentence], ["Hallo."], french)
    assert source["input_ids"][0][0] == vocab[">>fra<<"] and words[0][0] is None and words[0][1] == 0
    with pytest.raises(ValueError, match="does not write 'it': its vocabulary lists de, fra"):
        translate(model, tokenizer, [sentence], target_lang="it", max_new_tokens=3)
    with pytest.raises(ValueError, match=r"writes several languages \(de, fra\): say which, with --target_lang"):
        translate(model, tokenizer, [sentence], max_new_tokens=3)
    # pipeline("translation") on a stream of strings: the Pipeline's own loop reads the language too
    translator = pipeline("translation", model=str(tmp_path / "out"), engine="transformers", split_sentences=False)
    read = []
    generate = translator.model.generate
    translator.model.generate = lambda input_ids, **settings: read.append(input_ids) or generate(input_ids, **settings)
    assert list(translator((text for text in [sentence]), tgt_lang="fr", max_new_tokens=3))
    assert read[0][0].tolist() == [vocab[">>fra<<"], *tokenizer(sentence)["input_ids"]]
    # no segments: a context is not read, with one warning, as for any model trained without one
    with caplog.at_level("WARNING"):
        translate(model, tokenizer, [sentence, "Close."], target_lang="de", context="Menu", max_new_tokens=3)
    assert caplog.text.count("not trained with context (--context_column): the context is not read") == 1


def test_a_placeholder_the_model_loses_is_put_back_from_the_offsets(tmp_path, capsys, caplog):
    from transformer_mt.scripts.translate import main

    marian_checkpoint(tmp_path / "marian")  # random weights: the model writes no placeholder
    convert_marian(str(tmp_path / "marian"), str(tmp_path / "out"), source_lang="en", target_lang="de")
    main(["--model", str(tmp_path / "out"), "--engine", "transformers", "--max_new_tokens", "8", "Click %s now."])
    assert capsys.readouterr().out.rstrip("\n").endswith(" %s")  # lost with MarianTokenizer, which has no offsets
    assert "did not write %s; put back from the word alignment" in caplog.text
