"""Given text constrains decoding: every translation begins with its target prefix, forbidden words never appear,
and generate() and CTranslate2 agree, from Python and from translate.py."""

import re

import pytest

from transformer_mt.scripts import translate as translate_script
from transformer_mt.translation import translate

from .utils import require


# Sentences the copy model copies whole, so that forbidding one of their words changes something real
SOURCES = ["Click the Save button.", "Open the file.", "Deletes the selected rows.", "Close the dialog window."]
PREFIXES = ["Bitte", None, "Wählen Sie", "Schließen"]


@pytest.fixture
def saved(beam4_copy_model):
    return beam4_copy_model


@pytest.mark.parametrize("num_beams", [1, 4])
def test_every_translation_begins_with_its_prefix(saved, num_beams):
    _, model, tokenizer = saved
    plain = translate(model, tokenizer, SOURCES, num_beams=num_beams)
    prefixed = translate(model, tokenizer, SOURCES, num_beams=num_beams, target_prefix=PREFIXES)
    for output, prefix, unconstrained in zip(prefixed, PREFIXES, plain):
        assert output.startswith(prefix) if prefix else output == unconstrained
    assert prefixed[0] != plain[0]  # the copy model would not begin with "Bitte" by itself


def test_a_prefix_applies_to_the_first_sentence_of_a_text(saved):
    _, model, tokenizer = saved
    text = "Open the file. Close the dialog window."
    (output,) = translate(model, tokenizer, [text], num_beams=1, target_prefix=["Bitte"])
    second = translate(model, tokenizer, ["Close the dialog window."], num_beams=1)[0]
    assert output.startswith("Bitte") and output.endswith(" " + second)
    with pytest.raises(ValueError, match="one prefix per text"):
        translate(model, tokenizer, [text, text], target_prefix=["Bitte"])


@pytest.mark.parametrize("num_beams", [1, 4])
def test_a_forbidden_word_never_appears(saved, num_beams):
    _, model, tokenizer = saved
    plain = translate(model, tokenizer, SOURCES, num_beams=num_beams, guards=False)  # a copy model's copies
    words = re.compile(r"\b(Save|selected)\b")  # forbidden as words ("Saven" is another word)
    assert words.search(plain[0]) and words.search(plain[2])  # what the copy model writes unconstrained
    constrained = translate(
        model, tokenizer, SOURCES, num_beams=num_beams, bad_words=["Save", "selected"], guards=False
    )
    assert not any(words.search(output) for output in constrained), constrained
    assert constrained[1] == plain[1]  # a translation without them is unchanged
    with pytest.raises(ValueError, match="a forbidden word must hold text"):
        translate(model, tokenizer, SOURCES, bad_words=[" "])


def test_forbidden_words_add_to_the_generation_configs_own_and_prefix_scores_are_real(saved):
    from transformer_mt.constraints import bad_words_ids
    from transformer_mt.engines import GenerateEngine
    from transformer_mt.translation import translate_nbest

    _, model, tokenizer = saved
    words = re.compile(r"\b(Save|selected)\b")
    model.generation_config.bad_words_ids = bad_words_ids(tokenizer, ["Save"])  # as an imported model carries
    try:
        outputs = translate(model, tokenizer, SOURCES, num_beams=1, bad_words=["selected"])
    finally:
        model.generation_config.bad_words_ids = None
    assert not any(words.search(output) for output in outputs), outputs
    # greedy with a forced prefix: the forced tokens count with their real log-probability (not 0)
    nbest = translate_nbest(
        model,
        tokenizer,
        SOURCES[:2],
        num_beams=1,
        scores=True,
        split_sentences=False,
        target_prefix=["Bitte", "Bitte"],
    )
    texts = [hypotheses[0][0] for hypotheses in nbest]
    forced = GenerateEngine(model, tokenizer).score_pairs(SOURCES[:2], texts)
    assert [hypotheses[0][1] for hypotheses in nbest] == pytest.approx([pair.score for pair in forced], abs=1e-3)


def test_both_engines_agree(saved, tmp_path, monkeypatch):
    require("ctranslate2", "the fast engine needs ctranslate2: pip install 'transformer-mt[fast]'")
    monkeypatch.setenv("TRANSFORMER_MT_CACHE", str(tmp_path / "cache"))
    _, model, tokenizer = saved
    for settings in (
        dict(target_prefix=PREFIXES),
        dict(bad_words=["Save", "dialog"]),
        dict(target_prefix=PREFIXES, bad_words=["selected"]),
    ):
        assert translate(
            model, tokenizer, SOURCES, num_beams=1, engine="ctranslate2", guards=False, **settings
        ) == translate(model, tokenizer, SOURCES, num_beams=1, guards=False, **settings), settings


def test_translate_py_takes_a_prefix_file_and_forbidden_words(saved, tmp_path, capsys):
    path, model, tokenizer = saved
    source = tmp_path / "input.txt"
    source.write_text("\n".join(SOURCES) + "\n", encoding="utf-8")
    prefixes = tmp_path / "prefixes.txt"
    prefixes.write_text("\n".join(prefix or "" for prefix in PREFIXES) + "\n", encoding="utf-8")
    translate_script.main(
        [
            "--model",
            str(path),
            "--input",
            str(source),
            "--target_prefix",
            str(prefixes),
            "--bad_words",
            "dialog",
            "--no_progress",
            "--engine",
            "transformers",
        ]
    )
    outputs = capsys.readouterr().out.splitlines()
    assert outputs == translate(model, tokenizer, SOURCES, target_prefix=PREFIXES, bad_words=["dialog"])
    assert outputs[0].startswith("Bitte") and not re.search(r"\bdialog\b", outputs[3])
    prefixes.write_text("Bitte\n", encoding="utf-8")  # fewer prefixes than lines
    with pytest.raises(SystemExit) as stopped:
        translate_script.main(
            ["--model", str(path), "--input", str(source), "--target_prefix", str(prefixes), "--no_progress"]
        )
    assert stopped.value.code == 2 and "target_prefix ended before the lines did" in capsys.readouterr().err
