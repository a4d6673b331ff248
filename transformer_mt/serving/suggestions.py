"""Suggestions that take effect: `POST /suggest` stored durably, judged by the filters, decided by an admin (or at
once), and answered back as a translation memory.

The store is one SQLite file (`SuggestionStore`) that every server process and the admin command open: WAL mode, so
readers never wait for the writer; `synchronous=FULL`, so a suggestion is on disk before `/suggest` answers and a
`kill -9` loses nothing acknowledged; a busy timeout, so writers from several processes wait their turn instead of
failing. Each thread of each process opens its own connection (FastAPI runs sync work on a thread pool; a
connection is never shared across threads or a fork).

A text matches an accepted suggestion when its `normalise`d form equals the suggestion's `q` normalised: Unicode
NFC, runs of whitespace made one space, stripped; case is kept, since "Save" (a button) and "save" (a verb in a
sentence) translate differently. The newest decision wins when several accepted suggestions share a normalised q.
"""

import dataclasses
import hashlib
import json
import os
import sqlite3
import threading
import time
import unicodedata

from ..quality import weights_sha256
from ..text.glossary import term_used
from ..trust import annotated
from .fields import RequestError
from .suggestion_filter import judge_suggestion


MODES = ("review", "accept")  # review: each suggestion waits for an admin; accept: those that pass the filters count
STATUSES = ("pending", "accepted", "rejected")
DEFAULT_DB = "suggestions.sqlite3"  # in the server's working directory unless --suggestions_db says otherwise
# Suggestions per client (an API key, else an address), refused ones included: a translator correcting by hand makes
# a few a minute at most; more is a script, which should be an import of reviewed data, not /suggest.
PER_HOUR, PER_DAY = 60, 300
BUSY_TIMEOUT_S = 10.0  # how long a writer waits for another process's write before the request fails (500)
SCHEMA = """
CREATE TABLE IF NOT EXISTS suggestions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    source TEXT NOT NULL, target TEXT NOT NULL,
    q TEXT NOT NULL, q_norm TEXT NOT NULL, s TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'accepted', 'rejected')),
    verdict TEXT NOT NULL,          -- 'passed', or the filter's reason for refusing it
    numbers TEXT NOT NULL,          -- JSON: what the filters read (suggestion_filter)
    client TEXT NOT NULL,           -- 'key:' + the API key's SHA-256 prefix, else 'address:' + the client's address
    weights TEXT,                   -- the served model's weights' SHA-256 when it was judged
    created REAL NOT NULL, decided REAL, decided_by TEXT
);
CREATE INDEX IF NOT EXISTS memory ON suggestions (source, target, q_norm) WHERE status = 'accepted';
CREATE INDEX IF NOT EXISTS recent ON suggestions (client, created);
"""
COLUMNS = ("id", "source", "target", "q", "s", "status", "verdict", "numbers", "client", "weights", "created",
           "decided", "decided_by")


def normalise(text: str) -> str:
    return " ".join(unicodedata.normalize("NFC", text).split())


class SuggestionStore:
    """The suggestions table in the SQLite file at `path`, created on first use."""

    def __init__(self, path: str):
        self.path = os.fspath(path)
        self.local = threading.local()
        self.connection().executescript(SCHEMA)

    def connection(self) -> sqlite3.Connection:
        """This thread's connection (a new one after a fork): autocommit, writes in explicit transactions."""
        if getattr(self.local, "pid", None) != os.getpid():
            connection = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
            connection.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            connection.execute("PRAGMA journal_mode = WAL")
            connection.execute("PRAGMA synchronous = FULL")
            connection.row_factory = sqlite3.Row
            self.local.connection, self.local.pid = connection, os.getpid()
        return self.local.connection

    def add(self, row: dict, per_hour: int = PER_HOUR, per_day: int = PER_DAY) -> int:
        """Insert a suggestion (`row`: the table's columns but id, q_norm and created) unless its client is over a
        rate, counted and inserted in one transaction so that processes cannot overtake each other; its id."""
        connection, now = self.connection(), time.time()
        connection.execute("BEGIN IMMEDIATE")
        try:
            check_rate(connection, row["client"], now, per_hour, per_day)
            cursor = connection.execute(
                "INSERT INTO suggestions (source, target, q, q_norm, s, status, verdict, numbers, client, weights, "
                "created, decided, decided_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (row["source"], row["target"], row["q"], normalise(row["q"]), row["s"], row["status"],
                 row["verdict"], json.dumps(row["numbers"]), row["client"], row["weights"], now,
                 now if row["status"] != "pending" else None, row.get("decided_by")))
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        return cursor.lastrowid

    def check_rate(self, client: str, per_hour: int = PER_HOUR, per_day: int = PER_DAY) -> None:
        check_rate(self.connection(), client, time.time(), per_hour, per_day)

    def memory(self, source: str, target: str, texts: list[str]) -> dict[str, str]:
        """normalised text -> the accepted suggestion for it, for those of `texts` that have one."""
        keys = sorted({normalise(text) for text in texts})
        if not keys:
            return {}
        rows = self.connection().execute(
            "SELECT q_norm, s FROM suggestions WHERE status = 'accepted' AND source = ? AND target = ? "
            f"AND q_norm IN ({', '.join('?' * len(keys))}) ORDER BY decided, id", (source, target, *keys)).fetchall()
        return {row["q_norm"]: row["s"] for row in rows}  # the newest decision last, so it wins

    def rows(self, status: str | None = None) -> list[dict]:
        query = f"SELECT {', '.join(COLUMNS)} FROM suggestions" + (" WHERE status = ?" if status else "")
        return [dict(row) for row in self.connection().execute(query + " ORDER BY id", (status,) if status else ())]

    def decide(self, ids: list[int], status: str, by: str = "admin") -> None:
        """Accept or reject suggestions by id; an id that is not in the store is an error naming it (and nothing is
        changed)."""
        if status not in ("accepted", "rejected"):
            raise ValueError(f"a decision is accepted or rejected, got {status!r}")
        connection = self.connection()
        connection.execute("BEGIN IMMEDIATE")
        try:
            known = {row[0] for row in connection.execute(
                f"SELECT id FROM suggestions WHERE id IN ({', '.join('?' * len(ids))})", ids)}
            missing = [number for number in ids if number not in known]
            if missing:
                raise ValueError(f"{self.path} holds no suggestion {', '.join(map(str, missing))}")
            connection.executemany("UPDATE suggestions SET status = ?, decided = ?, decided_by = ? WHERE id = ?",
                                   [(status, time.time(), by, number) for number in ids])
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise

    def accepted_pairs(self, source: str, target: str) -> list[tuple[str, str]]:
        """The accepted (q, s) of a direction, normalised (no tab or newline left), the newest decision per q."""
        rows = self.connection().execute("SELECT q_norm, s FROM suggestions WHERE status = 'accepted' AND source = ? "
                                         "AND target = ? ORDER BY decided, id", (source, target)).fetchall()
        return list({row["q_norm"]: normalise(row["s"]) for row in rows}.items())

    def directions(self) -> list[tuple[str, str]]:
        return [tuple(row) for row in self.connection().execute(
            "SELECT DISTINCT source, target FROM suggestions ORDER BY source, target")]


def check_rate(connection: sqlite3.Connection, client: str, now: float, per_hour: int, per_day: int) -> None:
    for limit, seconds, name in ((per_hour, 3600, "hour"), (per_day, 86400, "day")):
        count = connection.execute("SELECT COUNT(*) FROM suggestions WHERE client = ? AND created > ?",
                                   (client, now - seconds)).fetchone()[0]
        if count >= limit:
            raise RequestError(f"Slowdown: {limit} suggestions per {name}", 429)


def client_of(request, fields: dict) -> str:
    """Who a rate counts against: the API key (as a SHA-256 prefix, never the key itself), else the address."""
    key = fields.get("api_key")
    if isinstance(key, str) and key:
        return "key:" + hashlib.sha256(key.encode()).hexdigest()[:16]
    return "address:" + (request.client.host if request is not None and request.client else "?")


def weights_of(model) -> str | None:
    """The SHA-256 of the served model's model.safetensors (as a calibration records it), or None (an export)."""
    directory = getattr(model.engine.config, "name_or_path", None)
    if directory and os.path.isfile(os.path.join(directory, "model.safetensors")):
        return weights_sha256(directory)
    return None


def passed_over(text: str, remembered: str, options) -> str | None:
    """Why the memory's translation `remembered` of `text` cannot answer a request translated with `options`
    (`TranslationOptions`, the request's own), or None: "min_confidence" when the request asks for a minimum
    confidence (an accepted suggestion has no calibrated confidence, its field is null, so it cannot be held to
    one), "glossary" when a glossary term found in `text` (as the model's sentences are searched:
    `trust.annotated`) is not used in it (`glossary.term_used`, the check a model's translation gets)."""
    if options.min_confidence is not None:
        return "min_confidence"
    if options.glossary and not all(term_used(remembered, target) for _, target in annotated(text, options)[1]):
        return "glossary"
    return None


@dataclasses.dataclass
class Recall:
    """The texts of a request that the memory answers (index -> the accepted suggestion), those it holds but was
    passed over for (index -> `passed_over`'s reason), and how to answer the rest with the model and merge all."""

    asked: object  # fields.TranslateRequest
    found: dict[int, str]
    passed: dict[int, str] = dataclasses.field(default_factory=dict)

    async def answer(self, translated) -> dict:
        """`translated(asked)` (the model's answer) for the texts not found, merged with the memory's: each found
        text's `flags` say `{"memory": true}`, its alternatives are none and its confidence null; a text the
        memory was passed over for has the model's answer, its `flags` saying why (`{"memory_passed_over":
        "glossary"}`)."""
        asked = self.asked
        rest = [text for i, text in enumerate(asked.texts) if i not in self.found]
        answer = await translated(dataclasses.replace(asked, texts=rest, is_list=True)) if rest else {}
        fields = ["translatedText", *(["alternatives"] if asked.alternatives else []),
                  *(["confidence"] if "confidence" in answer else []), "flags"]
        remembered = {"translatedText": None, "alternatives": [], "confidence": None, "flags": {"memory": True}}
        merged, k = {field: [] for field in fields}, 0
        for i in range(len(asked.texts)):
            for field in fields:
                if i in self.found:
                    merged[field].append(self.found[i] if field == "translatedText" else remembered[field])
                else:
                    merged[field].append(answer[field][k] if field in answer else {})
            if i in self.passed:
                merged["flags"][-1] = {**merged["flags"][-1], "memory_passed_over": self.passed[i]}
            k += i not in self.found
        return merged if asked.is_list else {field: value[0] for field, value in merged.items()}


@dataclasses.dataclass
class Suggestions:
    """The server's suggestions: `mode` (MODES), the store, and the rates per client."""

    store: SuggestionStore
    mode: str = "review"
    per_hour: int = PER_HOUR
    per_day: int = PER_DAY

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"--suggestions is one of {', '.join(MODES)}, got {self.mode!r}")
        self.weights: dict[int, str | None] = {}

    def recall(self, model, asked) -> Recall | None:
        """The request's texts found in the memory (plain text only: an HTML text is never matched), each answered
        by it unless the request asks what it cannot give (`passed_over`: a glossary it does not follow, a minimum
        confidence), or None when the memory holds none of them."""
        if asked.format != "text":
            return None
        memory = self.store.memory(model.source, model.target, asked.texts)
        found, passed = {}, {}
        for i, text in enumerate(asked.texts):
            if (remembered := memory.get(normalise(text))) is None:
                continue
            if (reason := passed_over(text, remembered, asked.options)) is None:
                found[i] = remembered
            else:
                passed[i] = reason
        return Recall(asked, found, passed) if found or passed else None

    def suggest(self, model, fields: dict, client: str) -> dict:
        """Judge and store one suggestion (blocking: the model scores it); `{"success": true}` as LibreTranslate
        answers, a 400 naming the filter that refuses it, a 429 over a rate."""
        q, s = fields["q"], fields["s"]
        self.store.check_rate(client, self.per_hour, self.per_day)  # before the model is asked
        reason, numbers = judge_suggestion(model.engine, q, s, model.target)
        if id(model) not in self.weights:
            self.weights[id(model)] = weights_of(model)
        status = "rejected" if reason else "accepted" if self.mode == "accept" else "pending"
        self.store.add({"source": model.source, "target": model.target, "q": q, "s": s, "status": status,
                        "verdict": reason or "passed", "numbers": numbers, "client": client,
                        "weights": self.weights[id(model)], "decided_by": "filter" if reason else
                        "accept mode" if status == "accepted" else None}, self.per_hour, self.per_day)
        if reason:
            raise RequestError(reason)
        return {"success": True}


def suggest_fields(fields: dict, char_limit: int) -> dict:
    """/suggest's fields, checked as LibreTranslate checks them (its words for a missing one), and the API key."""
    for name in ("q", "s", "source", "target"):
        value = fields.get(name)
        if value is None or value == "":
            raise RequestError(f"Invalid request: missing {name} parameter")
        if not isinstance(value, str) or not value.strip():
            raise RequestError(f"Invalid request: {name} must be a non-empty string")
        if len(value) > char_limit:
            raise RequestError(f"Invalid request: {name} ({len(value)}) exceeds text limit ({char_limit})")
    return {"q": fields["q"], "s": fields["s"], "source": fields["source"].strip().lower(),
            "target": fields["target"].strip().lower(), "api_key": fields.get("api_key")}


def suggestions_of(args) -> Suggestions | None:
    """The serve command's suggestions (--suggestions MODE, --suggestions_db PATH), or None when they are off."""
    return Suggestions(SuggestionStore(args.suggestions_db), args.suggestions) if args.suggestions else None


def listing(rows: list[dict]) -> list[str]:
    """One line a suggestion: id, status, direction, when, the filter's verdict, q and s (whitespace collapsed)."""
    return [f"{row['id']}\t{row['status']}\t{row['source']}->{row['target']}\t"
            f"{time.strftime('%Y-%m-%d %H:%M', time.localtime(row['created']))}\t{row['verdict']}\t"
            f"{normalise(row['q'])}\t{normalise(row['s'])}" for row in rows]


def export_tsv(store: SuggestionStore, path: str, source: str | None = None, target: str | None = None) -> int:
    """Write a direction's accepted pairs as training data reads them (a header of the two language codes, then
    `source<TAB>target` a line); the direction may be left out when the store holds one. Returns the pairs written."""
    if source is None or target is None:
        directions = store.directions()
        if len(directions) != 1:
            named = ", ".join(f"{s}->{t}" for s, t in directions) or "none"
            raise ValueError(f"{store.path} holds suggestions for {len(directions)} directions ({named}): give "
                             "--source and --target")
        source, target = directions[0]
    pairs = store.accepted_pairs(source, target)
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"{source}\t{target}\n")
        f.writelines(f"{q}\t{s}\n" for q, s in pairs)
    return len(pairs)


def administer(db: str, action: str, ids: list[int] = (), status: str | None = None, output: str | None = None,
               source: str | None = None, target: str | None = None) -> list[str]:
    """What `transformer-mt-suggestions ACTION` does to the store at `db` (which must exist), as lines to print."""
    if not os.path.isfile(db):
        raise FileNotFoundError(f"no suggestions database at {db} (the server's --suggestions_db)")
    store = SuggestionStore(db)
    if action == "list":
        return listing(store.rows(None if status == "all" else status))
    if action in ("approve", "reject"):
        status = "accepted" if action == "approve" else "rejected"
        store.decide(list(ids), status)
        return [f"{status}: {', '.join(map(str, ids))}"]
    count = export_tsv(store, output, source, target)
    return [f"{output}: {count} accepted pairs"]


__all__ = ["DEFAULT_DB", "MODES", "PER_DAY", "PER_HOUR", "Recall", "SuggestionStore", "Suggestions", "administer",
           "client_of", "export_tsv", "listing", "normalise", "suggest_fields", "suggestions_of", "weights_of"]
