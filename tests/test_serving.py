"""transformer-mt-serve: LibreTranslate's API as its clients send it, markup kept, limits and errors, batching and
overload, a real client against a server process, and the page in a real browser."""

import asyncio
import contextlib
import json
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import pytest

from .utils import REPO, SCRIPTS, command_env, require, save_copy_model, serve_process


require("fastapi", "the server needs the [serve] extra: pip install -e '.[serve]'")
from fastapi.testclient import TestClient  # noqa: E402

from transformer_mt.serving import Limits, ServedModel, create_app  # noqa: E402
from transformer_mt.serving.batcher import Batcher, Overloaded  # noqa: E402


CLIENTS = json.loads((REPO / "tests" / "fixtures" / "libretranslate_clients.json").read_text(encoding="utf-8"))


class FakeEngine:
    """An engine that 'translates' a sentence into «sentence» (hypothesis k: «sentence»k), after `delay` seconds per
    call: exact, fast answers for the API's own tests. Records the batch sizes it was called with."""

    name, reason, device, workers, max_positions = "fake", "a test engine", "cpu", 1, None
    calibration = calibration_problem = None  # the protocol's: no calibration beside it
    # gives character offsets (its translations can be aligned) and reads any length (transformers' sentinel)
    tokenizer = types.SimpleNamespace(is_fast=True, model_max_length=int(1e30))

    def __init__(self, source="en", target="de", delay=0.0, marker="«»"):
        self.config = types.SimpleNamespace(source_lang=source, target_lang=target)
        self.generation_config = types.SimpleNamespace(num_beams=1)
        self.delay, self.marker, self.calls = delay, marker, []

    def translate_sentences(self, sentences, options, names=None, target_prefix=None):
        self.calls.append(len(sentences))
        time.sleep(self.delay)
        return [
            [
                (f"{self.marker[0]}{sentence}{self.marker[1]}" + (str(k) if k else ""), -0.1 * k)
                for k in range(options.num_return_sequences)
            ]
            for sentence in sentences
        ]

    def align_pairs(self, sources, targets, options):
        """Word i to word i: the marker keeps every word where it was."""
        return [[(i, i) for i in range(len(target.split()))] for target in targets]


def fake_app(limits=None, delay=0.0, marker="«»"):
    models = [
        ServedModel(FakeEngine("en", "de", delay, marker), "en", "de"),
        ServedModel(FakeEngine("de", "en", delay, marker), "de", "en"),
    ]
    return create_app(models, limits)


@pytest.fixture
def client():
    with TestClient(fake_app()) as test_client:
        yield test_client


def test_a_paragraph_comes_back_as_every_sentence_translated(client):
    answer = client.post(
        "/translate", json={"q": "Open the file. Click Save. Then close the window.", "source": "en", "target": "de"}
    )
    assert answer.status_code == 200
    assert answer.json() == {"translatedText": "«Open the file.» «Click Save.» «Then close the window.»"}


def test_html_keeps_tags_attributes_and_untranslated_elements(client):
    html = (
        '<p class="x">Open <a href="/f?a=1&amp;b=2" title="keep">the file</a>. <b>Save</b> it.</p>'
        '<p translate="no">Mastodon</p><script>var a = "<b>";</script><code>ls -l</code>'
    )
    answer = client.post("/translate", json={"q": html, "source": "en", "target": "de", "format": "html"}).json()
    # each sentence whole, its inline tags around the same words; a label the sentence kept as it was ("Save") takes
    # its own translation (the engine's for "Save" alone), as a model that leaves a UI label in English is helped
    assert answer["translatedText"] == (
        '<p class="x">«Open <a href="/f?a=1&amp;b=2" title="keep">the file</a>.» «<b>«Save»</b> it.»</p>'
        '<p translate="no">Mastodon</p><script>var a = "<b>";</script><code>ls -l</code>'
    )


def test_a_mastodon_post_is_one_sentence_with_its_link_and_bold_word_and_its_hashtag_verbatim(client):
    post = (
        '<p>All <a href="https://example.org/disks" rel="nofollow">partitions are</a> already <b>in use</b>. '
        '<a href="https://mastodon.social/tags/linux" class="mention hashtag" rel="tag">#<span>linux</span></a> '
        '<span class="h-card"><a href="https://mastodon.social/@alice" class="u-url mention">@<span>alice'
        "</span></a></span></p>"
    )
    answer = client.post("/translate", json={"q": post, "source": "en", "target": "de", "format": "html"}).json()
    assert answer["translatedText"] == (
        '<p>«All <a href="https://example.org/disks" rel="nofollow">partitions are</a> already <b>in use</b>.» '
        '<a href="https://mastodon.social/tags/linux" class="mention hashtag" rel="tag">#<span>linux</span></a> '
        '<span class="h-card"><a href="https://mastodon.social/@alice" class="u-url mention">@<span>alice'
        "</span></a></span></p>"
    )  # every tag as the post wrote it (issue 51: attributes were sorted)
    # one sentence, then the link's and the bold words' own texts (where to place them) in a batch of their own;
    # no hashtag, no mention
    assert client.app.state.service.pairs[("en", "de")].engine.calls[-2:] == [1, 2]


class DroppingEngine(FakeEngine):
    """A FakeEngine whose translations lose every "%s" and every "https://example.org" (the model's mistakes)."""

    def translate_sentences(self, sentences, options, names=None, target_prefix=None):
        return [
            [(text.replace("%s", "").replace(" https://example.org", ""), score) for text, score in hypotheses]
            for hypotheses in super().translate_sentences(sentences, options, names, target_prefix)
        ]


def test_protected_spans_put_back_or_lost_are_named_in_a_field_clients_ignore():
    models = [ServedModel(DroppingEngine("en", "de"), "en", "de")]
    with TestClient(create_app(models)) as client:
        answer = client.post(
            "/translate",
            json={"q": ["Unknown database: %s", "Hello.", "Read https://example.org"], "source": "en", "target": "de"},
        ).json()
        assert answer == {
            "translatedText": ["«Unknown database: » %s", "«Hello.»", "«Read» https://example.org"],
            "flags": [{"repaired": ["%s"]}, {}, {"repaired": ["https://example.org"]}],
        }
        plain = client.post("/translate", json={"q": "Hello.", "source": "en", "target": "de"}).json()
        assert plain == {"translatedText": "«Hello.»"}  # nothing put back, nothing lost: no field
        kept = client.post(
            "/translate", json={"q": "Unknown database: %s", "source": "en", "target": "de", "repair_spans": False}
        ).json()
        assert kept == {"translatedText": "«Unknown database: »", "flags": {"lost": ["%s"]}}


def test_a_translation_is_escaped_never_markup():
    with TestClient(fake_app(marker="<>")) as markup_client:
        answer = markup_client.post(
            "/translate", json={"q": "<p>Hello</p>", "source": "en", "target": "de", "format": "html"}
        ).json()
        assert answer["translatedText"] == "<p>&lt;Hello&gt;</p>"
        plain = markup_client.post("/translate", json={"q": "Hello", "source": "en", "target": "de"}).json()
        assert plain["translatedText"] == "<Hello>"  # format text: text, as the client asked


@pytest.mark.parametrize("name", sorted(name for name in CLIENTS if not name.startswith("_")))
def test_each_clients_requests_get_the_answer_it_reads(name, client):
    for request in CLIENTS[name]["requests"]:
        kwargs = {"params": request.get("query")}
        if "json" in request:
            kwargs["json"] = request["json"]
        elif "form" in request:
            kwargs["data"] = request["form"]
        elif "multipart" in request:
            kwargs["files"] = {key: (None, value) for key, value in request["multipart"].items()}
        answer = client.request(request["method"], request["path"], **kwargs)
        assert answer.status_code == 200, (name, request, answer.text)
        check_reads(answer.json(), request, name)


# What the fake engine makes of the HTML posts: each sentence translated whole, its inline tags around its words.
EXPECTED_HTML = {
    "<p>Open the file. Close the window.</p>": "<p>«Open the file.» «Close the window.»</p>",
    "<p>Click <b>Save</b>.</p>": "<p>«Click <b>«Save»</b>.»</p>",
    "<p>Open the file.</p>": "<p>«Open the file.»</p>",
    "Open the file.": "«Open the file.»",
}


def check_reads(answer, request, name):
    sent = request.get("json") or request.get("form") or request.get("multipart") or request.get("query") or {}
    html = sent.get("format") == "html"
    for field in request["reads"]:
        if field == "translatedText[]":
            assert answer["translatedText"] == [EXPECTED_HTML[text] if html else f"«{text}»" for text in sent["q"]]
        elif field == "translatedText":
            assert answer["translatedText"] == (EXPECTED_HTML[sent["q"]] if html else f"«{sent['q']}»"), name
        elif field == "detectedLanguage[].language":  # Mastodon: short posts are assumed to be the model's source
            assert [entry["language"] for entry in answer["detectedLanguage"]] == ["en"] * len(sent["q"])
            assert all(0 <= entry["confidence"] <= 100 for entry in answer["detectedLanguage"])
        elif field == "alternatives[]":
            assert answer["alternatives"] == [f"«{sent['q']}»{k}" for k in (1, 2, 3)]
        elif field in ("code", "targets"):
            assert {entry["code"]: entry["targets"] for entry in answer} == {"en": ["de"], "de": ["en"]}
        elif field == "[].language":
            assert answer[0]["language"] == ("de" if "Klicken" in sent["q"] else "en"), answer
        elif field == "[].confidence":
            assert all(0 <= entry["confidence"] <= 100 for entry in answer)
            assert [entry["confidence"] for entry in answer] == sorted((e["confidence"] for e in answer), reverse=True)
        elif field in ("charLimit", "keyRequired"):
            assert answer["charLimit"] == 5000 and answer["keyRequired"] is False
        else:
            raise AssertionError(f"no check for {field}")


BAD_REQUESTS = [
    ({"source": "en", "target": "de"}, 400, "missing q parameter"),
    ({"q": "Hi", "target": "de"}, 400, "missing source parameter"),
    ({"q": "Hi", "source": "en"}, 400, "missing target parameter"),
    ({"q": 5, "source": "en", "target": "de"}, 400, "q must be a string or a list of strings, got int"),
    ({"q": ["a", {"b": 1}], "source": "en", "target": "de"}, 400, "got dict"),
    ({"q": "x" * 5001, "source": "en", "target": "de"}, 400, "request (5001) exceeds text limit (5000)"),
    ({"q": ["a"] * 33, "source": "en", "target": "de"}, 400, "request (33 texts) exceeds batch limit (32)"),
    ({"q": "Hi", "source": "en", "target": "fr"}, 400, "fr is not supported"),  # LibreTranslate's words
    ({"q": "Hi", "source": "auto", "target": "fr"}, 400, "fr is not supported"),
    (
        {"q": "Hi", "source": "en", "target": "en"},
        400,
        "en->en is not a supported language pair; this server translates en->de, de->en",
    ),
    ({"q": "Hi", "source": "en", "target": "de", "format": "pdf"}, 400, "format must be one of text, html"),
    ({"q": "Hi", "source": "en", "target": "de", "alternatives": "many"}, 400, "alternatives must be a whole number"),
    ({"q": "Hi", "source": "en", "target": "de", "alternatives": 9}, 400, "alternatives must be 0 to 5, got 9"),
    (
        {
            "q": "Bonjour à tous, je voudrais traduire ce texte en allemand s'il vous plaît.",
            "source": "auto",
            "target": "de",
        },
        400,
        "fr is not supported",
    ),
]


@pytest.mark.parametrize(("fields", "status", "message"), BAD_REQUESTS)
def test_bad_requests_are_named(fields, status, message, client):
    answer = client.post("/translate", json=fields)
    assert answer.status_code == status and message in answer.json()["error"]


def test_malformed_bodies_are_named_and_the_server_keeps_serving(client):
    answer = client.post("/translate", content=b'{"q": "Hi", ', headers={"Content-Type": "application/json"})
    assert answer.status_code == 400 and "the body is not valid JSON" in answer.json()["error"]
    answer = client.post("/translate", content=b'["Hi"]', headers={"Content-Type": "application/json"})
    assert answer.status_code == 400 and "must be an object of fields, got list" in answer.json()["error"]
    answer = client.post("/translate", content=b"q=Hi", headers={"Content-Type": "multipart/form-data"})
    assert answer.status_code == 400 and "malformed form body" in answer.json()["error"]
    statuses = {
        client.post("/translate", json=BAD_REQUESTS[i % len(BAD_REQUESTS)][0]).status_code for i in range(1000)
    }
    assert statuses == {400}
    assert client.post("/translate", json={"q": "Hi.", "source": "en", "target": "de"}).json() == {
        "translatedText": "«Hi.»"
    }


def test_edge_requests_get_4xx_and_a_failing_engine_a_500_with_cors():
    with TestClient(fake_app(Limits(api_keys=frozenset({"k1"}), queue_limit=4))) as edgy:
        fields = {"source": "en", "target": "de", "api_key": "k1"}
        answer = edgy.post("/translate", json={**fields, "q": [], "source": "auto"})
        assert answer.status_code == 400 and "empty list" in answer.json()["error"]
        assert edgy.post("/translate", json={**fields, "q": "Hi", "api_key": ["k1"]}).status_code == 403
        answer = edgy.post("/translate", json={**fields, "q": "One. Two. Three. Four. Five."})
        assert answer.status_code == 400 and "the queue takes at most 4" in answer.json()["error"]
    app = fake_app()
    app.state.models[0].engine.translate_sentences = lambda *args, **kwargs: 1 / 0
    with TestClient(app, raise_server_exceptions=False) as failing:
        answer = failing.post(
            "/translate", json={"q": "Hi.", "source": "en", "target": "de"}, headers={"Origin": "https://example.org"}
        )
        assert answer.status_code == 500 and answer.json() == {"error": "Internal server error (ZeroDivisionError)"}
        assert answer.headers["access-control-allow-origin"] == "*"
        assert failing.post("/translate", json={"q": "Hi.", "source": "de", "target": "en"}).status_code == 200


def test_api_keys_and_the_request_limit(tmp_path):
    with TestClient(fake_app(Limits(api_keys=frozenset({"k1"}), req_limit=3))) as keyed:
        fields = {"q": "Hi", "source": "en", "target": "de"}
        assert keyed.post("/translate", json=fields).status_code == 403
        assert keyed.post("/translate", json={**fields, "api_key": "nope"}).json() == {"error": "Invalid API key"}
        assert keyed.post("/translate", json={**fields, "api_key": "k1"}).status_code == 200
        answer = keyed.post("/translate", json={**fields, "api_key": "k1"})
        assert answer.status_code == 429 and answer.json() == {"error": "Slowdown: 3 per minute"}
        assert keyed.get("/frontend/settings").json()["keyRequired"] is True


def test_languages_lists_every_language_and_weblate_translates_a_one_direction_server():
    """Weblate's LibreTranslate backend (weblate/machinery/libretranslate.py) reads /languages as the list of codes
    it supports and offers a pair only when both codes are listed; then it posts q as a list, with no format."""
    with TestClient(create_app([ServedModel(FakeEngine("en", "de"), "en", "de")])) as weblate:
        languages = weblate.get("/languages").json()
        assert languages == [
            {"code": "en", "name": "English", "targets": ["de"]},
            {"code": "de", "name": "German", "targets": []},
        ]  # a target only: LibreTranslate lists it
        codes = [language["code"] for language in languages]
        pairs = {(language["code"], target) for language in languages for target in language["targets"]}
        assert ("en", "de") in pairs and "en" in codes and "de" in codes
        answer = weblate.post(
            "/translate", json={"api_key": "", "q": ["Open the file.", "Click Save."], "source": "en", "target": "de"}
        )
        assert answer.json() == {"translatedText": ["«Open the file.»", "«Click Save.»"]}


def test_cors_on_every_answer_and_preflights(client):
    preflight = client.options(
        "/translate", headers={"Origin": "https://example.org", "Access-Control-Request-Method": "POST"}
    )
    assert preflight.status_code == 200 and preflight.headers["access-control-allow-origin"] in (
        "*",
        "https://example.org",
    )
    for answer in (
        client.get("/languages", headers={"Origin": "https://example.org"}),
        client.post("/translate", json={}, headers={"Origin": "https://example.org"}),
    ):
        assert answer.headers["access-control-allow-origin"] == "*"


def test_requests_arriving_together_are_translated_as_one_batch():
    app = fake_app(Limits(max_batch=64, max_wait_ms=50), delay=0.05)
    with TestClient(app) as batched:
        threads = [
            threading.Thread(
                target=batched.post,
                args=("/translate",),
                kwargs={"json": {"q": f"Sentence {i}.", "source": "en", "target": "de"}},
            )
            for i in range(16)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        calls = app.state.models[0].engine.calls
        assert sum(calls) == 16 and len(calls) < 16 and max(calls) > 1


def overload(limits: Limits, delay: float, clients: int = 8) -> tuple[list, object]:
    """`clients` requests at once against a fake server of `limits` whose engine takes `delay` s a call: the answers
    and the batcher."""
    app = fake_app(limits, delay=delay)
    with TestClient(app) as busy:
        answers = []

        def send(i):
            answers.append(busy.post("/translate", json={"q": f"Sentence {i}.", "source": "en", "target": "de"}))

        threads = [threading.Thread(target=send, args=(i,)) for i in range(clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert busy.post("/translate", json={"q": "Hi.", "source": "en", "target": "de"}).status_code == 200
        return answers, app.state.service.batcher


def test_a_full_queue_answers_503_after_the_wait_and_then_serves_again():
    answers, _ = overload(Limits(max_batch=1, max_wait_ms=0.0, queue_limit=2, queue_wait_s=0.05), delay=0.3)
    assert {answer.status_code for answer in answers} == {200, 503} and len(answers) == 8
    refused = next(answer for answer in answers if answer.status_code == 503)
    assert refused.headers["retry-after"] == "1" and "limit 2" in refused.json()["error"]
    assert "no room came within 0.05 s" in refused.json()["error"]


def test_a_request_over_the_queue_waits_for_room_instead_of_a_503():
    """Weblate switches a service off for 30 minutes after one 503: a busy second is waited out."""
    answers, batcher = overload(Limits(max_batch=1, max_wait_ms=0.0, queue_limit=2, queue_wait_s=10.0), delay=0.05)
    assert [answer.status_code for answer in answers] == [200] * 8
    assert batcher.waited >= 4  # eight requests of one sentence against a queue of two: most of them waited


def test_a_cancelled_request_frees_its_queue_slot():
    async def scenario():
        release = threading.Event()
        batcher = Batcher(
            lambda key, sentences: (release.wait(5), [[("x", None)]] * len(sentences))[1],
            max_batch=1,
            max_wait=0.0,
            max_queued=2,
        )
        batcher.start()
        first = asyncio.ensure_future(batcher.translate(("en", 1), ["a"]))  # taken by the engine
        await asyncio.sleep(0.05)
        second = asyncio.ensure_future(batcher.translate(("en", 1), ["b", "c"]))  # waits: the queue is full
        await asyncio.sleep(0.05)
        with pytest.raises(Overloaded):
            await batcher.translate(("en", 1), ["d"], wait_s=0.0)
        second.cancel()  # its client went away
        await asyncio.gather(second, return_exceptions=True)
        assert batcher.queued == 0
        third = asyncio.ensure_future(batcher.translate(("en", 1), ["d"]))
        release.set()
        assert await first == [[("x", None)]] and await third == [[("x", None)]]
        await batcher.stop()

    asyncio.run(scenario())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def copy_model_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("served")
    save_copy_model(path, dict(num_beams=2, early_stopping=True, max_length=40))
    return path


@contextlib.contextmanager
def server_process(*args, env=None):
    """serve.py's URL on a free loopback port (tests.utils.serve_process)."""
    with serve_process(*args, env=env) as (_, url):
        yield url


@pytest.mark.slow  # a server process and a real client
def test_libretranslatepy_translates_through_a_server_process(copy_model_dir, tmp_path):
    from libretranslatepy import LibreTranslateAPI

    from transformer_mt.translation import translate

    with server_process(str(copy_model_dir), "--engine", "transformers") as url:
        api = LibreTranslateAPI(url + "/")
        assert api.languages() == [
            {"code": "en", "name": "English", "targets": ["de"]},
            {"code": "de", "name": "German", "targets": []},
        ]
        paragraph = "Open the file. Click the Save button. Close the dialog window."
        translated = api.translate(paragraph, "en", "de")
        assert (
            api.detect("Klicken Sie auf die Schaltfläche Speichern, um die Datei zu sichern.")[0]["language"] == "de"
        )
    from transformer_mt.checkpoints import load_translator

    model, tokenizer = load_translator(copy_model_dir)
    assert translated == translate(model, tokenizer, [paragraph])[0]
    assert len(translated.split(". ")) == 3  # three sentences in, three out


@pytest.mark.slow  # serve.py in a process of its own
def test_the_server_refuses_to_start_on_a_damaged_model(copy_model_dir, tmp_path):
    damaged = tmp_path / "damaged"
    shutil.copytree(copy_model_dir, damaged)
    (damaged / "model.safetensors").write_bytes((damaged / "model.safetensors").read_bytes()[:1000])
    result = subprocess.run(
        [sys.executable, str(SCRIPTS / "serve.py"), str(damaged), "--port", str(free_port())],
        capture_output=True,
        text=True,
        env=command_env(),
        timeout=120,
    )
    assert result.returncode == 2 and "model.safetensors" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


CHROMEDRIVER = Path("/usr/bin/chromedriver")


@pytest.mark.slow  # a server process and a browser
@pytest.mark.skipif(
    os.environ.get("CI") != "true" and not CHROMEDRIVER.exists(),
    reason="Debian's chromium-driver is not installed (.ci/run installs it)",
)
def test_the_page_translates_in_a_real_browser():
    import uvicorn
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(fake_app(), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(flag)
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        while not server.started:
            time.sleep(0.05)
        driver.get(f"http://127.0.0.1:{port}/")
        WebDriverWait(driver, 20).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#pair option"))
        for text, expected in (
            ("Open the file. Click Save. Close the window.", "«Open the file.» «Click Save.» «Close the window.»"),
            ("<script>alert(1)</script>", "«<script>alert(1)</script>»"),
        ):
            driver.find_element(By.ID, "input").clear()
            driver.find_element(By.ID, "input").send_keys(text)
            driver.find_element(By.ID, "translate").click()
            WebDriverWait(driver, 20).until(lambda d: d.find_element(By.ID, "output").text == expected)
        assert driver.find_elements(By.CSS_SELECTOR, "#output script") == []  # text, not markup
    finally:
        driver.quit()
        server.should_exit = True
        thread.join(timeout=10)


def test_a_register_the_model_cannot_write_is_refused_and_a_preference_falls_back():
    """formality "more"/"less" on a model trained without the register tags is a 400 naming it (issue 52);
    "prefer_more" is translated as the model chooses."""
    with TestClient(fake_app()) as client:
        refused = client.post(
            "/translate", json={"q": "Open it.", "source": "en", "target": "de", "formality": "more"}
        )
        assert refused.status_code == 400
        assert "formality 'more' needs a model trained with the register tags" in refused.json()["error"]
        preferred = client.post(
            "/translate",
            json={"q": "Open it.", "source": "en", "target": "de", "formality": "prefer_more", "context": "Menu"},
        )
        assert preferred.status_code == 200 and preferred.json()["translatedText"] == "«Open it.»"
        assert preferred.json()["flags"] == {"register_unknown": True}  # the model's own register, and it says so
        default = client.post("/translate", json={"q": "Open it.", "source": "en", "target": "de"})
        assert "flags" not in default.json()


def test_an_inline_elements_own_text_is_decoded_once_without_guards(caplog):
    """In html mode an element's own text is decoded alone only as a hint for where the element goes: the server
    batches it apart and decodes it once, with no guard's re-decode and no warning about a text the client never
    sent (issue 51, item 7). The engine here copies, which sets off the copy guard on both texts."""
    app = fake_app(marker=("", ""))
    engine = app.state.service.pairs[("en", "de")].engine
    with TestClient(app) as client, caplog.at_level(logging.WARNING):
        answer = client.post(
            "/translate",
            json={
                "q": "<p>Read <em>the whole manual of this program</em> before you start it.</p>",
                "source": "en",
                "target": "de",
                "format": "html",
            },
        )
    assert answer.status_code == 200, answer.text
    assert answer.json()["flags"] == {"guards": ["copy"], "redecoded": True}  # the paragraph's own copy
    assert sum(engine.calls) == 3  # the run of text, the guard's re-decode of it, the element's text once (was 4)
    assert "1 translation(s) looped, copied the source" in caplog.text  # the run alone (was 2, naming the element)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["transformers", "ctranslate2"])
def test_weblate_s_recorded_request_keeps_every_marker_on_the_shipped_model(name):
    """Weblate matches `[X<offset>X]` back (spaces allowed before `]`) and puts its placeholder there: each must come
    back whole, once per time its source holds it."""
    from transformer_mt.engines import load_engine

    engine = load_engine(str(REPO / "models" / "transformer-mt-en-de-broad"), name)
    (request,) = [request for request in CLIENTS["weblate"]["requests"] if request["method"] == "POST"]
    with TestClient(create_app([ServedModel(engine, "en", "de")])) as weblate:
        answer = weblate.post(request["path"], json=request["json"])
    assert answer.status_code == 200
    for source, translated in zip(request["json"]["q"], answer.json()["translatedText"], strict=True):
        markers = re.findall(r"\[X\d+X\]", source)
        assert sorted(re.findall(r"\[X\d+X *\]", translated)) == sorted(markers), (source, translated)
