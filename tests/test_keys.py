"""API keys with quotas (transformer_mt.serving.keys, transformer-mt-keys): the store keeps hashes only and survives
a reopen; the command adds, lists, removes, imports and reports; the server holds each key to its requests per
minute, characters per request, day quota (LibreTranslate's 400/429 on its routes, DeepL's 413/456 on DeepL's) and
origin, a new UTC day starts the quota again, Redis shares the counts between processes, and two worker processes
sharing Redis hold two keys to their own quotas."""

import sqlite3
import time

import pytest

from .utils import require


require("fastapi", "the server needs the [serve] extra: pip install -e '.[serve]'")
require("redis", "--redis needs the [serve] extra: pip install -e '.[serve]'")
from fastapi.testclient import TestClient  # noqa: E402

from transformer_mt.commands import serve as serve_command  # noqa: E402
from transformer_mt.commands.keys import parse_args, run  # noqa: E402
from transformer_mt.experiments.benchmarks.keys_quota import keys_quota_test  # noqa: E402
from transformer_mt.scripts import keys as script  # noqa: E402
from transformer_mt.serving import Limits, ServedModel, create_app  # noqa: E402
from transformer_mt.serving.keys import KeyStore, hash_of, next_midnight, utc_day  # noqa: E402
from transformer_mt.serving.uploads import FileStore  # noqa: E402

from . import test_serving_shared as shared_tests  # noqa: E402
from .test_serving import FakeEngine  # noqa: E402


FIELDS = {"source": "en", "target": "de"}
redis_server, redis_url, free_port = shared_tests.redis_server, shared_tests.redis_url, shared_tests.free_port
DAY = 1_796_083_200.0  # 2026-12-01 00:00 UTC


def keys_app(db, redis=None, api_keys=None):
    models = [ServedModel(FakeEngine("en", "de"), "en", "de")]
    return create_app(models, Limits(api_keys=api_keys, keys_db=str(db)), redis=redis)


def keys(run_lines, db, *argv) -> list[str]:
    return run_lines(parse_args([*argv, "--db", str(db)]))


def test_the_store_keeps_hashes_only_and_survives_a_reopen(tmp_path):
    db = tmp_path / "keys.sqlite3"
    store = KeyStore(db)
    record, key = store.add("weblate", req_limit=60, char_limit=500, day_limit=10_000, origin="https://a.example")
    assert (record["id"], record["name"], record["req_limit"], record["char_limit"], record["day_limit"]) == (
        1,
        "weblate",
        60,
        500,
        10_000,
    )
    assert record["origin"] == "https://a.example" and len(key) == 32
    assert store.spend(record, 120, "2026-12-01") == 120
    del store  # its connections stay open: what another process reads is on disk (WAL) already
    reopened = KeyStore(db)
    assert reopened.find(key) == record and reopened.find(key + "x") is None
    assert reopened.used(1, "2026-12-01") == 120 and reopened.used(1, "2026-12-02") == 0
    with sqlite3.connect(db) as connection:
        assert connection.execute("SELECT hash FROM keys").fetchall() == [(hash_of(key),)]
    for path in tmp_path.iterdir():  # the database, its WAL and its shared memory
        assert key.encode() not in path.read_bytes(), path.name
    with pytest.raises(ValueError, match=r"day_limit must be an integer >= 0 \(0: no limit\), got -1"):
        reopened.add("bad", day_limit=-1)
    with pytest.raises(ValueError, match="already holds that key"):
        reopened.add("again", key=key)
    assert (utc_day(DAY - 1), utc_day(DAY), next_midnight(DAY - 1), next_midnight(DAY)) == (
        "2026-11-30",
        "2026-12-01",
        DAY,
        DAY + 86400,
    )


def test_the_command_adds_lists_imports_reports_and_removes(tmp_path, capsys):
    db = tmp_path / "keys.sqlite3"
    [added] = keys(run, db, "add", "weblate", "--req_limit", "60", "--day_limit", "1000")
    key = added.rsplit(" ", 1)[1]
    assert added == f"key 1 (weblate), shown this once: {key}"
    (tmp_path / "api_keys.txt").write_text("k1\n# a comment\n\nk2\n", encoding="utf-8")
    assert keys(run, db, "import", str(tmp_path / "api_keys.txt")) == [
        f"{tmp_path / 'api_keys.txt'}: 2 keys added, 0 already held"
    ]
    assert keys(run, db, "import", str(tmp_path / "api_keys.txt"))[0].endswith(": 0 keys added, 2 already held")
    listed = keys(run, db, "list")
    assert listed[0] == "id\tname\treq_limit\tchar_limit\tday_limit\torigin\tcreated"
    assert [line.split("\t")[:6] for line in listed[1:]] == [
        ["1", "weblate", "60", "0", "1000", "-"],
        ["2", "imported from api_keys.txt", "0", "0", "0", "-"],
        ["3", "imported from api_keys.txt", "0", "0", "0", "-"],
    ]
    assert all(line.endswith(" UTC") for line in listed[1:])
    assert not any(secret in "\n".join(listed) for secret in (key, "k1", "k2", hash_of(key)))
    KeyStore(db).spend(KeyStore(db).find("k1"), 7, "2026-12-01")
    assert keys(run, db, "usage") == [
        "day\tid\tname\trequests\tcharacters\tday_limit",
        "2026-12-01\t2\timported from api_keys.txt\t1\t7\t0",
    ]
    assert keys(run, db, "usage", "--day", "2026-12-02") == ["day\tid\tname\trequests\tcharacters\tday_limit"]
    assert keys(run, db, "remove", "2") == ["removed key 2 (imported from api_keys.txt)"]
    assert len(keys(run, db, "list")) == 3 and keys(run, db, "usage") == [keys(run, db, "usage")[0]]
    with pytest.raises(ValueError, match="holds no key 2"):
        keys(run, db, "remove", "2")
    with pytest.raises(ValueError, match=r"--day must be a UTC date YYYY-MM-DD, got '12/01'"):
        keys(run, db, "usage", "--day", "12/01")
    with pytest.raises(FileNotFoundError, match="no keys database at"):
        keys(run, tmp_path / "none.sqlite3", "list")
    capsys.readouterr()


def test_the_script_prints_the_key_once_and_exits_2_on_an_expected_error(tmp_path, capsys):
    db = str(tmp_path / "keys.sqlite3")
    script.main(["add", "page", "--db", db])
    printed = capsys.readouterr().out
    key = printed.split()[-1]
    assert printed.count(key) == 1 and KeyStore(db).find(key)["name"] == "page"
    script.main(["list", "--db", db])
    assert key not in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit:
        script.main(["remove", "9", "--db", db])
    assert (exit.value.code, capsys.readouterr().err) == (2, f"error: {db} holds no key 9\n")


def test_each_key_is_held_to_its_limits_on_libretranslates_routes(tmp_path):
    db = tmp_path / "keys.sqlite3"
    store = KeyStore(db)
    _, minute = store.add("minute", req_limit=2)
    _, chars = store.add("chars", char_limit=5)
    _, day = store.add("day", day_limit=10)
    _, free = store.add("free")
    _, page = store.add("page", origin="https://a.example")
    with TestClient(keys_app(db, api_keys=frozenset({"static"}))) as client:
        client.app.state.service.keys.clock = lambda: DAY + 3600

        def post(key, q="Hi.", route="/translate", **headers):
            answer = client.post(route, json={**FIELDS, "q": q, "api_key": key}, headers=headers)
            return answer.status_code, answer.json()

        assert [post(minute)[0] for _ in range(3)] == [200, 200, 429]
        assert post(minute) == (429, {"error": "Slowdown: 2 per minute"})
        assert post(chars, "Hello") == (200, {"translatedText": "«Hello»"})
        assert post(chars, ["Hel", "lo!"]) == (400, {"error": "Invalid request: request (6) exceeds text limit (5)"})
        assert post(chars, "Hello!", "/detect")[0] == 400
        assert post(day, "Hello") == (200, {"translatedText": "«Hello»"})
        assert post(day, "World!") == (
            429,
            {"error": "Slowdown: 10 characters per day (5 left today, 6 asked; the quota starts again at 00:00 UTC)"},
        )
        assert post(day, "Hi.")[0] == 200 and post(day, "Hi.")[0] == 429  # 8 of 10 used: 3 more is over
        assert [post(free, "x" * 1000)[0] for _ in range(5)] == [200] * 5
        assert [post("static", "x" * 1000)[0] for _ in range(5)] == [200] * 5
        assert post("nope") == (403, {"error": "Invalid API key"}) and post(None)[0] == post([free])[0] == 403
        assert post(page, origin="https://a.example")[0] == 200
        assert post(page, origin="https://b.example") == (
            403,
            {"error": "Origin 'https://b.example' may not use this API key: it is for https://a.example"},
        )
        assert post(page)[0] == 403
        assert client.get("/frontend/settings").json()["keyRequired"] is True
        client.app.state.service.keys.clock = lambda: DAY + 86400  # 00:00 UTC the next day: the quota starts again
        assert post(day, "World!")[0] == 200
    assert KeyStore(db).used(3, "2026-12-01") == 8 and KeyStore(db).used(3, "2026-12-02") == 6
    assert KeyStore(db).used(4, "2026-12-01") == 5000


def test_deepls_routes_answer_413_and_456_and_usage_reads_the_key(tmp_path):
    db = tmp_path / "keys.sqlite3"
    _, key = KeyStore(db).add("deepl", char_limit=8, day_limit=12)
    app = keys_app(db)
    app.state.deepl_db = str(tmp_path / "deepl.sqlite3")  # the DeepL routes' store, out of the working directory
    with TestClient(app) as client:
        client.app.state.service.keys.clock = lambda: DAY

        def translate(*texts):
            answer = client.post(
                "/v2/translate",
                json={"text": list(texts), "target_lang": "DE"},
                headers={"Authorization": f"DeepL-Auth-Key {key}"},
            )
            return answer.status_code, answer.json()

        def usage():
            return client.get("/v2/usage", headers={"Authorization": f"DeepL-Auth-Key {key}"}).json()

        assert usage() == {"character_count": 0, "character_limit": 12}
        assert translate("Hello", "Bye")[0] == 200
        assert translate("Hello, you") == (413, {"message": "Request Entity Too Large: 10 characters (at most 8)"})
        assert translate("Hello") == (456, {"message": "Quota exceeded"})
        assert usage() == {"character_count": 8, "character_limit": 12}
        assert translate("Hey") == (200, {"translations": [{"detected_source_language": "EN", "text": "«Hey»"}]})
        client.app.state.service.keys.clock = lambda: DAY + 86400
        assert usage() == {"character_count": 0, "character_limit": 12}
        no_key = client.post("/v2/translate", json={"text": ["Hi"], "target_lang": "DE"})
        assert (no_key.status_code, no_key.json()) == (403, {"message": "Invalid API key"})


def test_the_server_refuses_a_missing_keys_db_and_suggestions_accept_takes_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="--keys_db '/nowhere/keys.sqlite3' does not exist"):
        keys_app("/nowhere/keys.sqlite3")
    args = serve_command.parse_args(["model", "--suggestions", "accept", "--keys_db", str(tmp_path / "k.sqlite3")])
    assert (args.suggestions, args.keys_db) == ("accept", str(tmp_path / "k.sqlite3"))


def test_two_processes_share_a_keys_counts_through_redis(tmp_path, redis_url):
    db = tmp_path / "keys.sqlite3"
    _, key = KeyStore(db).add("shared", req_limit=3, day_limit=10)
    now = time.time()
    with TestClient(keys_app(db, redis_url)) as one, TestClient(keys_app(db, redis_url)) as other:
        for client in (one, other):  # a time Redis takes too: the day's count expires at the next midnight UTC
            client.app.state.service.keys.clock = lambda: now

        def post(client, q):
            return client.post("/translate", json={**FIELDS, "q": q, "api_key": key}).status_code

        assert [post(one, "Hello"), post(other, "Hey"), post(one, "World!")] == [200, 200, 429]
        assert post(other, "Yo") == 429  # the third request of the minute was the refused one: 3 per minute
    assert KeyStore(db).usage() == [
        {"day": utc_day(now), "id": 1, "name": "shared", "requests": 2, "characters": 8, "day_limit": 10}
    ]


def test_while_redis_is_down_the_day_is_counted_and_checked_in_the_file(tmp_path, caplog):
    db = tmp_path / "keys.sqlite3"
    _, key = KeyStore(db).add("alone", req_limit=2, day_limit=10)
    with TestClient(keys_app(db, f"redis://127.0.0.1:{free_port()}/0")) as client:  # nothing listens there

        def post(q):
            answer = client.post("/translate", json={**FIELDS, "q": q, "api_key": key})
            return answer.status_code, answer.json()

        assert post("Hello")[0] == 200
        assert post("World!")[1]["error"].startswith("Slowdown: 10 characters per day (5 left today, 6 asked;")
        assert post("Hi") == (429, {"error": "Slowdown: 2 per minute"})  # counted in this process meanwhile
    assert [row["characters"] for row in KeyStore(db).usage()] == [5]
    assert "does not answer" in caplog.text


@pytest.mark.slow  # a server of two worker processes and Redis
def test_two_workers_sharing_redis_hold_two_keys_to_their_own_quotas(short_translator):
    require("aiohttp", "the load test's clients need the [test] extra")
    results = keys_quota_test(
        str(short_translator[0]), ["Hello there."], "en", "de", {"small": 60, "large": 150}, 20, 4, "transformers"
    )
    assert {
        name: (key["statuses"], key["admitted_characters"], key["held"]) for name, key in results["keys"].items()
    } == {
        "small": ({"200": 5, "429": 15}, 60, True),
        "large": ({"200": 12, "429": 8}, 144, True),
        "open": ({"200": 20}, 240, True),
    }


def test_an_uploaded_file_spends_its_keys_day_quota(tmp_path):
    db = tmp_path / "keys.sqlite3"
    _, key = KeyStore(db).add("files", char_limit=5, day_limit=30)  # a file's text is not held to char_limit
    models = [ServedModel(FakeEngine("en", "de"), "en", "de")]
    app = create_app(models, Limits(keys_db=str(db)), files=FileStore(str(tmp_path / "files")))
    with TestClient(app) as client:
        client.app.state.service.keys.clock = lambda: DAY

        def upload(text):
            files = {"file": ("a.txt", text.encode())}
            answer = client.post("/translate_file", data={**FIELDS, "api_key": key}, files=files)
            return answer.status_code, answer.json()

        assert upload("Open the file.\nClose it.")[0] == 200  # 23 characters of 30
        assert upload("Open the file.") == (
            429,
            {"error": "Slowdown: 30 characters per day (7 left today, 14 asked; the quota starts again at 00:00 UTC)"},
        )
    assert KeyStore(db).used(1, "2026-12-01") == 23
