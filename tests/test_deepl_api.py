"""DeepL's API (serving.deepl): DeepL's own Python client against a loopback server, Weblate's DeepL backend's
requests replayed (tests/fixtures/weblate_deepl.json), DeepL's error bodies and status codes, the text parameters'
helpers, and the shipped en->fr model's two registers through the client."""

import io
import json
import re
import threading
import time

import pytest

from .utils import REPO, require


require("fastapi", "the server needs the [serve] extra: pip install -e '.[serve]'")
deepl = require("deepl", "DeepL's client is in the [test] extra: pip install -e '.[test]'")
from fastapi.testclient import TestClient  # noqa: E402

from transformer_mt.engines import load_engine  # noqa: E402
from transformer_mt.serving import Limits, ServedModel, create_app  # noqa: E402
from transformer_mt.serving import deepl as deepl_routes  # noqa: E402
from transformer_mt.serving.deepl_text import keep_format, put_back, take_out  # noqa: E402
from transformer_mt.serving.folder import ModelFolder  # noqa: E402
from transformer_mt.serving.uploads import FileStore  # noqa: E402
from transformer_mt.text.formality import FORMAL, INFORMAL, register  # noqa: E402

from .test_serving import FakeEngine, free_port, server_process  # noqa: E402


WEBLATE = json.loads((REPO / "tests" / "fixtures" / "weblate_deepl.json").read_text(encoding="utf-8"))


class WordTokenizer:
    """A word a token, at most 8: what `split_sentences=0` checks a whole text against."""

    is_fast, model_max_length = True, 8

    def __call__(self, text: str) -> dict:
        return {"input_ids": text.split()}


class RegisterEngine(FakeEngine):
    """A FakeEngine of a model trained with the register tags and with context: it records the options of each
    call, so that a test reads the formality, context and glossary a request reached the engine with."""

    tokenizer = WordTokenizer()

    def __init__(self, source="en", target="de", delay=0.0):
        super().__init__(source, target, delay)
        self.config.formality_tags = True
        self.seen = []

    def translate_sentences(self, sentences, options, names=None, target_prefix=None):
        self.seen.append(options)
        return super().translate_sentences(sentences, options, names, target_prefix)


def deepl_app(tmp_path, limits=None, delay=0.0):
    """en->de (the register tags) and de->en (none) over fake engines taking `delay` s a call, files and the DeepL
    store in `tmp_path`."""
    models = [
        ServedModel(RegisterEngine("en", "de", delay), "en", "de"),
        ServedModel(FakeEngine("de", "en", delay), "de", "en"),
    ]
    app = create_app(models, limits, FileStore(str(tmp_path / "files")))
    app.state.deepl_db = str(tmp_path / "deepl.sqlite3")
    return app


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The app in uvicorn on a loopback port, in a thread of this process: (its URL, its en->de engine)."""
    import uvicorn

    app = deepl_app(tmp_path_factory.mktemp("deepl"))
    port = free_port()
    running = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    while not running.started:
        time.sleep(0.02)
    deepl.http_client.max_network_retries = 0
    yield f"http://127.0.0.1:{port}", app.state.service.pairs[("en", "de")].engine
    running.should_exit = True
    thread.join(timeout=10)


def translator(server, key: str):
    return deepl.Translator(key, server_url=server[0])


def test_the_client_translates_a_list_with_formality_and_context(server):
    client = translator(server, "key-translate")
    results = client.translate_text(
        ["Open the file.", "Close it. Then quit."], source_lang="EN", target_lang="DE", formality="less", context="A"
    )
    assert [(r.text, r.detected_source_lang, r.billed_characters) for r in results] == [
        ("«Open the file.»", "EN", 14),
        ("«Close it.» «Then quit.»", "EN", 20),
    ]
    assert {(options.formality, options.context) for options in server[1].seen[-1:]} == {("less", "A")}
    whole = client.translate_text("Close it. Then quit.", target_lang="DE", split_sentences=deepl.SplitSentences.OFF)
    assert whole.text == "«Close it. Then quit.»" and not server[1].seen[-1].split_sentences
    detected = client.translate_text("Hallo Welt, wie geht es dir heute?", target_lang="EN-US")
    assert (detected.text, detected.detected_source_lang) == ("«Hallo Welt, wie geht es dir heute?»", "DE")
    assert client.get_usage().character.count == 34 + 20 + 34 and client.get_usage().character.limit == 10**12


def test_weblate_placeholders_come_back_byte_for_byte_through_the_client(server):
    client = translator(server, "key-tags")
    texts = ['Cannot rename <x id="14"></x>', 'Remove <x id="7"></x> &amp; <x id="10">{0}</x>?']
    results = client.translate_text(texts, source_lang="EN", target_lang="DE", tag_handling="xml", ignore_tags="x")
    assert [result.text for result in results] == [
        '«Cannot rename <x id="14"></x>»',
        '«Remove <x id="7"></x> &amp; <x id="10">{0}</x>?»',
    ]
    html = client.translate_text(
        "<p>Open <b>the file</b>.</p>", source_lang="EN", target_lang="DE", tag_handling="html"
    )
    assert html.text == "<p>«Open <b>the file</b>.»</p>"  # the markup kept around the same words


def test_the_client_lists_languages_with_formality(server):
    client = translator(server, "key-languages")
    assert [(lang.code, lang.name) for lang in client.get_source_languages()] == [("DE", "German"), ("EN", "English")]
    assert [(lang.code, lang.name, lang.supports_formality) for lang in client.get_target_languages()] == [
        ("DE", "German", True),
        ("EN-GB", "English (British)", False),
        ("EN-US", "English (American)", False),
    ]
    assert [(pair.source_lang, pair.target_lang) for pair in client.get_glossary_languages()] == [
        ("en", "de"),
        ("de", "en"),
    ]


def test_a_glossary_made_by_the_client_is_listed_read_followed_and_deleted(server):
    client = translator(server, "key-glossary")
    made = client.create_glossary("ui", "EN", "DE", {"file": "Datei", "folder": "Ordner"})
    assert (made.name, made.ready, made.source_lang, made.target_lang, made.entry_count) == ("ui", True, "EN", "DE", 2)
    assert made.creation_time.tzinfo is not None and abs(time.time() - made.creation_time.timestamp()) < 60
    assert [glossary.glossary_id for glossary in client.list_glossaries()] == [made.glossary_id]
    assert client.get_glossary(made.glossary_id).name == "ui"
    assert client.get_glossary_entries(made) == {"file": "Datei", "folder": "Ordner"}
    assert translator(server, "another-key").list_glossaries() == []  # scoped to the key
    calls = len(server[1].seen)
    result = client.translate_text("Open the file.", source_lang="EN", target_lang="DE", glossary=made)
    assert result.text == "«Open the Datei.»"
    assert [options.glossary for options in server[1].seen[calls:]][:1] == [(("file", "Datei"), ("folder", "Ordner"))]
    client.delete_glossary(made)
    with pytest.raises(deepl.GlossaryNotFoundException):
        client.get_glossary(made.glossary_id)


def test_a_document_is_done_at_the_first_poll_and_downloaded_once(server):
    client = translator(server, "key-document")
    out = io.BytesIO()
    started = time.monotonic()
    document = io.BytesIO(b"Open the file.\nClose it.\n")
    document.name = "notes.txt"  # what the client names the file part by
    status = client.translate_document(document, out, target_lang="DE", formality="less")
    assert status.done and time.monotonic() - started < 4  # no 5 s poll
    assert out.getvalue().decode() == "«Open the file.»\n«Close it.»\n"
    assert server[1].seen[-1].formality == "less"  # one register for the whole file
    handle = client.translate_document_upload(b"Save.\n", target_lang="DE", source_lang="EN", filename="a.txt")
    assert client.translate_document_get_status(handle).status.value == "done"
    assert client.translate_document_download(handle).content == "«Save.»\n".encode()
    with pytest.raises(deepl.DeepLException, match="Not found"):
        client.translate_document_download(handle)


def replaced(value, found: dict):
    """`value` with each `{name}` of `found` written in."""
    if isinstance(value, str):
        return re.sub(r"\{(glossary_id|creation_time)\}", lambda m: found.get(m[1], m[0]), value)
    if isinstance(value, list):
        return [replaced(item, found) for item in value]
    if isinstance(value, dict):
        return {key: replaced(item, found) for key, item in value.items()}
    return value


@pytest.mark.parametrize("flow", ["requests", "requests_v2"])
def test_weblates_deepl_backend_requests_replayed(tmp_path, flow):
    """Weblate's v3 flow (languages, a glossary sync, a translate) and the v2 flow of the Weblate source read."""
    with TestClient(deepl_app(tmp_path)) as client:
        found = {}
        for step in WEBLATE[flow]:
            answer = client.request(
                step["method"],
                replaced(step["path"], found),
                params=step.get("params"),
                json=replaced(step.get("json"), found),
                headers={"Authorization": "DeepL-Auth-Key weblate-key"},
            )
            assert answer.status_code == step["status"], (step, answer.text)
            if answer.status_code == 201:
                found = {key: answer.json()[key] for key in ("glossary_id", "creation_time")}
            if "answer" in step:
                assert answer.json() == replaced(step["answer"], found), step


def test_refusals_are_deepls_body_and_status_and_libretranslates_keep_theirs(tmp_path):
    limits = Limits(api_keys=frozenset({"good"}), char_limit=20, batch_limit=2)
    with TestClient(deepl_app(tmp_path, limits)) as client:
        good = {"Authorization": "DeepL-Auth-Key good"}

        def refused(path, method="POST", headers=good, **body):
            answer = client.request(method, path, headers=headers, json=body or None)
            return answer.status_code, answer.json()

        assert refused("/v2/translate", headers={"Authorization": "DeepL-Auth-Key bad"}) == (
            403,
            {"message": "Invalid API key"},
        )
        assert refused("/v2/translate", text=["a" * 21], target_lang="DE") == (
            413,
            {"message": "Request Entity Too Large: 21 characters (at most 20)"},
        )
        assert refused("/v2/translate", text=["a"], target_lang="DE", outline_detection=False) == (
            400,
            {
                "message": "Parameter 'outline_detection' is not supported by this server: "
                "the markup's own elements decide where sentences end"
            },
        )
        assert refused("/v2/translate", text=["a"], target_lang="FR") == (
            400,
            {"message": "Value for 'target_lang' not supported: 'FR'; this server translates DE, EN"},
        )
        assert refused("/v2/translate", text=["a"]) == (
            400,
            {"message": "Parameter 'target_lang' not specified (a language code: DE, EN)"},
        )
        assert refused("/v2/translate", text=["a"], target_lang="EN-GB", formality="more") == (
            400,
            {
                "message": "formality 'more' needs a model trained with the register tags (--formality_share), and "
                "this one has none: ask for prefer_more (the model's own register) or default"
            },
        )
        assert refused("/v2/glossaries/nope", method="GET") == (404, {"message": "Glossary not found: 'nope'"})
        assert refused("/v3/languages", method="GET") == (
            400,
            {"message": "Value for 'resource' not supported: None (translate_text, glossary, write)"},
        )
        assert client.post("/translate", json={"q": "a", "source": "en", "target": "de"}).json() == {
            "error": "Invalid API key"
        }


def test_a_full_queue_is_waited_out_for_less_than_weblates_deepl_timeout_then_a_503_in_deepls_body(
    tmp_path, monkeypatch
):
    """The DeepL routes wait DEEPL_QUEUE_WAIT_S for room (here made 0.05 s), not --queue_wait_s (10 s)."""
    monkeypatch.setattr(deepl_routes, "DEEPL_QUEUE_WAIT_S", 0.05)
    limits = Limits(max_batch=1, max_wait_ms=0.0, queue_limit=2, queue_wait_s=10.0)
    with TestClient(deepl_app(tmp_path, limits, delay=0.2)) as busy:
        answers = []

        def send(i):
            answers.append(busy.post("/v2/translate", json={"text": [f"Sentence {i}."], "target_lang": "DE"}))

        threads = [threading.Thread(target=send, args=(i,)) for i in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        refused = [answer for answer in answers if answer.status_code == 503]
        assert {answer.status_code for answer in answers} == {200, 503}
        assert refused[0].headers["retry-after"] == "1"
        assert refused[0].json() == {
            "message": "the server is busy: 2 sentences are waiting (limit 2), and no room came within 0.05 s"
        }


def test_form_bodies_the_auth_key_field_and_split_sentences(tmp_path):
    with TestClient(deepl_app(tmp_path)) as client:
        form = {"text": ["One. Two.", "Three\nfour."], "target_lang": "DE", "auth_key": "k"}
        answer = client.post("/v2/translate", data=form).json()
        assert answer == {
            "translations": [
                {"detected_source_language": "EN", "text": "«One.» «Two.»"},
                {"detected_source_language": "EN", "text": "«Three\nfour.»"},  # one sentence: no end mark
            ]
        }
        form["split_sentences"] = "nonewlines"
        texts = [entry["text"] for entry in client.post("/v2/translate", data=form).json()["translations"]]
        assert texts == ["«One.» «Two.»", "«Three four.»"]
        whole = client.post("/v2/translate", data=form | {"split_sentences": "0"}).json()["translations"]
        assert [entry["text"] for entry in whole] == ["«One. Two.»", "«Three\nfour.»"]  # each text one sentence
        spaced = form | {"split_sentences": "0", "text": "  Save  ", "auth_key": "other"}
        assert client.post("/v2/translate", data=spaced).json()["translations"][0]["text"] == "«Save»"  # as split
        long = form | {"split_sentences": "0", "text": ["Short.", "One two three four five six seven eight nine."]}
        assert client.post("/v2/translate", data=long).json() == {
            "message": "Value for 'split_sentences' not supported for text 1: '0' reads each text whole, and it has 9 "
            "tokens where the model reads at most 8 (send it with 1 or nonewlines)"
        }
        refused = client.post("/v2/translate", data=form | {"split_sentences": "2"})
        assert (refused.status_code, refused.json()) == (
            400,
            {"message": "Value for 'split_sentences' not supported: '2' (0, 1 or nonewlines)"},
        )
        assert client.post("/v2/usage", data={"auth_key": "k"}).json() == {
            "character_count": 60,  # three requests of 20 characters; the refused ones count nothing
            "character_limit": 10**12,
        }


def test_a_documents_filename_field_names_it_and_documents_can_be_off(tmp_path):
    with TestClient(deepl_app(tmp_path)) as client:
        made = client.post(
            "/v2/document", data={"target_lang": "DE", "filename": "a.txt"}, files={"file": ("blob", b"Save.\n")}
        ).json()
        status = client.post(f"/v2/document/{made['document_id']}", json={"document_key": made["document_key"]})
        assert status.json() == {"document_id": made["document_id"], "status": "done", "seconds_remaining": 0}
        wrong = client.post(f"/v2/document/{made['document_id']}/result", json={"document_key": "0" * 64})
        assert wrong.status_code == 404
        result = client.post(f"/v2/document/{made['document_id']}/result", json={"document_key": made["document_key"]})
        assert result.content == "«Save.»\n".encode()
    app = create_app([ServedModel(FakeEngine("en", "de"), "en", "de")])
    app.state.deepl_db = str(tmp_path / "off.sqlite3")
    with TestClient(app) as client:
        off = client.post("/v2/document", data={"target_lang": "DE"}, files={"file": ("a.txt", b"Save.\n")})
        assert (off.status_code, off.json()) == (
            403,
            {"message": "Document translation is disabled on this server (--disable_files_translation)"},
        )


def test_entries_as_csv_v3_entries_and_a_dictionary_deleted(tmp_path):
    with TestClient(deepl_app(tmp_path)) as client:
        key = {"Authorization": "DeepL-Auth-Key k"}
        made = client.post(
            "/v2/glossaries",
            headers=key,
            data={
                "name": "g",
                "source_lang": "EN",
                "target_lang": "DE",
                "entries": 'a,b\n"c, d",e',
                "entries_format": "csv",
            },
        ).json()
        entries = client.get(f"/v2/glossaries/{made['glossary_id']}/entries", headers=key | {"Accept": "text/csv"})
        assert (entries.headers["content-type"], entries.text) == ("text/csv; charset=utf-8", 'a,b\n"c, d",e\n')
        v3 = client.get(f"/v3/glossaries/{made['glossary_id']}/entries?source_lang=en&target_lang=de", headers=key)
        assert v3.json() == {
            "dictionaries": [
                {"source_lang": "en", "target_lang": "de", "entries": "a\tb\nc, d\te\n", "entries_format": "tsv"}
            ]
        }
        path = f"/v3/glossaries/{made['glossary_id']}/dictionaries?source_lang=EN&target_lang=DE"
        assert [client.delete(path, headers=key).status_code for _ in range(2)] == [204, 404]
        twice = client.post(
            "/v2/glossaries",
            headers=key,
            json={"name": "g", "source_lang": "EN", "target_lang": "DE", "entries": "a\tb\na\tc"},
        )
        assert (twice.status_code, twice.json()) == (
            400,
            {"message": "Invalid glossary entries: line 2 gives the term 'a' a second time"},
        )


def test_supports_formality_of_a_folders_model_not_loaded_is_read_from_its_config(tmp_path):
    """A --models folder's model not loaded yet: its config.json says, and it stays unloaded."""
    (tmp_path / "en-fr").mkdir()
    config = {"source_lang": "en", "target_lang": "fr", "formality_tags": True}
    (tmp_path / "en-fr" / "config.json").write_text(json.dumps(config), encoding="utf-8")
    model = ServedModel(None, "en", "fr")
    folder = ModelFolder({str(tmp_path / "en-fr"): [model]}, lambda directory: (FakeEngine("en", "fr"), None))
    app = create_app([model], folder=folder)
    app.state.deepl_db = str(tmp_path / "deepl.sqlite3")
    with TestClient(app) as client:
        answer = client.get("/v2/languages", params={"type": "target"}).json()
        assert answer == [{"language": "FR", "name": "French", "supports_formality": True}]
        assert folder.loads == 0


def test_ignored_elements_are_placeholders_that_skip_the_texts_own_numbers():
    text = 'Use {0} and <x id="3"></x> or <x id="9">a<b/></x>.'
    shown, pairs = take_out(text, ["x"])
    assert shown == "Use {0} and {1} or {2}."
    assert pairs == [("{1}", '<x id="3"></x>'), ("{2}", '<x id="9">a<b/></x>')]
    assert put_back("Nutze {0} und {2} oder.", pairs) == 'Nutze {0} und <x id="9">a<b/></x> oder.<x id="3"></x>'


@pytest.mark.parametrize(
    ("source", "translation", "kept"),
    [
        ("open the file", "Öffnen Sie die Datei.", "öffnen Sie die Datei"),
        ("Done!", "erledigt", "Erledigt!"),
        ("Save.", "Speichern.", "Speichern."),
    ],
)
def test_preserve_formatting_keeps_the_first_letters_case_and_the_final_mark(source, translation, kept):
    assert keep_format(source, translation) == kept


EN_ES = REPO / "models" / "transformer-mt-en-es"
BROAD = REPO / "models" / "transformer-mt-en-de-broad"


@pytest.mark.slow  # the shipped broader model on both engines
def test_weblates_placeholders_through_the_shipped_model_on_both_engines(tmp_path):
    """Weblate's translate request (tests/fixtures/weblate_deepl.json, without its glossary) through a real model:
    each `<x id>` element comes back byte for byte, and both engines give the same texts."""
    body = next(step["json"] for step in WEBLATE["requests"] if step["path"] == "/v2/translate")
    body = {name: value for name, value in body.items() if name != "glossary_id"}
    translated = {}
    for engine in ("transformers", "ctranslate2"):
        app = create_app([ServedModel(load_engine(str(BROAD), engine), "en", "de")])
        app.state.deepl_db = str(tmp_path / f"{engine}.sqlite3")
        with TestClient(app) as client:
            answer = client.post("/v2/translate", json=body, headers={"Authorization": "DeepL-Auth-Key w"})
        translated[engine] = [entry["text"] for entry in answer.json()["translations"]]
    assert (
        translated["transformers"]
        == translated["ctranslate2"]
        == [
            '<x id="14"></x> kann nicht umbenannt werden',
            'Sind Sie sicher, dass Sie <x id="32"></x> entfernen möchten?',
            'Die Datei &lt;<x id="25"></x>&gt; im Ordner konnte nicht geöffnet werden.',
            'Zeilen: <x id="6"></x>, Zeichen: <x id="21"></x>',
        ]
    )


@pytest.mark.slow  # a server process over the shipped en->es model
def test_the_shipped_en_es_model_writes_each_register_asked_through_the_client(tmp_path):
    """The model trained with every register pair tagged, asked through DeepL's client: formality less gives the
    informal register ("quieres"), more the formal one ("quiere"), each by the package's own register rule.
    (en->fr, trained with half of them, stays formal: docs/translation.md. The DeepL store goes beside the
    suggestions' file: in `tmp_path`, not the working directory.)"""
    store = ("--suggestions", "review", "--suggestions_db", str(tmp_path / "suggestions.sqlite3"))
    with server_process(str(EN_ES), "--engine", "transformers", *store) as url:
        deepl.http_client.max_network_retries = 0
        client = deepl.Translator("any", server_url=url)
        assert [(lang.code, lang.supports_formality) for lang in client.get_target_languages()] == [("ES", True)]
        sentence = "Do you want to save your changes?"
        less = client.translate_text(sentence, source_lang="EN", target_lang="ES", formality="less").text
        more = client.translate_text(sentence, source_lang="EN", target_lang="ES", formality="more").text
    assert (less, more) == ("¿Quieres guardar los cambios?", "¿Quiere guardar los cambios?")
    assert (register(sentence, less, "es"), register(sentence, more, "es")) == (INFORMAL, FORMAL)
