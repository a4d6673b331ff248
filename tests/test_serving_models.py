"""A folder of models served on demand (transformer_mt.serving.folder, the serve command's --models): every pair
offered before any loads, each loaded on its first request, the least recently used unloaded past
--max_loaded_models but never one a request holds, /ready, --preload, the promotion watcher per model, and
translate.py --models picking the pair."""

import json
import shutil
import threading
import weakref

import pytest

from .utils import require, save_copy_model


require("fastapi", "the server needs the [serve] extra: pip install -e '.[serve]'")
from fastapi.testclient import TestClient  # noqa: E402

from transformer_mt.commands import serve as command  # noqa: E402
from transformer_mt.commands.translate import parse_args as translate_args  # noqa: E402
from transformer_mt.scripts import translate as translate_script  # noqa: E402
from transformer_mt.serving import ServedModel, create_app  # noqa: E402
from transformer_mt.serving.folder import ModelFolder, offered_pairs  # noqa: E402
from transformer_mt.serving.reload import watch  # noqa: E402

from .test_serving import FakeEngine  # noqa: E402


PAIRS = {"en-de": ("en", "de"), "de-en": ("de", "en"), "en-fr": ("en", "fr")}


def fake_folder(tmp_path, max_loaded=None, engines=None):
    """An app over a folder of three fake models (a weights file each, for the watcher), and the folder."""
    groups, loaded = {}, []
    for name, (source, target) in PAIRS.items():
        directory = tmp_path / name
        directory.mkdir(exist_ok=True)
        (directory / "model.safetensors").write_bytes(b"1")
        groups[str(directory)] = [ServedModel(None, source, target)]

    def load(directory):
        name = directory.rsplit("/", 1)[-1]
        loaded.append(name)
        engine = (engines or {}).get(name) or FakeEngine(*PAIRS[name])
        return engine, f"{name}:{len(loaded)}"

    folder = ModelFolder(groups, load, max_loaded, workers=2)  # two engine calls at once: one may be held
    models = [model for group in groups.values() for model in group]
    return create_app(models, folder=folder), folder, loaded


def translate(client, source, target, text="Open the file."):
    return client.post("/translate", json={"q": text, "source": source, "target": target})


def test_every_pair_is_offered_before_any_loads_and_each_loads_on_its_first_request(tmp_path):
    app, folder, loaded = fake_folder(tmp_path)
    with TestClient(app) as client:
        codes = {entry["code"]: entry["targets"] for entry in client.get("/languages").json()}
        assert codes == {"en": ["de", "fr"], "de": ["en", "fr"], "fr": []}  # de->fr through English
        ready = client.get("/ready").json()
        assert (ready["loaded"], ready["available"], loaded) == ([], ["en-de", "de-en", "en-fr"], [])
        assert all(model.engine is None for model in app.state.models)
        assert translate(client, "en", "de").json() == {"translatedText": "«Open the file.»"}
        assert loaded == ["en-de"] and client.get("/ready").json()["loaded"] == ["en-de"]
        assert translate(client, "en", "de").status_code == 200 and loaded == ["en-de"]  # loaded once
        assert translate(client, "en", "es").json() == {"error": "es is not supported"}
        assert client.get("/health").json() == {"status": "ok"}  # liveness stays LibreTranslate's


def test_the_least_recently_used_model_is_unloaded_past_the_limit(tmp_path):
    app, folder, loaded = fake_folder(tmp_path, max_loaded=1)
    with TestClient(app) as client:
        for source, target in (("en", "de"), ("de", "en"), ("en", "de")):
            assert translate(client, source, target).status_code == 200
        assert loaded == ["en-de", "de-en", "en-de"]
        ready = client.get("/ready").json()
        assert (ready["loaded"], ready["max_loaded_models"], ready["evictions"]) == (["en-de"], 1, 2)
        engine_of = {(model.source, model.target): model.engine for model in app.state.models}
        assert engine_of[("de", "en")] is None and engine_of[("en", "de")] is not None
        series = [
            line for line in client.get("/metrics").text.splitlines() if line.startswith("transformer_mt_model_info")
        ]
        assert series == ['transformer_mt_model_info{calibrated="false",engine="fake",source="en",target="de"} 1.0']


def test_a_model_serving_a_request_is_never_unloaded(tmp_path):
    release, started = threading.Event(), threading.Event()

    class Held(FakeEngine):
        def translate_sentences(self, *args, **kwargs):
            started.set()
            release.wait(30)
            return super().translate_sentences(*args, **kwargs)

    app, folder, loaded = fake_folder(tmp_path, max_loaded=1, engines={"en-de": Held("en", "de")})
    with TestClient(app) as client:
        answers = []
        slow = threading.Thread(target=lambda: answers.append(translate(client, "en", "de").json()))
        slow.start()
        try:
            assert started.wait(30)
            assert translate(client, "de", "en").status_code == 200  # loads a second model past the limit of 1
            assert folder.is_loaded(app.state.service.pairs[("en", "de")])  # held by the request in flight
            assert client.get("/ready").json()["loaded"] == ["en-de"]  # the idle one went instead
        finally:
            release.set()
            slow.join(30)
        assert answers == [{"translatedText": "«Open the file.»"}]
        assert loaded == ["en-de", "de-en"] and client.get("/ready").json()["loaded"] == ["en-de"]


def test_a_model_that_fails_to_load_is_a_500_and_is_tried_again(tmp_path):
    app, folder, loaded = fake_folder(tmp_path)
    load = folder.load
    folder.load = lambda directory: 1 / 0  # a damaged model
    with TestClient(app, raise_server_exceptions=False) as client:
        assert translate(client, "en", "de").json() == {"error": "Internal server error (ZeroDivisionError)"}
        assert client.get("/ready").json()["loaded"] == [] and folder.in_use[str(tmp_path / "en-de")] == 0
        folder.load = load  # mended
        assert translate(client, "en", "de").status_code == 200 and loaded == ["en-de"]


def test_the_watcher_swaps_a_loaded_model_and_leaves_an_unloaded_one(tmp_path):
    app, folder, loaded = fake_folder(tmp_path)
    with TestClient(app) as client:
        assert translate(client, "en", "de").status_code == 200
        watcher = watch(app, [], folder.load, every=3600)  # polled by hand below
        try:
            for name in ("en-de", "de-en"):
                (tmp_path / name / "model.safetensors").write_bytes(b"22")  # a promotion of each
            assert watcher.check() == [str(tmp_path / "en-de")]
            assert loaded == ["en-de", "en-de"] and app.state.service.pairs[("de", "en")].engine is None
            assert app.state.service.pairs[("en", "de")].weights == "en-de:2"
        finally:
            watcher.stop()


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    """A folder of tiny models: en-de twice (a-en-de wins, the first by name), de-en, and a folder that is not a
    model."""
    folder = tmp_path_factory.mktemp("models")
    save_copy_model(folder / "a-en-de", dict(num_beams=1, max_length=24))
    for name, languages in (("b-en-de", ("en", "de")), ("c-de-en", ("de", "en"))):
        shutil.copytree(folder / "a-en-de", folder / name)
        config = json.loads((folder / name / "config.json").read_text())
        config["source_lang"], config["target_lang"] = languages
        (folder / name / "config.json").write_text(json.dumps(config))
    (folder / "notes").mkdir()
    return folder


def test_the_first_by_name_wins_a_pair_unless_preferred(tiny_folder):
    pairs, passed_over = offered_pairs(str(tiny_folder))
    assert pairs == {("en", "de"): str(tiny_folder / "a-en-de"), ("de", "en"): str(tiny_folder / "c-de-en")}
    assert passed_over == [str(tiny_folder / "b-en-de")]
    assert offered_pairs(str(tiny_folder), ["b-en-de"])[0][("en", "de")] == str(tiny_folder / "b-en-de")


def test_the_serve_command_preloads_what_it_is_told_and_loads_the_rest_on_demand(tiny_folder, capsys):
    flags = ["--models", str(tiny_folder), "--engine", "transformers", "--watch_seconds", "0"]
    args = command.parse_args([*flags, "--preload", "de-en", "--max_loaded_models", "1"])
    with TestClient(command.app_of(args)) as client:
        ready = client.get("/ready").json()
        assert (ready["loaded"], ready["available"], ready["loads"]) == (["de-en"], ["en-de", "de-en"], 1)
        preloaded = weakref.ref(client.app.state.service.pairs[("de", "en")].engine)
        answer = translate(client, "en", "de", "Open the file.")
        assert answer.status_code == 200 and answer.json()["translatedText"]
        assert client.get("/ready").json()["loaded"] == ["en-de"]  # de-en, the least recently used, went
        assert preloaded() is None  # nothing else kept the unloaded engine: its memory is free
    with pytest.raises(SystemExit):
        command.parse_args([*flags, "--preload", "en-fr"])
    assert "--preload en-fr: not in --models" in capsys.readouterr().err


def test_translate_picks_the_pair_from_the_folder_and_refuses_one_it_lacks(tiny_folder, capsys):
    args = translate_args(["--models", str(tiny_folder), "--source_lang", "de", "--target_lang", "en", "x"])
    assert args.model == str(tiny_folder / "c-de-en")
    assert (args.options.source_lang, args.options.target_lang) == (None, None)  # the chosen model's config's
    flags = ["--source_lang", "en", "--target_lang", "de", "--no_progress", "--max_new_tokens", "8"]
    translate_script.main(["--models", str(tiny_folder), *flags, "Open the file."])
    assert capsys.readouterr().out.count("\n") == 1  # a model of the folder translated the line
    with pytest.raises(SystemExit):
        translate_args(["--models", str(tiny_folder), "--source_lang", "en", "--target_lang", "fr", "x"])
    assert f"en-fr is not in --models {str(tiny_folder)!r}, which holds de-en, en-de" in capsys.readouterr().err


def test_a_folder_without_models_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit):
        command.parse_args(["--models", str(tmp_path)])
    assert "holds no model" in capsys.readouterr().err


def test_a_model_given_by_itself_wins_its_pair_and_load_only_restricts_the_languages(tiny_folder, capsys):
    flags = ["--engine", "transformers", "--watch_seconds", "0"]
    args = command.parse_args(
        [str(tiny_folder / "c-de-en"), "--models", str(tiny_folder), "--load_only", "de,en", *flags]
    )
    with TestClient(command.app_of(args)) as client:
        ready = client.get("/ready").json()
        assert (ready["loaded"], ready["available"]) == (["de-en"], ["de-en", "en-de"])  # the MODEL at the start
    assert "c-de-en: passed over, a MODEL given by itself serves de->en" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        command.parse_args(["--models", str(tiny_folder), "--load_only", "en,fr", *flags])
    assert "holds no model of --load_only en,fr" in capsys.readouterr().err
    with pytest.raises(ValueError, match="c-de-en translates none of --load_only en,fr"):
        command.app_of(command.parse_args([str(tiny_folder / "c-de-en"), "--load_only", "en,fr", *flags]))


def test_a_pair_through_english_loads_both_hops_of_the_folder_and_keeps_them_while_it_runs(tmp_path):
    app, folder, loaded = fake_folder(tmp_path, max_loaded=1)
    with TestClient(app) as client:
        answer = translate(client, "de", "fr").json()
        assert answer == {"translatedText": "««Open the file.»»", "flags": {"pivot": True}}
        assert loaded == ["de-en", "en-fr"]  # both held for the request, past the limit of 1; then one unloaded
        assert client.get("/ready").json()["loaded"] == ["de-en"] and folder.evictions == 1  # the first hop outlasts
