"""A message's context and a register through both engines (issue 52): a model trained with context reads
`options.context` as each sentence's second segment, on generate() and CTranslate2 alike; the register's tag is
read first; what a model cannot read is refused by name or falls back with a word, never silently."""

import json
import logging

import polib
import pytest
import yaml
from lxml import etree

from transformer_mt.documents.files import po_context, translate_bytes
from transformer_mt.engines import load_engine
from transformer_mt.engines.inputs import source_rows
from transformer_mt.experiments import file_contexts
from transformer_mt.experiments.context_study import read_messages
from transformer_mt.options import OptionError, TranslationOptions
from transformer_mt.scripts import translate as translate_script
from transformer_mt.translation import translate_texts

from .utils import copy_tokenizer, require, save_context_model, save_copy_model, train_copy_model


require("ctranslate2", "the fast engine needs ctranslate2: pip install 'transformer-mt[fast]'")

SENTENCES = ["Open the file.", "Click the Save button.", "Select the rows that you want to delete.", "Format"]
CONTEXT = "Menu of the file dialog"


@pytest.fixture(scope="module")
def context_model(tmp_path_factory):
    """A copy-trained tiny model saved as trained with context (`source_context`), its segment-1 vector made to
    matter, and a generation config CTranslate2 decodes alike (greedy)."""
    directory = tmp_path_factory.mktemp("context") / "model"
    save_context_model(directory)
    return directory


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_MT_CACHE", str(tmp_path / "cache"))


def test_both_engines_read_the_context_alike(context_model, cache):
    engines = [load_engine(str(context_model), name) for name in ("transformers", "ctranslate2")]
    with_context = TranslationOptions(context=CONTEXT, scores=True)
    found = [engine.translate_sentences(SENTENCES, with_context) for engine in engines]
    alone = [engine.translate_sentences(SENTENCES, TranslationOptions(scores=True)) for engine in engines]
    assert found[0] != alone[0]  # the context changes what the model writes
    for translations in (found, alone):
        generate, ctranslate2 = translations
        assert [text for [(text, _)] in ctranslate2] == [text for [(text, _)] in generate]
        assert [score for [(_, score)] in ctranslate2] == pytest.approx([score for [(_, score)] in generate], abs=1e-4)


def test_the_context_is_the_second_segment_and_counts_toward_the_limit(context_model, caplog):
    engine = load_engine(str(context_model), "transformers")
    tokenizer = engine.tokenizer
    [row], [segments] = source_rows(
        tokenizer, engine.config, ["Open the file."], TranslationOptions(context=CONTEXT), ["1"], None
    )
    assert row == tokenizer("Open the file.", CONTEXT)["input_ids"]
    assert segments == tokenizer("Open the file.", CONTEXT, return_token_type_ids=True)["token_type_ids"]
    assert 0 in segments and 1 in segments
    alone = tokenizer("Open the file.")["input_ids"]
    with caplog.at_level(logging.WARNING):  # the two do not fit: the sentence alone, named
        [row], [segments] = source_rows(
            tokenizer,
            engine.config,
            ["Open the file."],
            TranslationOptions(context=CONTEXT),
            ["3, sentence 1"],
            len(alone) + 1,
        )
    assert row == alone and segments == [0] * len(alone)
    assert "Text 3, sentence 1: its context does not fit beside it" in caplog.text


def test_a_model_trained_without_context_says_it_reads_none(tmp_path, caplog):
    tokenizer = copy_tokenizer()
    model = train_copy_model(tokenizer)
    with caplog.at_level(logging.WARNING):
        rows, segments = source_rows(
            tokenizer, model.config, SENTENCES, TranslationOptions(context=CONTEXT), ["1", "2", "3", "4"], None
        )
    assert rows == tokenizer(SENTENCES)["input_ids"] and segments is None
    assert "not trained with context" in caplog.text


def test_a_register_is_read_first_refused_or_left_to_the_model():
    tokenizer = copy_tokenizer()
    tokenizer.add_special_tokens({"additional_special_tokens": ["<formal>", "<informal>"]})
    model = train_copy_model(tokenizer)
    plain = tokenizer(SENTENCES)["input_ids"]
    for formality in ("more", "less"):
        with pytest.raises(OptionError, match=f"formality '{formality}' needs a model trained with the register"):
            source_rows(tokenizer, model.config, SENTENCES, TranslationOptions(formality=formality), [], None)
    for formality in ("prefer_more", "prefer_less", "default"):  # the model's own register
        assert (
            source_rows(tokenizer, model.config, SENTENCES, TranslationOptions(formality=formality), [], None)[0]
            == plain
        )
    model.config.formality_tags = True
    for formality, tag in (("more", "<formal>"), ("prefer_less", "<informal>")):
        rows, _ = source_rows(tokenizer, model.config, SENTENCES, TranslationOptions(formality=formality), [], None)
        assert rows == tokenizer([f"{tag} {sentence}" for sentence in SENTENCES])["input_ids"]
        assert all(row[0] == tokenizer.convert_tokens_to_ids(tag) for row in rows)
    rows, _ = source_rows(
        tokenizer,
        model.config,
        [f"<BT> {SENTENCES[0]}"],
        TranslationOptions(formality="more", source_prefix="<BT>"),
        [],
        None,
    )  # after the run's own prefix, as training put it
    assert rows == tokenizer([f"<BT> <formal> {SENTENCES[0]}"])["input_ids"]


@pytest.mark.parametrize(
    "bad, message",
    [
        (dict(context=" "), "context is a text to read beside the source"),
        (dict(formality="polite"), "formality must be one of default, more"),
    ],
)
def test_bad_context_and_formality_are_named(bad, message):
    with pytest.raises(OptionError, match=message):
        TranslationOptions(**bad)


PO = """msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\\n"

msgctxt "Menu of the file dialog"
msgid "Open the file."
msgstr ""

msgctxt "Toolbar tooltip"
msgid "Open the file."
msgstr ""

#. TRANSLATORS: Toolbar tooltip
msgid "Open the file."
msgstr ""

msgid "Open the file."
msgstr ""
"""


def _in_contexts(context_model, contexts, format="text") -> list[str]:
    engine = load_engine(str(context_model), "transformers")
    options = TranslationOptions(format=format, guards=False)
    return [
        translate_texts(engine, ["Open the file."], options.replace(context=context))[0][0][0] for context in contexts
    ]


def test_a_po_message_is_translated_with_its_msgctxt_or_comment_by_the_command(context_model, tmp_path):
    (tmp_path / "in.po").write_text(PO, encoding="utf-8")
    flags = ["--model", str(context_model), "--engine", "transformers", "--no_guards"]
    paths = ["--input", str(tmp_path / "in.po"), "--output", str(tmp_path / "out.po")]
    translate_script.main([*flags, *paths, "--context_from", "msgctxt", "comments"])
    found = [entry.msgstr for entry in polib.pofile(str(tmp_path / "out.po"))]
    expected = _in_contexts(context_model, ("Menu of the file dialog", "Toolbar tooltip", "Toolbar tooltip", None))
    assert found == expected and len(set(expected)) == 3  # one message, three translations: its contexts'


def test_a_po_message_reads_its_comments_only_when_asked():
    [tagged, commented, plain] = polib.pofile(PO)[1:]
    assert po_context(tagged) == po_context(tagged, {"msgctxt", "comments"}) == "Toolbar tooltip"
    assert po_context(commented) is None and po_context(plain, {"msgctxt", "comments"}) is None
    assert po_context(commented, {"comments"}) == "Toolbar tooltip"  # "TRANSLATORS:" dropped
    assert po_context(tagged, {"comments"}) is None  # comments are read only where there is no msgctxt
    with pytest.raises(ValueError, match="contexts are read from msgctxt, comments, keys, got notes"):
        translate_bytes(PO.encode(), "po", lambda texts, format: texts, contexts={"notes"})
    with pytest.raises(ValueError, match="contexts is a set of msgctxt, comments, keys, got 'keys'"):
        translate_bytes(PO.encode(), "po", lambda texts, format: texts, contexts="keys")


def test_context_from_said_to_a_model_without_context_is_named_unread(tmp_path, capsys):
    save_copy_model(tmp_path / "plain")
    (tmp_path / "in.json").write_text('{"menu": "Open the file."}', encoding="utf-8")
    paths = ["--input", str(tmp_path / "in.json"), "--output", str(tmp_path / "out.json")]
    translate_script.main(
        ["--model", str(tmp_path / "plain"), "--engine", "transformers", *paths, "--context_from", "keys"]
    )
    assert "--context_from keys is not read: this model was not trained with context" in capsys.readouterr().err


@pytest.mark.parametrize(
    "name, document",
    [
        ("in.json", '{"menu": {"file": "Open the file."}, "toolbar": ["Open the file."], "open": "Open the file."}'),
        ("in.yaml", "menu:\n  file: Open the file.\ntoolbar:\n- Open the file.\nopen: Open the file.\n"),
    ],
)
def test_a_string_file_value_is_translated_with_its_key_path(context_model, tmp_path, name, document):
    (tmp_path / name).write_text(document, encoding="utf-8")
    flags = ["--model", str(context_model), "--engine", "transformers", "--no_guards"]
    paths = ["--input", str(tmp_path / name), "--output", str(tmp_path / f"out-{name}")]
    translate_script.main([*flags, *paths, "--context_from", "keys"])
    written = yaml.safe_load((tmp_path / f"out-{name}").read_text(encoding="utf-8"))  # JSON is YAML
    found = [written["menu"]["file"], written["toolbar"][0], written["open"]]
    expected = _in_contexts(context_model, ("menu.file", "toolbar.0", "open"))
    assert found == expected and len(set(expected)) > 1  # one text, translated by its key path


XLIFF = """<?xml version="1.0" encoding="UTF-8"?>
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2">
  <file source-language="en" target-language="de" datatype="plaintext" original="app">
    <body>
      <trans-unit id="1" resname="Menu of the file dialog"><source>Open the file.</source></trans-unit>
      <trans-unit id="2"><source>Open the file.</source><note>Toolbar tooltip</note></trans-unit>
      <trans-unit id="3"><source>Open the file.</source></trans-unit>
    </body>
  </file>
</xliff>
"""


def test_an_xliff_unit_is_translated_with_its_resname_or_note_by_the_command(context_model, tmp_path):
    (tmp_path / "in.xlf").write_text(XLIFF, encoding="utf-8")
    flags = ["--model", str(context_model), "--engine", "transformers", "--no_guards"]
    translate_script.main([*flags, "--input", str(tmp_path / "in.xlf"), "--output", str(tmp_path / "out.xlf")])
    root = etree.parse(str(tmp_path / "out.xlf")).getroot()
    found = ["".join(target.itertext()) for target in root.iter("{urn:oasis:names:tc:xliff:document:1.2}target")]
    expected = _in_contexts(context_model, ("Menu of the file dialog", "Toolbar tooltip", None), format="html")
    assert found == expected and len(set(expected)) == 3


@pytest.mark.slow
def test_the_file_contexts_measurement_times_both_sides_on_one_catalogue(context_model, tmp_path, cache):
    rows = ["en\tde\torigin\tcontext", *(f"{s}\t{s}\tgettext:app\t{c}" for s in SENTENCES for c in ("", "Menu"))]
    (tmp_path / "test.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    output = tmp_path / "file-contexts.json"
    file_contexts.main(
        ["--model", str(context_model), "--data", str(tmp_path / "test.tsv")]
        + ["--repeats", "1", "--engine", "transformers"]
        + ["--output", str(output)]
    )
    found = json.loads(output.read_text(encoding="utf-8"))
    assert found["rows"] == 8 and found["sides"]["none"]["engine_calls"] == 1
    assert found["sides"]["contexts"]["engine_calls"] == found["distinct_contexts"] == 8  # one a distinct key path
    file_contexts.main(
        ["--model", str(context_model), "--data", str(tmp_path / "test.tsv"), "--format", "po"]
        + ["--repeats", "1", "--engine", "transformers", "--output", str(output)]
    )
    found = json.loads(output.read_text(encoding="utf-8"))
    assert found["distinct_contexts"] == 1 and found["sides"]["contexts"]["engine_calls"] == 2  # "Menu" and none
    messages = read_messages(tmp_path / "test.tsv", "de")
    assert file_contexts.key_path(messages[1], 1) == ["app", "menu", "m1"]
    assert file_contexts.po_texts(file_contexts.po_catalogue(messages), messages) == [""] * 8
    assert file_contexts.written_texts(file_contexts.catalogue(messages), messages) == [
        s for s in SENTENCES for _ in range(2)
    ]
