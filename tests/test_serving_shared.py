"""Several server processes, one state (transformer_mt.serving.shared): two apps given one Redis share the request
limit and the translation cache; Redis going away leaves /translate answering and coming back shares again; the
per-process cache without Redis; --workers through the app factory. Debian's redis-server runs on a free loopback
port, without persistence, for the module."""

import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import types

import pytest

from .utils import REPO, SCRIPTS, command_env, require, require_program, wait_until_listening


require("redis", "--redis needs the [serve] extra: pip install -e '.[serve]'")
require("limits", "--redis needs the [serve] extra: pip install -e '.[serve]'")
require("fastapi", "the server needs the [serve] extra: pip install -e '.[serve]'")
import redis  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

from transformer_mt.commands import serve as command  # noqa: E402
from transformer_mt.options import TranslationOptions  # noqa: E402
from transformer_mt.serving import Limits, ServedModel, create_app, shared  # noqa: E402
from transformer_mt.serving.fields import RequestError  # noqa: E402
from transformer_mt.serving.suggestion_store import SuggestionStore  # noqa: E402
from transformer_mt.serving.suggestions import Suggestions  # noqa: E402


FIELDS = {"q": "Open the file.", "source": "en", "target": "de"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RedisServer:
    """Debian's redis-server on one loopback port, without persistence; stopped and started again on that port."""

    def __init__(self, program: str):
        self.program, self.port, self.process = program, free_port(), None
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def start(self):
        self.process = subprocess.Popen(
            [self.program, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
        client, deadline = redis.Redis.from_url(self.url), time.monotonic() + 10
        while True:
            with contextlib.suppress(redis.ConnectionError):
                if client.ping():
                    return
            assert self.process.poll() is None and time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=10)


@pytest.fixture(scope="module")
def redis_server():
    server = RedisServer(require_program("redis-server", "the shared-state tests run Debian's redis-server"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_url(redis_server):
    redis.Redis.from_url(redis_server.url).flushall()
    return redis_server.url


class CountingEngine:
    """Translates a sentence into «sentence» (hypothesis k: «sentence»k) and counts the sentences it was given."""

    name, reason, device, workers, max_positions, calibration = "fake", "a test engine", "cpu", 1, None, None
    calibration_problem = None
    tokenizer = types.SimpleNamespace(is_fast=True)

    def __init__(self):
        self.config = types.SimpleNamespace(source_lang="en", target_lang="de")
        self.generation_config = types.SimpleNamespace(num_beams=1)
        self.sentences = 0

    def translate_sentences(self, sentences, options, names=None, target_prefix=None):
        self.sentences += len(sentences)
        return [
            [(f"«{sentence}»" + (str(k) if k else ""), -0.1 * k) for k in range(options.num_return_sequences)]
            for sentence in sentences
        ]

    def align_pairs(self, sources, targets, options):
        return [[(i, i) for i in range(len(target.split()))] for target in targets]


def counting_app(limits=None, redis_url=None, weights="fake-weights"):
    engine = CountingEngine()
    return create_app([ServedModel(engine, "en", "de", weights=weights)], limits, redis=redis_url), engine


def cache_count(client, result: str) -> float:
    for line in client.get("/metrics").text.splitlines():
        if line.startswith(f'transformer_mt_translation_cache_total{{result="{result}"}}'):
            return float(line.split()[-1])
    return 0.0


def test_a_limit_reached_through_one_process_holds_in_the_other(redis_url):
    limits = Limits(req_limit=3)
    with TestClient(counting_app(limits, redis_url)[0]) as one, TestClient(counting_app(limits, redis_url)[0]) as two:
        assert [one.post("/translate", json=FIELDS).status_code for _ in range(2)] == [200, 200]
        assert two.post("/translate", json=FIELDS).status_code == 200
        for client in (one, two):
            answer = client.post("/translate", json=FIELDS)
            assert answer.status_code == 429 and answer.json() == {"error": "Slowdown: 3 per minute"}
    with TestClient(counting_app(limits)[0]) as alone:  # without --redis: this process's own count
        assert alone.post("/translate", json=FIELDS).status_code == 200


def test_a_cached_answer_stored_by_one_is_served_by_the_other(redis_url):
    (app_one, engine_one), (app_two, engine_two) = counting_app(None, redis_url), counting_app(None, redis_url)
    with TestClient(app_one) as one, TestClient(app_two) as two:
        asked = {"q": ["Open the file. Click Save.", "Close it."], "source": "en", "target": "de", "alternatives": 1}
        first = one.post("/translate", json=asked).json()
        assert first["translatedText"] == ["«Open the file.» «Click Save.»", "«Close it.»"]
        assert engine_one.sentences == 3 and cache_count(one, "miss") == 1
        assert two.post("/translate", json=asked).json() == first
        assert engine_two.sentences == 0 and cache_count(two, "hit") == 1
        # each text is kept alone: a request of one of them is answered from the cache too, shaped as a string
        alone = two.post("/translate", json={**asked, "q": "Close it."}).json()
        assert alone == {"translatedText": "«Close it.»", "alternatives": ["«Close it.»1"]}
        assert engine_two.sentences == 0
        # other options (the format, the hypotheses) are other keys: the model is asked
        two.post("/translate", json={**asked, "q": "Close it.", "format": "html"})
        two.post("/translate", json={**asked, "q": "Close it.", "alternatives": 0})
        assert engine_two.sentences == 2 and cache_count(two, "miss") == 2
    with TestClient(counting_app(None, redis_url, weights="other-weights")[0]) as other:  # other weights, other keys
        assert cache_count(other, "hit") == 0
        other.post("/translate", json={**asked, "q": "Close it."})
        assert cache_count(other, "miss") == 1


def test_without_redis_the_cache_is_an_lru_of_this_process():
    app, engine = counting_app()
    with TestClient(app) as client:
        for _ in range(2):
            assert client.post("/translate", json=FIELDS).json() == {"translatedText": "«Open the file.»"}
        assert engine.sentences == 1 and cache_count(client, "hit") == 1
    cache = shared.TranslationCache(shared.SharedStore(None), size=2)
    model = ServedModel(CountingEngine(), "en", "de", weights="w")
    options = model.options(types.SimpleNamespace(alternatives=0, options=TranslationOptions()))
    for text in ("a", "b", "a", "c"):  # "a" used again, so "b" is the least recently used when "c" comes
        asked = types.SimpleNamespace(texts=[text], is_list=False)
        if cache.get(model, options, asked) is None:
            cache.put(model, options, asked, {"translatedText": text.upper()})
    assert [cache.get(model, options, types.SimpleNamespace(texts=[text], is_list=False)) for text in "abc"] == [
        {"translatedText": "A"},
        None,
        {"translatedText": "C"},
    ]
    unknown = ServedModel(CountingEngine(), "en", "de")  # no weights' identity: never cached
    assert cache.keys(unknown, options, ["a"]) is None


def test_translate_goes_on_while_redis_is_down_and_shares_again_when_it_returns(
    redis_server, redis_url, monkeypatch, caplog, tmp_path
):
    monkeypatch.setattr(shared, "RETRY_S", 0.2)
    limits = Limits(req_limit=2)
    with TestClient(counting_app(limits, redis_url)[0]) as one, TestClient(counting_app(limits, redis_url)[0]) as two:
        service = one.app.state.service
        assert service.shared.store.up()
        redis_server.stop()
        with caplog.at_level(logging.WARNING, logger=shared.__name__):
            answers = [one.post("/translate", json={**FIELDS, "q": f"Text {i}."}) for i in range(3)]
            time.sleep(0.3)  # due for another try: Redis is asked again, and still down
            answers.append(one.post("/translate", json=FIELDS))
        # the limit is counted in this process meanwhile; the cache is skipped; one warning for the outage
        assert [answer.status_code for answer in answers] == [200, 200, 429, 429]
        assert answers[0].json() == {"translatedText": "«Text 0.»"} and cache_count(one, "skipped") == 2
        assert len([r for r in caplog.records if "does not answer" in r.getMessage()]) == 1
        assert not service.shared.store.up()
        with pytest.raises(RequestError) as refused:
            service.shared.store.require_up()
        assert refused.value.status == 503 and f"Redis at {redis_url}" in str(refused.value)
        suggestions = Suggestions(SuggestionStore(str(tmp_path / "suggestions.db")))
        with TestClient(
            create_app([ServedModel(CountingEngine(), "en", "de")], redis=redis_url, suggestions=suggestions)
        ) as suggesting:  # a route that needs the shared store
            answer = suggesting.post(
                "/suggest", json={"q": "Open it.", "s": "Öffne es.", "source": "en", "target": "de"}
            )
            assert answer.status_code == 503 and "does not answer" in answer.json()["error"]
        redis_server.start()  # the same port, empty
        time.sleep(0.3)
        with caplog.at_level(logging.WARNING, logger=shared.__name__):
            assert two.post("/translate", json=FIELDS).status_code == 200
            assert service.shared.store.up()
        assert any("answers again" in record.getMessage() for record in caplog.records)
        # shared again: one request through each, and the third through either is over the limit
        assert one.post("/translate", json=FIELDS).status_code == 200
        assert two.post("/translate", json=FIELDS).status_code == 429
        assert cache_count(one, "hit") == 1  # the answer two stored after the outage


def test_workers_without_redis_warn_and_the_factory_rebuilds_the_app(short_translator, monkeypatch, capsys):
    import uvicorn

    tmp_path = short_translator[0]
    monkeypatch.setenv(command.WORKERS_ENV, "")
    started = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kwargs: started.update(app=app, **kwargs))
    command.serve(command.parse_args([str(tmp_path), "--workers", "2", "--engine", "transformers", "--port", "5001"]))
    assert (
        "--workers 2 without --redis: each process has its own request limits and translation cache"
        in capsys.readouterr().err
    )
    assert (started["app"], started["factory"], started["workers"], started["port"]) == (
        command.FACTORY,
        True,
        2,
        5001,
    )
    assert json.loads(os.environ[command.WORKERS_ENV])["models"] == [str(tmp_path)]
    with TestClient(command.create()) as client:  # what each worker does: the app from the command's arguments
        assert client.post("/translate", json=FIELDS).status_code == 200
        served = client.app.state.models[0]
        assert served.weights.startswith(shared.weights_sha256(str(tmp_path)) + "/transformers/")
    with pytest.raises(SystemExit):
        command.parse_args([str(tmp_path), "--workers", "0"])


@pytest.mark.slow  # a server of two worker processes
def test_two_workers_start_and_share_limit_and_cache_through_redis(short_translator, redis_url):
    tmp_path = short_translator[0]
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            str(SCRIPTS / "serve.py"),
            str(tmp_path),
            "--engine",
            "transformers",
            "--workers",
            "2",
            "--redis",
            redis_url,
            "--req_limit",
            "6",
            "--port",
            str(port),
        ],
        env=command_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    import urllib.error
    import urllib.request

    def post(fields):
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/translate",
            json.dumps(fields).encode(),
            {"Content-Type": "application/json", "Connection": "close"},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    try:
        wait_until_listening(process, port)
        answers = [post(FIELDS) for _ in range(7)]  # the connections are closed: the workers take them in turn
        assert [status for status, _ in answers] == [200] * 6 + [429]
        assert len({json.dumps(body) for _, body in answers[:6]}) == 1
        keys = redis.Redis.from_url(redis_url).keys("transformer-mt:*")
        assert any(b":cache:" in key for key in keys) and any(b":limits" in key for key in keys)
        workers = [pid for pid in os.listdir("/proc") if pid.isdigit() and parent_of(pid) == process.pid]
        assert len(workers) >= 2, workers
        process.send_signal(signal.SIGTERM)  # the supervisor stops its workers, each finishing its requests
        assert process.wait(timeout=60) == 0, process.stdout.read()
    finally:
        process.terminate()
        process.wait(timeout=30)


def parent_of(pid: str) -> int | None:
    with contextlib.suppress(OSError):
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    return None


def test_the_docs_state_the_rules():
    docs = (REPO / "docs" / "serving.md").read_text(encoding="utf-8")
    for sentence in (
        f"{shared.CACHE_TTL_S} s (a day, `CACHE_TTL_S`)",
        f"LRU of {shared.CACHE_SIZE} texts",
        f"at most every {shared.RETRY_S:g} s (`RETRY_S`)",
        f"{shared.TIMEOUT_S} s connect and read",
        f"health check {command.WORKER_HEALTHCHECK_S} s",
        command.WORKERS_ENV,
    ):
        assert sentence in docs, sentence
