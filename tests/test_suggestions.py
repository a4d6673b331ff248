"""Suggestions that take effect: LibreTranslate's /suggest judged by the filters, stored in SQLite, decided by the
admin command or at once, answered back as a translation memory by every process on the same file, and kept
through a kill -9."""

import contextlib
import json
import math
import sqlite3
import urllib.request

import pytest

from transformer_mt.engines.pair_scores import PairScore
from transformer_mt.quality import Calibration

from .utils import require, serve_process


require("fastapi", "the server needs the [serve] extra: pip install -e '.[serve]'")
from fastapi.testclient import TestClient  # noqa: E402

from transformer_mt.scripts.suggestions import main as suggestions_command  # noqa: E402
from transformer_mt.serving import Limits, ServedModel, create_app  # noqa: E402
from transformer_mt.serving.suggestion_filter import judge_suggestion  # noqa: E402
from transformer_mt.serving.suggestion_store import SuggestionStore, normalise  # noqa: E402
from transformer_mt.serving.suggestions import Suggestions  # noqa: E402

from .test_serving import FakeEngine  # noqa: E402


class ScoringEngine(FakeEngine):
    """FakeEngine's «sentence»; a pair scores -0.5 per token, or -9 when its target holds "zzz" (the model finding
    it unlikely). Records the sentences it translated."""

    def __init__(self):
        super().__init__("en", "de")
        self.translated = []

    def translate_sentences(self, sentences, options, names=None, target_prefix=None):
        self.translated += sentences
        return super().translate_sentences(sentences, options, names, target_prefix)

    def score_pairs(self, sources, targets, batch_size=16, length_penalty=None):
        per_token = [-9.0 if "zzz" in target else -0.5 for target in targets]
        return [PairScore(value * 4, 4, value, value) for value in per_token]


class WordTokenizer:
    """Whitespace words as token ids: what the calibration's features count."""

    is_fast = True

    def __call__(self, texts):
        return {"input_ids": [text.split() for text in texts]}


class CalibratedEngine(ScoringEngine):
    """ScoringEngine with a calibration: its best hypothesis (score 0) has confidence sigmoid(1), 0.73."""

    tokenizer = WordTokenizer()
    calibration = Calibration("0" * 64, 50.0, ("score",), (0.0,), (1.0,), (2.0,), 1.0)


CONFIDENCE = 1 / (1 + math.exp(-1))  # CalibratedEngine's


Q, S = "Open the file.", "Öffnen Sie bitte die Datei."


def suggestion_app(db, mode="review", keys=None, **rates):
    engine = ScoringEngine()
    suggestions = Suggestions(SuggestionStore(db), mode, **rates) if mode else None
    app = create_app([ServedModel(engine, "en", "de")], Limits(api_keys=keys), suggestions=suggestions)
    return app, engine


def translate(client, q, **fields):
    return client.post("/translate", json={"q": q, "source": "en", "target": "de", **fields}).json()


def test_off_by_default_answers_as_libretranslate_does(tmp_path):
    app, _ = suggestion_app(tmp_path / "db", mode=None)
    with TestClient(app) as client:
        answer = client.post("/suggest", json={"q": Q, "s": S, "source": "en", "target": "de"})
        assert answer.status_code == 403
        assert answer.json() == {"error": "Suggestions are disabled on this server."}
        assert client.get("/frontend/settings").json()["suggestions"] is False
    assert not (tmp_path / "db").exists()


def test_review_a_pending_suggestion_changes_nothing_until_approved(tmp_path):
    db = tmp_path / "suggestions.sqlite3"
    app, engine = suggestion_app(db)
    with TestClient(app) as client:
        assert client.get("/frontend/settings").json()["suggestions"] is True
        answer = client.post("/suggest", data={"q": Q, "s": S, "source": "en", "target": "de"})  # a form, as its page
        assert answer.status_code == 200 and answer.json() == {"success": True}
        assert translate(client, Q) == {"translatedText": f"«{Q}»"}  # pending: the model answers
        [row] = SuggestionStore(db).rows("pending")
        assert (row["q"], row["s"], row["verdict"], row["client"]) == (Q, S, "passed", "address:testclient")
        assert json.loads(row["numbers"])["margin"] == 0.0
        suggestions_command(["approve", str(row["id"]), "--db", str(db)])
        engine.translated.clear()
        # the memory answers the text (normalised: spaces), the model the other one
        answer = translate(client, ["  Open   the file.\n", "Close it."])
        assert answer == {"translatedText": [S, "«Close it.»"], "flags": [{"memory": True}, {}]}
        assert engine.translated == ["Close it."]
        assert translate(client, Q, alternatives=1) == {
            "translatedText": S,
            "alternatives": [],
            "flags": {"memory": True},
        }
        assert translate(client, "open the file.") == {"translatedText": "«open the file.»"}  # case is kept
        assert (
            translate(client, "<p>Open the file.</p>", format="html")["translatedText"] == "<p>«Open the file.»</p>"
        )  # an HTML text is never matched


def test_accept_mode_takes_a_suggestion_at_once_and_counts_per_key(tmp_path):
    app, _ = suggestion_app(tmp_path / "db", "accept", frozenset({"k1"}), per_hour=2)
    fields = {"q": Q, "s": S, "source": "en", "target": "de", "api_key": "k1"}
    with TestClient(app) as client:
        assert client.post("/suggest", json={**fields, "api_key": "nope"}).status_code == 403
        assert client.post("/suggest", json=fields).json() == {"success": True}
        assert translate(client, Q, api_key="k1") == {"translatedText": S, "flags": {"memory": True}}
        assert client.post("/suggest", json={**fields, "s": "zzz zzz"}).status_code == 400  # counts too
        answer = client.post("/suggest", json=fields)
        assert answer.status_code == 429 and answer.json() == {"error": "Slowdown: 2 suggestions per hour"}
    rows = SuggestionStore(tmp_path / "db").rows()
    assert [row["status"] for row in rows] == ["accepted", "rejected"]
    assert rows[0]["client"].startswith("key:") and "k1" not in rows[0]["client"]


@contextlib.contextmanager
def remembering(db):
    """A client of a server over a CalibratedEngine whose memory holds S for Q, and the engine."""
    engine = CalibratedEngine()
    suggestions = Suggestions(SuggestionStore(db), "accept")
    app = create_app([ServedModel(engine, "en", "de")], Limits(api_keys=frozenset({"k"})), suggestions=suggestions)
    with TestClient(app) as client:
        assert client.post(
            "/suggest", json={"q": Q, "s": S, "source": "en", "target": "de", "api_key": "k"}
        ).json() == {"success": True}
        yield client, engine


def test_the_memory_answers_only_where_it_follows_the_requests_glossary(tmp_path):
    with remembering(tmp_path / "db") as (client, engine):
        remembered = {"translatedText": S, "flags": {"memory": True}}
        # a glossary the memory's translation follows, or none of whose terms the text holds: the memory answers
        assert translate(client, Q, api_key="k", glossary={"file": "Datei"}) == remembered
        assert translate(client, Q, api_key="k", glossary={"window": "Fenster"}) == remembered
        assert translate(client, Q, api_key="k", glossary={"File": "Datei"}, glossary_ignore_case=True) == remembered
        engine.translated.clear()
        # a term it does not use: the model translates the text, with the glossary, and the answer says why
        answer = translate(
            client, [Q, "Close it."], api_key="k", glossary={"File": "Akte"}, glossary_ignore_case=True, guards=False
        )
        assert answer == {
            "translatedText": [f"«{Q}»", "«Close it.»"],
            "confidence": [pytest.approx(CONFIDENCE)] * 2,
            "flags": [{"terms_missed": ["Akte"], "memory_passed_over": "glossary"}, {}],
        }
        assert engine.translated == [Q, "Close it."]


def test_the_memory_answers_no_request_for_a_minimum_confidence(tmp_path):
    with remembering(tmp_path / "db") as (client, _):
        # a minimum confidence: a memory entry has no calibrated confidence (its field is null) to hold to it
        answer = translate(client, Q, api_key="k", min_confidence=0.9)
        assert answer == {
            "translatedText": Q,
            "confidence": pytest.approx(CONFIDENCE),
            "flags": {"abstained": True, "memory_passed_over": "min_confidence"},
        }
        assert translate(client, Q, api_key="k", min_confidence=0.5) == {
            "translatedText": f"«{Q}»",
            "confidence": pytest.approx(CONFIDENCE),
            "flags": {"memory_passed_over": "min_confidence"},
        }


@pytest.mark.parametrize(
    "s, reason",
    [
        (
            "Öffnen Sie die Datei zzz in einem neuen Tab.",
            "s is unlikely as a translation of q: -9.00 per token against "
            "-0.50 for the model's own translation (at most 3.0 below)",
        ),
        ("Ouvrez le fichier dans un nouvel onglet.", "s is not German (detected: fr)"),
        ("Open the file in a new tab, please.", "s is not German (detected: en)"),
        (
            "Öffnen Sie die Datei. Öffnen Sie die Datei.",
            "s repeats itself ('öffnen sie die datei.' twice) where q does not",
        ),
        ("Öffnen Sie die Datei in", "s stops before the end of the sentence (q ends with .!?: and s does not)"),
        (
            "Öffnen",
            "s is 0.43 times as long as q; a translation is 0.7-2.0 times as long (counting 10 more characters "
            "on each side)",
        ),
    ],
)
def test_garbage_is_refused_by_name_and_kept_as_rejected(tmp_path, s, reason):
    app, _ = suggestion_app(tmp_path / "db", "accept", frozenset({"k"}))
    with TestClient(app) as client:
        answer = client.post(
            "/suggest",
            json={"q": "Open the file in a new tab.", "s": s, "source": "en", "target": "de", "api_key": "k"},
        )
        assert answer.status_code == 400 and answer.json() == {"error": reason}
        assert "flags" not in translate(client, "Open the file in a new tab.", api_key="k")
    [row] = SuggestionStore(tmp_path / "db").rows()
    assert (row["status"], row["verdict"], row["decided_by"]) == ("rejected", reason, "filter")


@pytest.mark.parametrize(
    "fields, status, message",
    [
        ({"s": S, "source": "en", "target": "de"}, 400, "Invalid request: missing q parameter"),
        ({"q": Q, "source": "en", "target": "de"}, 400, "Invalid request: missing s parameter"),
        ({"q": Q, "s": S, "target": "de"}, 400, "Invalid request: missing source parameter"),
        ({"q": Q, "s": S, "source": "en", "target": "fr"}, 400, "fr is not supported"),
        ({"q": Q, "s": ["a"], "source": "en", "target": "de"}, 400, "Invalid request: s must be a non-empty string"),
    ],
)
def test_bad_fields_are_named(tmp_path, fields, status, message):
    app, _ = suggestion_app(tmp_path / "db")
    with TestClient(app) as client:
        answer = client.post("/suggest", json=fields)
        assert answer.status_code == status and answer.json() == {"error": message}


def test_two_servers_on_one_file_one_accepts_the_other_answers(tmp_path):
    first, _ = suggestion_app(tmp_path / "db", "accept", frozenset({"k"}))
    second, engine = suggestion_app(tmp_path / "db", "accept", frozenset({"k"}))
    with TestClient(first) as one, TestClient(second) as other:
        assert translate(other, Q, api_key="k") == {"translatedText": f"«{Q}»"}
        assert one.post("/suggest", json={"q": Q, "s": S, "source": "en", "target": "de", "api_key": "k"}).json() == {
            "success": True
        }
        assert translate(other, Q, api_key="k") == {"translatedText": S, "flags": {"memory": True}}
    with sqlite3.connect(tmp_path / "db") as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_the_admin_command_lists_approves_rejects_and_exports(tmp_path, capsys):
    store = SuggestionStore(tmp_path / "db")
    for q, s in ((Q, S), ("Close it.", "Schließen."), ("Save\tit.", "Speichern\nSie es.")):
        store.add(
            {
                "source": "en",
                "target": "de",
                "q": q,
                "s": s,
                "status": "pending",
                "verdict": "passed",
                "numbers": {},
                "client": "address:x",
                "weights": None,
            }
        )
    db = ["--db", str(tmp_path / "db")]
    suggestions_command(["list", *db])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[:3] for line in lines] == [
        ["1", "pending", "en->de"],
        ["2", "pending", "en->de"],
        ["3", "pending", "en->de"],
    ]
    assert lines[2].split("\t")[-2:] == ["Save it.", "Speichern Sie es."]
    suggestions_command(["approve", "1", "3", *db])
    suggestions_command(["reject", "2", *db])
    assert capsys.readouterr().out == "accepted: 1, 3\nrejected: 2\n"
    suggestions_command(["list", "--status", "rejected", *db])
    assert capsys.readouterr().out.startswith("2\trejected\t")
    suggestions_command(["export", str(tmp_path / "accepted.tsv"), *db])
    assert capsys.readouterr().out == f"{tmp_path / 'accepted.tsv'}: 2 accepted pairs\n"
    assert (tmp_path / "accepted.tsv").read_text(
        encoding="utf-8"
    ) == f"en\tde\n{Q}\t{S}\nSave it.\tSpeichern Sie es.\n"
    from transformer_mt.data import load_parallel_data

    assert load_parallel_data({"train": str(tmp_path / "accepted.tsv")}, "en", "de")["train"]["de"][0] == S
    with pytest.raises(SystemExit) as stopped:
        suggestions_command(["approve", "9", *db])
    assert stopped.value.code == 2 and capsys.readouterr().err == f"error: {tmp_path / 'db'} holds no suggestion 9\n"


def test_normalise_keeps_case_and_folds_unicode_and_spaces():
    assert normalise(" Cafe\u0301\t au  lait\n") == "Café au lait" and normalise("SAVE") != normalise("save")


def test_the_filter_reads_a_real_model(saved_tiny_model):
    from transformer_mt.engines import load_engine

    engine = load_engine(str(saved_tiny_model), "transformers")
    reason, numbers = judge_suggestion(engine, "The cat sat.", "Die Katze saß auf der Matte.", "en", "de")
    assert numbers["margin"] == pytest.approx(numbers["score"] - numbers["own_score"], abs=1e-3)
    assert reason is None or reason.startswith("s is unlikely")


@pytest.mark.slow  # a server process, killed and started again
def test_a_kill_9_after_an_acknowledged_suggestion_loses_nothing(saved_tiny_model, tmp_path):
    (tmp_path / "keys.txt").write_text("k\n", encoding="utf-8")
    db = tmp_path / "suggestions.sqlite3"
    args = (
        str(saved_tiny_model),
        "--engine",
        "transformers",
        "--suggestions",
        "accept",
        "--api_keys",
        str(tmp_path / "keys.txt"),
        "--suggestions_db",
        str(db),
    )
    fields = {"q": "The cat sat.", "s": "Die Katze saß auf der Matte.", "source": "en", "target": "de", "api_key": "k"}
    with server(*args) as (process, url):
        assert post(url + "/suggest", fields) == {"success": True}
        process.kill()  # SIGKILL: no shutdown, no checkpoint of the WAL
        process.wait(timeout=30)
    [row] = SuggestionStore(db).rows("accepted")
    assert (row["q"], row["s"]) == (fields["q"], fields["s"]) and len(row["weights"]) == 64
    with server(*args) as (_, url):
        answer = post(url + "/translate", {"q": "The cat sat.", "source": "en", "target": "de", "api_key": "k"})
    assert answer == {"translatedText": fields["s"], "flags": {"memory": True}}


server = serve_process  # tests.utils': serve.py on a free loopback port


def post(url: str, fields: dict) -> dict:
    request = urllib.request.Request(url, json.dumps(fields).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.loads(answer.read())
