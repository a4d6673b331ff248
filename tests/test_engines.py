"""The engines: CTranslate2 through translate(), the pipeline and the command gives generate()'s translations and
scores; "auto" says what it took and why; the export cache is made once, keyed by the model's files, and never
serves another model's weights."""

import json
import logging
import os
import subprocess
import sys

import pytest
import torch
from transformers import pipeline

from transformer_mt.engines import cached_export, export_key, load_engine
from transformer_mt.options import TranslationOptions
from transformer_mt.scripts.translate import main as translate_main
from transformer_mt.translation import translate, translate_nbest

from .utils import COPY_CORPUS, SCRIPTS, command_env, require, save_copy_model, train_copy_model


require("ctranslate2", "the fast engine needs ctranslate2: pip install 'transformer-mt[fast]'")

TEXTS = [
    "Open the file. Click the Save button.",
    "Select the rows that you want to delete.",
    "",
    "Press Enter.",
    "Schließen Sie das Dialogfenster und klicken Sie auf Speichern.",
    "Format",
]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_MT_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.parametrize("position_type", ["sinusoidal", "learned", "rotary"])
def test_ctranslate2_gives_generates_translations_and_scores(position_type, tmp_path, cache):
    model, tokenizer = save_copy_model(tmp_path / "model", position_embedding_type=position_type)
    for num_beams in (1, 4):
        # guards=False: a copy model's outputs are copies, and the guards' re-decode (beam search with a repetition
        # penalty) is not the same search on the two engines
        expected = translate_nbest(
            model, tokenizer, TEXTS, num_beams=num_beams, scores=True, num_return_sequences=num_beams, guards=False
        )
        found = translate_nbest(
            model,
            tokenizer,
            TEXTS,
            num_beams=num_beams,
            scores=True,
            num_return_sequences=num_beams,
            engine="ctranslate2",
            guards=False,
        )
        assert len({hypotheses[0][0] for hypotheses in expected if hypotheses}) > 2  # outputs that differ
        assert [[text for text, _ in hypotheses] for hypotheses in found] == [
            [text for text, _ in hypotheses] for hypotheses in expected
        ]
        assert [score for hypotheses in found for _, score in hypotheses] == pytest.approx(
            [score for hypotheses in expected for _, score in hypotheses], abs=1e-4
        )
    assert translate(model, tokenizer, TEXTS, engine="auto", guards=False) == translate(
        model, tokenizer, TEXTS, guards=False
    )
    assert len(list(cache.glob("ctranslate2/*/model.bin"))) == 1  # one export, reused


def test_decoding_controls_map_to_ctranslate2(tmp_path, cache):
    model, tokenizer = save_copy_model(tmp_path / "model")
    # repetition_penalty and no_repeat_ngram_size: exact in greedy search only (docs/translation.md, Engines)
    for controls in (
        dict(repetition_penalty=1.5, num_beams=1),
        dict(no_repeat_ngram_size=2, num_beams=1),
        dict(length_penalty=2.0),
        dict(length_penalty=0.5, num_return_sequences=2),
    ):
        assert translate(model, tokenizer, COPY_CORPUS, engine="ctranslate2", guards=False, **controls) == translate(
            model, tokenizer, COPY_CORPUS, guards=False, **controls
        ), controls
    with pytest.raises(ValueError, match="CTranslate2 has no equivalent of typical_p"):
        translate(model, tokenizer, TEXTS, engine="ctranslate2", typical_p=0.5)


def test_auto_says_why_it_keeps_generate(tmp_path, cache):
    model, tokenizer = save_copy_model(tmp_path / "alibi", position_embedding_type="alibi")
    engine = load_engine(str(tmp_path / "alibi"), "auto")
    assert engine.name == "transformers" and "alibi positions do not export" in engine.reason
    with pytest.raises(ValueError, match="--engine ctranslate2 cannot translate .*alibi positions do not export"):
        load_engine(str(tmp_path / "alibi"), "ctranslate2")
    model, tokenizer = save_copy_model(tmp_path / "late")
    model.generation_config.early_stopping = False  # what models saved before 0.4 hold: CTranslate2 would differ
    model.save_pretrained(tmp_path / "late")
    engine = load_engine(str(tmp_path / "late"), "auto")
    assert engine.name == "transformers" and "early_stopping=False with beam search" in engine.reason
    assert load_engine(str(tmp_path / "late"), "auto", sampling=True).name == "transformers"
    assert not cache.exists()  # nothing exported for any of them
    model.generation_config.update(num_beams=1, early_stopping=None)  # greedy: early stopping plays no part
    model.save_pretrained(tmp_path / "late")
    engine = load_engine(str(tmp_path / "late"), "auto")
    assert engine.name == "ctranslate2"
    with pytest.raises(ValueError, match="beam search \\(3 beams\\) on CTranslate2 .* early_stopping=None"):
        engine.translate_sentences(["Open the file."], TranslationOptions(num_beams=3))  # asking for beams is refused


def test_an_in_memory_model_is_never_served_from_other_weights(tmp_path, cache):
    model, tokenizer = save_copy_model(tmp_path / "model")
    with torch.no_grad():
        model.lm_head.weight.mul_(1.5)  # now it differs from its files
    engine_texts = translate(model, tokenizer, TEXTS, engine="auto")
    assert engine_texts == translate(model, tokenizer, TEXTS)  # auto kept generate()
    with pytest.raises(ValueError, match="its weights differ from .*model.safetensors"):
        translate(model, tokenizer, TEXTS, engine="ctranslate2")
    unsaved = train_copy_model(tokenizer)
    with pytest.raises(ValueError, match="it was not loaded from a directory"):
        translate(unsaved, tokenizer, TEXTS, engine="ctranslate2")


def test_the_cache_key_follows_every_input_and_the_export_is_made_once(tmp_path, cache, monkeypatch):
    save_copy_model(tmp_path / "model")
    directory = str(tmp_path / "model")
    key = export_key(directory, None)
    assert export_key(directory, "int8") != key
    first = cached_export(directory)
    assert first.endswith(key)
    import transformer_mt.bridges.ctranslate2 as bridge

    monkeypatch.setattr(bridge, "export_ctranslate2", lambda *args, **kwargs: pytest.fail("exported twice"))
    assert cached_export(directory) == first
    config = json.loads((tmp_path / "model" / "generation_config.json").read_text())
    (tmp_path / "model" / "generation_config.json").write_text(json.dumps({**config, "length_penalty": 2.0}))
    assert export_key(directory, None) != key  # a changed file is another export, never the stale one


@pytest.mark.slow  # two processes, each importing torch and exporting
def test_processes_started_together_export_once(tmp_path, cache):
    save_copy_model(tmp_path / "model")
    code = "import sys; from transformer_mt.engines import cached_export; print(cached_export(sys.argv[1]))"
    env = command_env(TRANSFORMER_MT_CACHE=str(cache))
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(tmp_path / "model")],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [process.communicate(timeout=300) for process in processes]
    assert [process.returncode for process in processes] == [0, 0], outputs
    assert outputs[0][0] == outputs[1][0]
    assert sum("Exporting" in stderr for _, stderr in outputs) == 1  # the other waited on the lock, then reused it
    assert [path.name for path in (cache / "ctranslate2").iterdir() if not path.name.endswith(".lock")] == [
        os.path.basename(outputs[0][0].strip())
    ]  # no staging folder left behind


def test_the_pipeline_takes_an_engine(tmp_path, cache):
    model, tokenizer = save_copy_model(tmp_path / "model")
    fast = pipeline("translation", model=str(tmp_path / "model"), engine="ctranslate2")
    plain = pipeline("translation", model=str(tmp_path / "model"))
    assert fast.engine.name == "ctranslate2" and plain.engine.name == "transformers"
    assert fast(TEXTS, guards=False) == plain(TEXTS, guards=False)  # a copy model: no guards (see above)
    assert fast(TEXTS[:2], split_sentences=False, guards=False) == plain(
        TEXTS[:2], split_sentences=False, guards=False
    )


def run_translate(*args, cache):
    return subprocess.run(
        [sys.executable, str(SCRIPTS / "translate.py"), *args],
        capture_output=True,
        text=True,
        env=command_env(TRANSFORMER_MT_CACHE=str(cache)),
        timeout=300,
    )


def translate_here(*args, capsys) -> subprocess.CompletedProcess:
    """scripts/translate.py's main run in this process, as run_translate reports a run: exit status and output."""
    try:
        translate_main(list(args))
        returncode = 0
    except SystemExit as exit_info:
        returncode = exit_info.code or 0
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(list(args), returncode, out, err)


@pytest.mark.slow  # the command as a process of its own
def test_the_command_takes_ctranslate2_by_default_and_says_so(tmp_path, cache, capsys):
    model, tokenizer = save_copy_model(tmp_path / "model")
    (tmp_path / "input.txt").write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    common = [
        "--model",
        str(tmp_path / "model"),
        "--input",
        str(tmp_path / "input.txt"),
        "--no_progress",
        "--no_guards",
    ]  # a copy model: no guards (see above)
    # The default as a user runs it, in a process of its own; the other runs call the same main here (a process
    # start is seconds of imports each).
    fast = run_translate(*common, cache=cache)
    plain = translate_here(*common, "--engine", "transformers", capsys=capsys)
    assert fast.returncode == plain.returncode == 0, fast.stderr + plain.stderr
    assert "engine: ctranslate2 (auto: CTranslate2 installed and the model exports)" in fast.stderr
    assert "engine: transformers (asked for)" in plain.stderr
    assert fast.stdout == plain.stdout and fast.stdout.count("\n") == len(TEXTS)
    nbest = [
        translate_here(*common, "--num_return_sequences", "3", "--engine", engine, capsys=capsys)
        for engine in ("ctranslate2", "transformers")
    ]
    rows = [[line.split("\t") for line in result.stdout.splitlines()] for result in nbest]
    assert [row[:2] + row[3:] for row in rows[0]] == [row[:2] + row[3:] for row in rows[1]]
    assert [float(row[2]) for row in rows[0]] == pytest.approx([float(row[2]) for row in rows[1]], abs=1e-3)
    given = translate_here(*common, "--ctranslate2_model", str(tmp_path / "nothing"), capsys=capsys)
    assert given.returncode != 0 and "holds no CTranslate2 model" in given.stderr
    refused = translate_here(*common, "--engine", "transformers", "--quantization", "int8", capsys=capsys)
    assert refused.returncode == 2 and "--quantization applies to CTranslate2" in refused.stderr


def test_a_sentence_longer_than_the_model_takes_is_named(tmp_path, cache, caplog):
    model, tokenizer = save_copy_model(tmp_path / "model")
    tokenizer.model_max_length = 12
    engine = load_engine(str(tmp_path / "model"), "ctranslate2", model=model, tokenizer=tokenizer)
    with caplog.at_level(logging.WARNING, logger="transformer_mt"):
        fast = translate(
            model, tokenizer, ["Open it.", " ".join(COPY_CORPUS[:3])], engine=engine, split_sentences=False
        )
    assert "Text 2 has" in caplog.text and "only its first 12 are translated" in caplog.text
    assert fast == translate(model, tokenizer, ["Open it.", " ".join(COPY_CORPUS[:3])], split_sentences=False)
