"""Tags: special tokens kept whole (trained or added to a loaded tokenizer, the model grown to match), a source tag
for a data set, and a model of two target languages that follows its language token through both engines."""

import csv

import pytest
import sacrebleu
import torch
from transformers import AutoTokenizer

from transformer_mt.checkpoints import load_translator
from transformer_mt.data import add_joined_pairs, load_parallel_data
from transformer_mt.engines import load_engine, resolve_engine
from transformer_mt.options import TranslationOptions
from transformer_mt.scripts.translate import main as translate_main
from transformer_mt.tags import (
    add_special_tokens,
    fit_model_to_tokenizer,
    language_token,
    target_language_id,
    target_languages,
)
from transformer_mt.text import sentences
from transformer_mt.tokenization import tokenizer_fingerprint
from transformer_mt.translation import translate

from .utils import DATA, DECIDED, copy_tokenizer, greedy_margins, tiny_model, train


def test_special_tokens_are_kept_whole_and_saved_with_the_tokenizer(tmp_path):
    train(
        tmp_path / "run",
        "--do_train",
        "--max_steps",
        2,
        "--special_tokens",
        "<BT>",
        "<web>",
        "--source_prefix",
        "<dom>",
    )
    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "run")
    for tag in ("<BT>", "<web>", "<dom>"):
        ids = tokenizer(f"{tag} Click the button.", add_special_tokens=False)["input_ids"]
        assert ids[0] == tokenizer.convert_tokens_to_ids(tag) != tokenizer.unk_token_id
    model, loaded = load_translator(str(tmp_path / "run"))  # strict: the model's tables hold every tag
    assert model.config.vocab_size == len(loaded)


def test_tags_added_to_a_loaded_model_grow_its_tables_and_its_fingerprint(tmp_path, trained_tiny_model):
    base, base_tokenizer = load_translator(str(trained_tiny_model))
    train(
        tmp_path / "tagged",
        "--do_train",
        "--max_steps",
        2,
        "--model_name_or_path",
        trained_tiny_model,
        "--special_tokens",
        "<formal>",
        "<informal>",
    )
    model, tokenizer = load_translator(str(tmp_path / "tagged"))  # strict loading accepts the pair
    assert len(tokenizer) == len(base_tokenizer) + 2 == model.config.vocab_size
    assert model.config.tokenizer_fingerprint == tokenizer_fingerprint(tokenizer)
    assert model.config.tokenizer_fingerprint != base.config.tokenizer_fingerprint
    rows = model.get_input_embeddings().weight
    assert rows.shape[0] == len(tokenizer)
    # each added token has a row of its own, not the others' mean: two tags start apart and stay apart
    formal, informal = rows[tokenizer.convert_tokens_to_ids(["<formal>", "<informal>"])].float()
    assert torch.nn.functional.cosine_similarity(formal, informal, dim=0) < 0.5
    assert torch.nn.functional.cosine_similarity(formal, rows[: len(base_tokenizer)].float().mean(0), dim=0) < 0.5


@pytest.mark.parametrize("tied", [True, False])
def test_tokens_added_in_two_steps_get_rows_of_their_own_in_both_token_tables(tied):
    tokenizer = copy_tokenizer()
    model = tiny_model(vocab_size=len(tokenizer), tie_word_embeddings=tied)
    for tag in ("<formal>", "<informal>"):  # one at a time, as two fine-tunes would add them
        add_special_tokens(tokenizer, [tag])
        assert fit_model_to_tokenizer(model, tokenizer)
    rows, output = model.get_input_embeddings().weight, model.get_output_embeddings().weight
    assert (output.data_ptr() == rows.data_ptr()) == tied
    formal, informal = rows[-2:]
    cosine = torch.nn.functional.cosine_similarity
    assert cosine(formal, informal, dim=0) < 0.5 and cosine(formal, rows[:-2].mean(0), dim=0) < 0.5
    assert torch.equal(output[-2:], rows[-2:])  # an output table of its own starts with the same rows


def test_joined_pairs_never_mix_target_languages():
    splits = load_parallel_data(str(DATA), "en", "de")
    train_split = splits["train"].select(range(60))
    dataset = train_split.add_column("lang", ["de" if i % 3 else "fr" for i in range(60)])
    joined, added = add_joined_pairs(
        dataset, "en", "de", 0.5, seed=0, fits=lambda s, t: [True] * len(s), same=["lang"]
    )
    assert 20 < added <= 30  # runs that would mix languages are left out: fewer than asked, perhaps
    originals = {(row["en"], row["lang"]) for row in dataset}
    for row in joined.select(range(60, len(joined))):
        languages = {language for source, language in originals if source in row["en"]}
        assert languages == {row["lang"]}
    # and a register the data gives (a rewrite's tag, lifted off it) joins only its own register, which it keeps
    given = dataset.add_column("given_register", ["informal" if i % 5 == 0 else "" for i in range(60)])
    joined, added = add_joined_pairs(
        given, "en", "de", 0.5, seed=0, fits=lambda s, t: [True] * len(s), same=["lang", "given_register"]
    )
    originals = {(row["en"], row["lang"], row["given_register"]) for row in given}
    assert added > 5
    for row in joined.select(range(60, len(joined))):
        kept = {(language, register) for source, language, register in originals if source in row["en"]}
        assert kept == {(row["lang"], row["given_register"])}


def test_language_and_tag_errors_name_what_is_allowed(tmp_path):
    tokenizer = copy_tokenizer()
    with pytest.raises(ValueError, match="a special token is one piece of text without spaces"):
        add_special_tokens(tokenizer, ["<B T>"])
    add_special_tokens(tokenizer, [">>de<<", ">>en<<"])
    assert target_languages(tokenizer) == ["de", "en"]

    class Config:
        target_lang = None
        _name_or_path = "tiny"

    with pytest.raises(ValueError, match=r"tiny writes several languages \(de, en\): say which, with --target_lang"):
        target_language_id(Config(), tokenizer, None)
    with pytest.raises(ValueError, match="tiny does not write 'fr'; it writes: de, en"):
        target_language_id(Config(), tokenizer, "fr")
    with pytest.raises(ValueError, match="--source_prefix is one tag without spaces"):
        train(tmp_path / "run", "--do_train", "--max_steps", 2, "--source_prefix", "<B T>")


@pytest.fixture(scope="module")
def two_targets(tmp_path_factory):
    """A tiny model trained on two targets in one data set: German (the shipped pairs) and English (a copy of the
    source), each pair's language in a column; 600 steps teach it to follow its language token, not its 100 training
    pairs by heart: it is a weak model, whose greedy choices include near ties (greedy_margins)."""
    root = tmp_path_factory.mktemp("targets")
    data = root / "data"
    data.mkdir()
    splits = load_parallel_data(str(DATA), "en", "de")
    short = {
        split: [row for row in splits[split] if len(row["en"]) < 40 and len(row["de"]) < 50][:count]
        for split, count in (("train", 100), ("validation", 8), ("test", 8))
    }  # within TINY's 32 tokens
    for split, rows in short.items():
        with open(data / f"{split}.tsv", "w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f, delimiter="\t", quoting=csv.QUOTE_NONE, escapechar="\\")
            writer.writerow(["en", "text", "lang"])
            for row in rows:
                writer.writerow([row["en"], row["de"], "de"])
                writer.writerow([row["en"], row["en"], "en"])
    torch.manual_seed(0)
    train(
        root / "run",
        "--data",
        data,
        "--source_lang",
        "en",
        "--target_lang",
        "text",
        "--target_lang_column",
        "lang",
        "--max_train_samples",
        200,
        "--do_train",
        "--do_predict",
        "--predict_with_generate",
        "--max_steps",
        600,
        "--lr_scheduler_type",
        "constant",
        "--dropout",
        0,
        "--per_device_train_batch_size",
        32,
    )
    return root / "run", [row["en"] for row in short["train"][:12]]


def chrf(hypotheses, references):
    return sacrebleu.corpus_chrf(hypotheses, [references]).score


@pytest.mark.slow  # two_targets: a 600-step training run
def test_a_model_of_two_targets_writes_the_language_asked_for(two_targets):
    run, sources = two_targets
    model, tokenizer = load_translator(str(run))
    assert target_languages(tokenizer) == ["de", "en"] and model.config.target_lang is None
    copied = translate(model, tokenizer, sources, num_beams=1, target_lang="en")
    german = translate(model, tokenizer, sources, num_beams=1, target_lang="de")
    # asked for English it copies its input; asked for German it writes something else
    assert chrf(copied, sources) > 60
    assert chrf(copied, sources) > chrf(german, sources) + 25
    with pytest.raises(ValueError, match=r"writes several languages \(de, en\)"):
        translate(model, tokenizer, sources[:1])


def recorded_generate(monkeypatch, model) -> dict:
    """{source ids: the ids generate() wrote after the decoder start token, to </s>}, filled as an engine calls
    `model.generate`."""
    written, generate, eos = {}, model.generate, model.generation_config.eos_token_id

    def recording(**inputs):
        sequences = generate(**inputs)
        for ids, mask, row in zip(inputs["input_ids"], inputs["attention_mask"], sequences[:, 1:].tolist()):
            written[tuple(ids[mask.bool()].tolist())] = row[: row.index(eos) + 1] if eos in row else row
        return sequences

    monkeypatch.setattr(model, "generate", recording)
    return written


class RecordedTranslator:
    """A CTranslate2 Translator that keeps each batch it translates, to read the tokens it wrote (`written`)."""

    def __init__(self, translator):
        self.translator, self.batches = translator, []

    def translate_batch(self, source, target_prefix=None, **settings):
        results = self.translator.translate_batch(source, target_prefix, **settings)
        self.batches.append((source, results))
        return results

    def written(self) -> dict:
        """{source tokens: the first hypothesis' tokens}."""
        return {
            tuple(tokens): result.result().hypotheses[0]
            for source, results in self.batches
            for tokens, result in zip(source, results)
        }


@pytest.mark.slow  # two_targets: a 600-step training run
def test_both_engines_force_the_language_token_alike(two_targets, tmp_path, monkeypatch):
    """Each engine begins every translation with the language's token and writes that language; their greedy
    translations are the same wherever no choice was a near tie (greedy_margins): this weak model has ties that
    float32 differences between the engines break either way."""
    monkeypatch.setenv("TRANSFORMER_MT_CACHE", str(tmp_path))
    run, _ = two_targets
    sources = list(dict.fromkeys(load_parallel_data(str(run.parent / "data"), "en", "text")["train"]["en"]))
    model, tokenizer = load_translator(str(run))
    engines = {
        "transformers": resolve_engine(model, tokenizer, "transformers"),
        "ctranslate2": load_engine(str(run), "ctranslate2", model=model, tokenizer=tokenizer),
    }
    generated = recorded_generate(monkeypatch, model)
    translator = RecordedTranslator(engines["ctranslate2"].translator)
    monkeypatch.setattr(engines["ctranslate2"], "translator", translator)
    ids = [tokenizer(source)["input_ids"] for source in sources]
    written = {}
    for language in ("de", "en"):
        generated.clear()
        translator.batches.clear()
        options = TranslationOptions(num_beams=1, target_lang=language, split_sentences=False)
        written[language] = {
            name: [hypotheses[0][0] for hypotheses in engine.translate_sentences(sources, options)]
            for name, engine in engines.items()
        }
        outputs = [generated[tuple(source)] for source in ids]
        fast = translator.written()
        token = language_token(language)
        assert tokenizer.convert_ids_to_tokens([output[0] for output in outputs]) == [token] * len(sources)
        assert [fast[tuple(tokenizer.convert_ids_to_tokens(source))][0] for source in ids] == [token] * len(sources)
        # the same translations where generate()'s every choice was decided (and, with it, CTranslate2's)
        margins = greedy_margins(model, ids, outputs, forced=1)
        decided = [i for i, margin in enumerate(margins) if margin > DECIDED]
        assert len(decided) >= len(sources) // 2, sorted(margins)  # a comparison, not a vacuous one
        assert [written[language]["ctranslate2"][i] for i in decided] == [
            written[language]["transformers"][i] for i in decided
        ]
    for name in engines:  # each writes the language asked for: English copies its input, German does not
        copied, german = written["en"][name], written["de"][name]
        assert chrf(copied, sources) > 60 and chrf(copied, sources) > chrf(german, sources) + 25, name


@pytest.mark.slow  # two_targets: a 600-step training run
def test_translate_py_takes_the_target_language(two_targets, tmp_path, capsys):
    run, sources = two_targets
    translate_main(
        [
            "--model",
            str(run),
            "--target_lang",
            "en",
            "--engine",
            "transformers",
            "--num_beams",
            "1",
            "--no_progress",
            *sources[:3],
        ]
    )
    written = capsys.readouterr().out.splitlines()
    model, tokenizer = load_translator(str(run))
    assert written == translate(model, tokenizer, sources[:3], num_beams=1, target_lang="en")


@pytest.mark.slow  # two_targets: a 600-step training run
def test_a_source_prefix_begins_every_sentence(two_targets):
    run, sources = two_targets
    model, tokenizer = load_translator(str(run))
    text, pieces = "Password required. Shading.", ["Password required.", "Shading."]
    assert sentences.split(text, "en")[0] == pieces  # two sentences
    tagged = translate(model, tokenizer, [text], num_beams=1, target_lang="de", source_prefix="<x>")
    each = translate(
        model, tokenizer, [f"<x> {piece}" for piece in pieces], num_beams=1, target_lang="de", split_sentences=False
    )
    assert tagged == [" ".join(each)]


@pytest.mark.slow  # two_targets: a 600-step training run
@pytest.mark.parametrize("split_sentences", [True, False])
def test_the_pipeline_takes_the_target_language_as_tgt_lang(two_targets, split_sentences):
    from transformers import pipeline

    run, sources = two_targets
    model, tokenizer = load_translator(str(run))
    translator = pipeline("translation", model=str(run), split_sentences=split_sentences)
    for language in ("de", "en"):
        written = [result["translation_text"] for result in translator(sources[:4], tgt_lang=language, num_beams=1)]
        assert written == translate(
            model, tokenizer, sources[:4], num_beams=1, target_lang=language, split_sentences=split_sentences
        )
    with pytest.raises(ValueError, match="writes several languages"):
        translator(sources[:1])


@pytest.mark.slow  # two_targets: a 600-step training run
def test_the_server_serves_each_target_language_of_a_model(two_targets):
    import argparse

    from transformer_mt.commands.serve import served_models
    from transformer_mt.serving import Limits
    from transformer_mt.serving.fields import translate_request

    run, sources = two_targets
    args = argparse.Namespace(
        models=[str(run)],
        engine="transformers",
        quantization=None,
        intra_threads=1,
        device="auto",
        min_confidence=None,
        inter_threads=None,
    )
    served = {(model.source, model.target): model for model in served_models(args)}
    assert sorted(served) == [("en", "de"), ("en", "en")]
    model, tokenizer = load_translator(str(run))
    for language in ("de", "en"):
        direction = served[("en", language)]  # as the server asks it for one hypothesis of each sentence
        request = translate_request({"q": sources[:4], "source": "en", "target": language}, Limits())
        hypotheses = direction.translate(sources[:4], direction.options(request))
        assert [hypothesis[0][0] for hypothesis in hypotheses] == translate(
            model, tokenizer, sources[:4], target_lang=language, split_sentences=False
        )


def test_a_language_shaped_tag_of_a_one_target_model_is_no_target_language(tmp_path):
    # an Opus-MT-style >>fr<< tag on the source side of an en->de model: the model still writes German only
    train(tmp_path / "run", "--do_train", "--max_steps", 2, "--source_prefix", ">>fr<<")
    model, tokenizer = load_translator(str(tmp_path / "run"))
    assert target_languages(tokenizer) == ["fr"] and model.config.target_lang == "de"
    assert translate(model, tokenizer, ["Click."], num_beams=1, max_new_tokens=3)  # no language asked for
    with pytest.raises(ValueError, match="translates into de only, not 'fr'"):
        translate(model, tokenizer, ["Click."], target_lang="fr")


@pytest.mark.slow  # two_targets: a 600-step training run
def test_evaluations_of_several_targets_keep_the_runs_decoding_settings(two_targets):
    run, _ = two_targets
    # the test split's predictions were forced to each reference's language and decoded greedily, as asked
    # (--generation_num_beams 2 in the tiny recipe; with the saved generation config's 4 beams they would differ)
    predictions = (run / "test_predictions.txt").read_text(encoding="utf-8").splitlines()
    model, tokenizer = load_translator(str(run))
    rows = list(csv.DictReader(open(run.parent / "data" / "test.tsv", encoding="utf-8"), delimiter="\t"))
    # (the trainer's predictions are the model's own: the engine's hypotheses, without the case folding and span
    # repairs translate() adds for a user's text)
    engine = resolve_engine(model, tokenizer, "transformers")
    expected = [
        engine.translate_sentences(
            [row["en"]],
            TranslationOptions(num_beams=2, target_lang=row["lang"], split_sentences=False, max_new_tokens=16),
        )[0][0][0]
        for row in rows
    ]
    assert predictions == expected and len(set(predictions)) > len(rows) // 2


def test_a_language_column_without_a_value_is_named(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.tsv").write_text("en\ttext\tlang\nClick.\tKlicken.\tde\nOpen.\tÖffnen.\t\n", encoding="utf-8")
    with pytest.raises(
        ValueError, match="--target_lang_column 'lang': pair 2 of the train split has no target language"
    ):
        train(
            tmp_path / "run",
            "--data",
            data,
            "--target_lang",
            "text",
            "--target_lang_column",
            "lang",
            "--do_train",
            "--max_steps",
            1,
            "--max_train_samples",
            2,
        )
