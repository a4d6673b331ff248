"""Trust: the guards' rules, the calibration beside a model (bound to its weights), the trust step in `decode`
(re-decode, flag, abstain), and what the server says (`confidence`, `flags`, `/health`, `/metrics`)."""

import dataclasses
import json
import logging
import shutil
import types
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from safetensors.torch import load_file, save_file

from transformer_mt.engines import EngineSettings, load_engine
from transformer_mt.options import OptionError, TranslationOptions, guards_in_evaluation
from transformer_mt.quality import (
    CALIBRATION_FILE,
    Calibration,
    CalibrationError,
    Flags,
    is_copy,
    is_loop,
    repetition,
    together,
    weights_sha256,
)
from transformer_mt.serving.app import ServedModel, create_app
from transformer_mt.text.languages import DE, EN, Languages
from transformer_mt.translation import translate, translate_texts

from .test_serving import CLIENTS, FakeEngine
from .utils import save_copy_model


@pytest.mark.parametrize(
    "text, found",
    [
        ("Zude Time Time", "time"),
        ("Wählen Sie die Kitation aus, die die die Kitation bereitstellt", "die"),  # three times: a loop
        ("Wählen Sie die Datei, die die Daten enthält", None),  # article then relative pronoun: German
        ("Klicken Sie auf OK OK", "ok"),
        ("Öffnen Sie die Datei und die Datei und die Datei", "die datei und"),  # a phrase of three words
        ("Zeit, Zeit", None),  # the repetition stops at punctuation
        ("Einfügen einfügen", "einfügen"),  # case-insensitive
        ("a b c d a b c d", "a b c d"),
        ("a b c d e a b c d e", None),  # longer than LOOP_MAX_WORDS
    ],
)
def test_a_repetition_is_a_word_or_phrase_written_again_back_to_back(text, found):
    assert repetition(text, DE) == found


def test_a_loop_is_a_repetition_the_source_does_not_hold():
    en_de = Languages(EN, DE)
    assert is_loop("Include Time", "Zude Time Time", en_de)
    assert not is_loop("Very very good.", "Sehr sehr gut.", en_de)  # the source repeats itself: so may its translation
    assert not is_loop("Include Time", "Zeit einschließen", en_de)


def test_a_copy_is_a_long_source_again_or_a_short_one_at_low_confidence():
    assert is_copy("Select the cells you want", "select the  cells you want")
    assert not is_copy("Name", "Name")  # UI strings rightly left as they are
    assert not is_copy("Name", "Name", confidence=0.5)
    assert is_copy("Name", "Name", confidence=0.1)
    assert not is_copy("Open the file now", "Öffnen Sie die Datei")
    assert not is_copy("", "")


def calibration(weights: str, **changes) -> Calibration:
    """A calibration whose confidence is sigmoid(2 * score + 1): -0.5 gives one half."""
    fields = dict(
        weights_sha256=weights,
        chrf_threshold=50.0,
        features=("score", "copy"),
        mean=(0.0, 0.0),
        scale=(1.0, 1.0),
        coefficients=(2.0, 0.0),
        intercept=1.0,
        length_band=(0.5, 2.0),
    )
    return Calibration(**{**fields, **changes})


def test_a_calibration_is_json_beside_the_weights_and_refused_on_other_weights(model_dir):
    fitted = calibration(weights_sha256(model_dir), measured={"spearman": 0.6})
    path = fitted.save(model_dir)
    assert json.loads(open(path, encoding="utf-8").read())["coefficients"] == [2.0, 0.0]
    loaded = Calibration.load(model_dir)
    assert loaded == fitted and loaded.measured == {"spearman": 0.6}
    assert loaded.confidence({"score": -0.5, "copy": 0.0}) == 0.5
    assert loaded.off_length("Open the file in the editor.", "x") and not loaded.off_length("Short", "x")
    assert not loaded.off_length("Open the file in the editor.", "Öffnen Sie die Datei im Editor.")
    fitted.save(model_dir)
    weights = load_file(model_dir / "model.safetensors")  # other weights: one tensor changed
    name = sorted(weights)[0]
    weights[name] = weights[name] + 1
    save_file(weights, model_dir / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(CalibrationError, match=f"{CALIBRATION_FILE} was fitted on other weights"):
        Calibration.load(model_dir)
    engine = load_engine(str(model_dir), "transformers")
    assert engine.calibration is None and "fitted on other weights" in engine.calibration_problem
    with pytest.raises(
        OptionError, match="confidence needs the model's calibrated confidence, and .* fitted on other weights"
    ):
        translate_texts(engine, ["Hello."], TranslationOptions(confidence=True))
    (model_dir / CALIBRATION_FILE).write_text("{}", encoding="utf-8")
    with pytest.raises(CalibrationError, match="cannot be read as a calibration"):
        Calibration.load(model_dir)


class WordTokenizer:
    """A token a word: what the confidence's token counts read."""

    is_fast = True

    def __call__(self, texts):
        return {"input_ids": [text.split() for text in texts]}


class ScriptedEngine(FakeEngine):
    """A FakeEngine whose translations are given per sentence: `first[sentence]` at first, `again[sentence]` when
    decoded with a fallback search (no_repeat_ngram_size set); the score -0.5 unless `scores` says otherwise."""

    def __init__(self, first, again=None, scores=None, calibrated=None):
        super().__init__()
        self.first, self.again, self.scores = first, again or {}, scores or {}
        self.calibration, self.calibration_problem = calibrated, None
        self.asked, self.tokenizer = [], WordTokenizer()
        self.generation_config = types.SimpleNamespace(num_beams=1, early_stopping=True)  # as trained models save it

    def translate_sentences(self, sentences, options, names=None, target_prefix=None):
        self.asked.append(options)
        table = self.again if options.no_repeat_ngram_size else self.first
        return [
            [(table.get(sentence, self.first.get(sentence, sentence)), self.scores.get(sentence, -0.5))]
            * options.num_return_sequences
            for sentence in sentences
        ]


def test_a_loop_is_decoded_again_with_the_fallback_and_kept_when_it_is_fixed(caplog):
    engine = ScriptedEngine({"Include the time": "Zeit Zeit"}, {"Include the time": "Zeit einschließen"})
    with caplog.at_level(logging.WARNING):
        [text] = translate_texts(engine, ["Include the time"], TranslationOptions(split_sentences=False))
    assert text == [("Zeit einschließen", None)]
    assert text.flags == Flags(redecoded=True)
    fallback = engine.asked[1]
    assert (fallback.no_repeat_ngram_size, fallback.num_beams, fallback.repetition_penalty) == (3, 4, 1.2)
    assert fallback.generate_controls()["repetition_penalty"] == 1.2  # what both engines' searches read
    assert "1 translation(s) looped, copied the source, had an unlikely length or broken characters" in caplog.text
    assert "decoded again: 1 (loop); 0 still did (flagged)\n" in caplog.text + "\n"


def test_broken_characters_are_decoded_again_as_a_guard():
    engine = ScriptedEngine({"Val d'Oise": "Vider l'O\ufffdle"}, {"Val d'Oise": "Val-d'Oise"})
    [text] = translate_texts(engine, ["Val d'Oise"], TranslationOptions(split_sentences=False))
    assert text == [("Val-d'Oise", None)] and text.flags == Flags(redecoded=True)
    still = ScriptedEngine({"Val d'Oise": "Vider l'O\ufffdle"})
    [text] = translate_texts(still, ["Val d'Oise"], TranslationOptions(split_sentences=False))
    assert text.flags.guards == ("broken",) and "broken" in text.flags.names()
    kept = ScriptedEngine({"A \ufffd sign": "Ein \ufffd Zeichen"})  # as often as the source holds it: none
    [text] = translate_texts(kept, ["A \ufffd sign"], TranslationOptions(split_sentences=False))
    assert text == [("Ein \ufffd Zeichen", None)] and text.flags == Flags()


def test_scores_are_of_the_guarded_translation_and_the_calibration_fits_the_first(monkeypatch):
    """`options.guards_in_evaluation`, the one rule both read: scoring keeps the re-decode that fixed a loop (what
    users get), calibration rates the model's first decode (the one its confidence is of)."""
    from transformer_mt import evaluation
    from transformer_mt.calibration import rated_translations

    assert guards_in_evaluation(fits_confidence=False) and not guards_in_evaluation(fits_confidence=True)
    engine = ScriptedEngine({"Include the time": "Zeit Zeit"}, {"Include the time": "Zeit einschließen"})
    monkeypatch.setattr(evaluation, "load_for_scoring", lambda path: engine)
    assert evaluation.translator("a model")(["Include the time"]) == ["Zeit einschließen"]
    assert rated_translations(engine, ["Include the time"])[0] == ["Zeit Zeit"]


def test_a_loop_the_fallback_cannot_fix_is_flagged_with_confidence_0():
    engine = ScriptedEngine({"Include the time": "Zeit Zeit"}, calibrated=calibration("x"))
    [text] = translate_texts(engine, ["Include the time"], TranslationOptions(split_sentences=False, confidence=True))
    assert text == [("Zeit Zeit", None)]
    assert (text.flags.guards, text.flags.redecoded, text.flags.confidence) == (("loop",), True, 0.0)
    [kept] = translate_texts(engine, ["Include the time"], TranslationOptions(split_sentences=False, guards=False))
    assert kept == [("Zeit Zeit", None)] and kept.flags == Flags(confidence=0.5)  # a calibrated model: always rated


def test_a_copy_and_an_unlikely_length_are_guarded():
    source = "Open the file in the text editor."
    engine = ScriptedEngine({source: source}, calibrated=calibration("x"))
    [copied] = translate_texts(engine, [source], TranslationOptions(split_sentences=False, confidence=True))
    assert copied.flags.guards == ("copy",) and copied.flags.confidence == 0.0
    engine = ScriptedEngine(
        {source: "Datei"}, {source: "Öffnen Sie die Datei im Texteditor."}, calibrated=calibration("x")
    )
    [fixed] = translate_texts(engine, [source], TranslationOptions(split_sentences=False, confidence=True))
    assert fixed == [("Öffnen Sie die Datei im Texteditor.", None)]
    assert fixed.flags.redecoded and not fixed.flags.guards and fixed.flags.confidence == 0.5


def test_below_min_confidence_a_sentence_keeps_its_source_and_says_so():
    engine = ScriptedEngine(
        {"Good one.": "Gut.", "Bad one.": "Schlecht."}, scores={"Bad one.": -3.0}, calibrated=calibration("x")
    )
    [text] = translate_texts(engine, ["Good one. Bad one."], TranslationOptions(min_confidence=0.3, source_lang="en"))
    assert text == [("Gut. Bad one.", None)]
    assert text.flags.abstained and text.flags.confidence == pytest.approx(1 / (1 + 2.718281828459045**5))
    assert text.flags.as_json() == {"abstained": True}
    assert "not translated: confidence below the minimum" in text.flags.comment()
    with pytest.raises(
        OptionError,
        match="min_confidence needs the model's calibrated confidence, and the model holds no calibration.json",
    ):
        translate_texts(ScriptedEngine({}), ["x"], TranslationOptions(min_confidence=0.3))


def test_a_texts_flags_join_its_sentences_and_keep_the_weakest_confidence():
    joined = together(
        [
            Flags(confidence=0.9, guards=("loop",)),
            Flags(confidence=0.4, redecoded=True),
            Flags(guards=("loop", "copy")),
        ]
    )
    assert (joined.confidence, joined.guards, joined.redecoded, joined.abstained) == (
        0.4,
        ("loop", "copy"),
        True,
        False,
    )
    assert joined.names() == ["loop", "copy", "redecoded"]


def test_a_model_trained_to_loop_is_decoded_again_and_flagged(tmp_path, caplog):
    """A tiny model trained to write each sentence's last word six times: the fallback search cannot undo what it
    learned, so the translation is flagged, with confidence 0 from a calibration fitted to its weights."""
    from .utils import COPY_CORPUS

    targets = [" ".join([line.rstrip(".").split()[-1]] * 6) for line in COPY_CORPUS]
    path = tmp_path / "looper"
    save_copy_model(path, dict(num_beams=2, early_stopping=True, max_length=24), targets=targets)
    calibration(weights_sha256(path)).save(path)
    for kind in ("transformers", "ctranslate2"):
        engine = load_engine(str(path), kind)
        with caplog.at_level(logging.WARNING):
            [text] = translate_texts(
                engine, [COPY_CORPUS[0]], TranslationOptions(split_sentences=False, confidence=True)
            )
        assert is_loop(COPY_CORPUS[0], text[0][0], Languages(EN, DE)), text
        assert (text.flags.guards, text.flags.redecoded, text.flags.confidence) == (("loop",), True, 0.0)
        assert "; 1 still did (flagged): 1" in caplog.text  # named among those decoded again, and as flagged
        caplog.clear()


def test_the_two_engines_give_one_confidence(beam4_copy_model, tmp_path):
    path = tmp_path / "model"
    shutil.copytree(beam4_copy_model[0], path)
    calibration(
        weights_sha256(path),
        features=("score", "source_tokens", "output_tokens", "length_ratio"),
        mean=(0.0,) * 4,
        scale=(1.0,) * 4,
        coefficients=(2.0, 0.3, -0.2, 0.5),
    ).save(path)
    from .utils import COPY_CORPUS

    found = {}
    for kind in ("transformers", "ctranslate2"):
        found[kind] = [
            translation.confidence
            for translation in translate(*_loaded(path), COPY_CORPUS[:6], engine=kind, confidence=True, guards=False)
        ]
    assert all(value is not None for value in found["transformers"])
    assert found["transformers"] == pytest.approx(found["ctranslate2"], abs=1e-4)


def _loaded(path):
    from transformer_mt.checkpoints import load_translator

    return load_translator(str(path))


def test_translate_refuses_a_calibration_when_the_model_in_memory_differs(beam4_copy_model, tmp_path):
    import torch

    path = tmp_path / "model"
    shutil.copytree(beam4_copy_model[0], path)
    calibration(weights_sha256(path)).save(path)
    model, tokenizer = _loaded(path)
    assert translate(model, tokenizer, ["Hello."], confidence=True)[0].confidence is not None
    with torch.no_grad():
        next(model.parameters()).add_(1.0)  # fine-tuned in memory: not the weights the calibration fits
    with pytest.raises(OptionError, match="the calibration beside it does not fit: its weights differ"):
        translate(model, tokenizer, ["Hello."], confidence=True)


def test_the_server_gives_confidence_and_flags_health_and_metrics():
    engine = ScriptedEngine(
        {"Good one.": "Gut.", "Bad one.": "Schlecht.", "Include the time": "Zeit Zeit"},
        scores={"Bad one.": -3.0},
        calibrated=calibration("x"),
    )
    with TestClient(create_app([ServedModel(engine, "en", "de")])) as client:
        answer = client.post(
            "/translate", json={"q": ["Good one.", "Bad one."], "source": "en", "target": "de", "min_confidence": 0.3}
        ).json()
        assert answer == {
            "translatedText": ["Gut.", "Bad one."],
            "confidence": [pytest.approx(0.5), pytest.approx(1 / (1 + 2.718281828459045**5))],
            "flags": [{}, {"abstained": True}],
        }
        form = client.post(
            "/translate", data={"q": "Bad one.", "source": "en", "target": "de", "min_confidence": "0.3"}
        ).json()  # a form's fields are text
        assert form["translatedText"] == "Bad one." and form["flags"] == {"abstained": True}
        looped = client.post("/translate", json={"q": "Include the time", "source": "en", "target": "de"}).json()
        assert looped["flags"] == {"guards": ["loop"], "redecoded": True} and looped["confidence"] == 0.0
        assert client.get("/health").json() == {"status": "ok"}
        metrics = client.get("/metrics").text
    assert 'transformer_mt_sentence_flags_total{flag="abstained"} 2.0' in metrics
    assert 'transformer_mt_sentence_flags_total{flag="loop"} 1.0' in metrics
    assert "transformer_mt_sentences_total" in metrics and "transformer_mt_queued_sentences 0.0" in metrics
    assert 'transformer_mt_model_info{calibrated="true",engine="fake",source="en",target="de"} 1.0' in metrics


def test_a_calibration_needs_a_probability_as_minimum():
    with pytest.raises(OptionError, match=r"min_confidence is a probability in \[0, 1\], got 1.5"):
        TranslationOptions(min_confidence=1.5)
    assert dataclasses.replace(TranslationOptions(), min_confidence=0.0).calibrated


def test_a_sample_is_flagged_never_decoded_again():
    engine = ScriptedEngine({"Include the time": "Zeit Zeit"}, {"Include the time": "Zeit einschließen"})
    [text] = translate_texts(engine, ["Include the time"], TranslationOptions(split_sentences=False, do_sample=True))
    assert text == [("Zeit Zeit", None)] and text.flags == Flags(guards=("loop",))
    assert len(engine.asked) == 1


@pytest.fixture
def calibrated_copy_model(beam4_copy_model, tmp_path):
    """beam4_copy_model's copy with a calibration fitted to its weights: confidence sigmoid(2 * score + 1)."""
    path = tmp_path / "model"
    shutil.copytree(beam4_copy_model[0], path)
    calibration(weights_sha256(path)).save(path)
    return path


@pytest.mark.parametrize("engine", ["transformers", "ctranslate2"])
def test_the_command_writes_confidence_as_a_column_and_names_abstained_lines(calibrated_copy_model, capsys, engine):
    from transformer_mt.scripts import translate as translate_script

    from .utils import COPY_CORPUS

    lines = COPY_CORPUS[:2]
    common = ["--model", str(calibrated_copy_model), "--engine", engine, "--no_progress", "--no_guards"]
    translate_script.main([*common, *lines])
    plain = capsys.readouterr().out.splitlines()
    translate_script.main([*common, "--confidence", *lines])
    rated = capsys.readouterr().out.splitlines()
    expected = [
        f"{translation.confidence:.4f}\t{translation}"
        for translation in translate(
            *_loaded(calibrated_copy_model), lines, engine=engine, confidence=True, guards=False
        )
    ]
    assert rated == expected and [row.split("\t")[1] for row in rated] == plain
    translate_script.main([*common, "--min_confidence", "1", *lines])
    captured = capsys.readouterr()
    assert captured.out.splitlines() == lines  # every source kept
    assert "line 2: confidence 0." in captured.err and "not translated: confidence below the minimum" in captured.err
    with pytest.raises(SystemExit):
        translate_script.main(
            [*common[:-1], "--model", str(uncalibrated(calibrated_copy_model)), "--confidence", *lines]
        )
    assert "--confidence needs the model's calibrated confidence" in capsys.readouterr().err


def uncalibrated(calibrated: Path) -> Path:
    """The calibrated model's copy without its calibration."""
    plain = calibrated.parent / "plain"
    shutil.copytree(calibrated, plain)
    (plain / CALIBRATION_FILE).unlink()
    return plain


def test_the_pipeline_returns_confidence_when_asked(calibrated_copy_model):
    from transformers import pipeline

    translator = pipeline("translation", model=str(calibrated_copy_model))
    expected = translate(*_loaded(calibrated_copy_model), ["Open the file."], confidence=True)[0]
    assert translator("Open the file.", confidence=True) == [
        {"translation_text": str(expected), "confidence": expected.confidence}
    ]
    assert translator("Open the file.") == [{"translation_text": str(expected)}]


XLIFF_12 = """<?xml version="1.0" encoding="UTF-8"?>
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2"><file source-language="en" target-language="de"
original="x" datatype="plaintext"><body><trans-unit id="1"><source>Open the file.</source></trans-unit>
</body></file></xliff>
"""
XLIFF_20 = """<?xml version="1.0" encoding="UTF-8"?>
<xliff version="2.0" xmlns="urn:oasis:names:tc:xliff:document:2.0" srcLang="en" trgLang="de"><file id="f">
<unit id="1"><segment><source>Open the file.</source></segment></unit></file></xliff>
"""


def test_files_carry_the_confidence_as_comments_and_states_and_abstain(calibrated_copy_model, tmp_path):
    import polib
    from lxml import etree

    from transformer_mt.documents.files import translate_document

    model, tokenizer = _loaded(calibrated_copy_model)
    expected = translate(model, tokenizer, ["Open the file."], confidence=True, guards=False)[0]
    catalogue = polib.POFile()
    catalogue.append(polib.POEntry(msgid="Open the file.", msgstr=""))
    catalogue.save(str(tmp_path / "in.po"))
    (tmp_path / "in12.xlf").write_text(XLIFF_12, encoding="utf-8")
    (tmp_path / "in20.xlf").write_text(XLIFF_20, encoding="utf-8")
    comment = f"transformer-mt: confidence {expected.confidence:.2f}"
    for trusted_above, fuzzy, state_12, state_20 in (
        (None, True, "needs-review-translation", "initial"),
        (0.0, False, "translated", "translated"),
    ):
        translate_document(
            model,
            tokenizer,
            str(tmp_path / "in.po"),
            str(tmp_path / "out.po"),
            trusted_above=trusted_above,
            confidence=True,
            guards=False,
        )
        [entry] = polib.pofile(str(tmp_path / "out.po"))
        (tmp_path / "out.po").unlink()
        assert (entry.msgstr, entry.tcomment, entry.fuzzy) == (str(expected), comment, fuzzy)
        for version, state in (("12", state_12), ("20", state_20)):
            translate_document(
                model,
                tokenizer,
                str(tmp_path / f"in{version}.xlf"),
                str(tmp_path / "out.xlf"),
                trusted_above=trusted_above,
                confidence=True,
                guards=False,
            )
            (tmp_path / "out.xlf").rename(tmp_path / f"out{version}-{trusted_above}.xlf")
            root = etree.parse(str(tmp_path / f"out{version}-{trusted_above}.xlf")).getroot()
            found = {etree.QName(node).localname: node for node in root.iter() if isinstance(node.tag, str)}
            assert "".join(found["target"].itertext()) == str(expected)
            assert found["note"].text == comment[len("transformer-mt: ") :]
            held = found["target"] if version == "12" else found["segment"]
            assert held.get("state") == state
            assert (found["segment"].get("subState") if version == "20" else None) == (
                "transformer-mt:needs-review" if version == "20" and trusted_above is None else None
            )
    report = translate_document(
        model, tokenizer, str(tmp_path / "in.po"), str(tmp_path / "kept.po"), min_confidence=1.0, guards=False
    )
    [entry] = polib.pofile(str(tmp_path / "kept.po"))
    assert (report.abstained, entry.msgstr, entry.fuzzy) == (1, "", False)
    assert "not translated: confidence below the minimum" in entry.tcomment
    translate_document(
        model, tokenizer, str(tmp_path / "in12.xlf"), str(tmp_path / "kept.xlf"), min_confidence=1.0, guards=False
    )
    assert b"<target" not in (tmp_path / "kept.xlf").read_bytes()


@pytest.mark.parametrize("name", sorted(name for name in CLIENTS if not name.startswith("_")))
def test_each_client_reads_an_abstained_answer_as_the_source(name):
    """A server with --min_confidence, and a model unsure of everything: every recorded client's requests get
    their texts back (html too), flagged, with status 200."""

    class Unsure(ScriptedEngine):
        def translate_sentences(self, sentences, options, names=None, target_prefix=None):
            return [[(f"«{sentence}»", -5.0)] * options.num_return_sequences for sentence in sentences]

    models = [
        ServedModel(Unsure({}, calibrated=calibration("x")), "en", "de", min_confidence=0.5),
        ServedModel(Unsure({}, calibrated=calibration("x")), "de", "en", min_confidence=0.5),
    ]
    with TestClient(create_app(models)) as client:
        for request in CLIENTS[name]["requests"]:
            sent = request.get("json") or request.get("form") or request.get("multipart") or {}
            kwargs = {
                "params": request.get("query"),
                "json": request.get("json"),
                "data": request.get("form"),
                "files": {key: (None, value) for key, value in request["multipart"].items()}
                if "multipart" in request
                else None,
            }
            answer = client.request(request["method"], request["path"], **kwargs)
            assert answer.status_code == 200, (name, request, answer.text)
            if request["path"] != "/translate":
                continue
            sent = sent or request.get("query")
            texts = sent["q"] if isinstance(sent["q"], list) else [sent["q"]]
            got = answer.json()
            assert got["translatedText"] == sent["q"], name  # the sources, as the client sent them
            assert got["flags"] == (
                [{"abstained": True}] * len(texts) if isinstance(sent["q"], list) else {"abstained": True}
            )


def test_device_auto_is_the_cpu_here_and_cuda_without_a_gpu_is_refused_by_its_flag(beam4_copy_model, capsys):
    import torch

    from transformer_mt.engines import resolve_device
    from transformer_mt.scripts import translate as translate_script

    assert resolve_device("cpu") == "cpu"
    if torch.cuda.is_available():  # a GPU machine: the GPU check script covers the cuda path
        assert resolve_device("auto") == "cuda"
        return
    assert resolve_device("auto") == "cpu"
    for engine in ("transformers", "ctranslate2"):
        assert load_engine(str(beam4_copy_model[0]), EngineSettings(engine, device="auto")).device == "cpu"
        with pytest.raises(ValueError, match="--device cuda: no CUDA device is visible here"):
            load_engine(str(beam4_copy_model[0]), EngineSettings(engine, device="cuda"))
    with pytest.raises(SystemExit):
        translate_script.main(["--model", str(beam4_copy_model[0]), "--device", "cuda", "Open the file."])
    assert "--device cuda: no CUDA device is visible here" in capsys.readouterr().err
