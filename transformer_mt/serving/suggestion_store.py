"""The suggestions' durable store and what the admin command does to it: one SQLite file (`SuggestionStore`) that
every server process and `transformer-mt-suggestions` open, its rates per client, and the listing, decisions and
TSV export of `administer`.

WAL mode, so readers never wait for the writer; `synchronous=FULL`, so a suggestion is on disk before `/suggest`
answers and a `kill -9` loses nothing acknowledged; a busy timeout, so writers from several processes wait their turn
instead of failing. Each thread of each process opens its own connection (FastAPI runs sync work on a thread pool; a
connection is never shared across threads or a fork).

A text matches an accepted suggestion when its `normalise`d form equals the suggestion's `q` normalised: Unicode
NFC, runs of whitespace made one space, stripped; case is kept, since "Save" (a button) and "save" (a verb in a
sentence) translate differently. The newest decision wins when several accepted suggestions share a normalised q.
"""

import json
import os
import sqlite3
import threading
import time
import unicodedata

from .fields import RequestError


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
COLUMNS = (
    "id",
    "source",
    "target",
    "q",
    "s",
    "status",
    "verdict",
    "numbers",
    "client",
    "weights",
    "created",
    "decided",
    "decided_by",
)


def normalise(text: str) -> str:
    return " ".join(unicodedata.normalize("NFC", text).split())


class SuggestionStore:
    """The suggestions table in the SQLite file at `path`, created on first use."""

    def __init__(self, path: str):
        self.path = os.fspath(path)
        self.local = threading.local()
        self.connection().executescript(SCHEMA)

    def connection(self) -> sqlite3.Connection:
        """This thread's connection (a new one after a fork): autocommit, writes in explicit transactions, WAL,
        every commit on disk (`synchronous=FULL`), foreign keys enforced, rows by the store's `row_factory`
        (`sqlite3.Row` unless it says otherwise). The other stores of the server open their files with it."""
        if getattr(self.local, "pid", None) != os.getpid():
            connection = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
            connection.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            connection.execute("PRAGMA journal_mode = WAL")
            connection.execute("PRAGMA synchronous = FULL")
            connection.execute("PRAGMA foreign_keys = ON")
            connection.row_factory = getattr(self, "row_factory", sqlite3.Row)
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
                (
                    row["source"],
                    row["target"],
                    row["q"],
                    normalise(row["q"]),
                    row["s"],
                    row["status"],
                    row["verdict"],
                    json.dumps(row["numbers"]),
                    row["client"],
                    row["weights"],
                    now,
                    now if row["status"] != "pending" else None,
                    row.get("decided_by"),
                ),
            )
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
        rows = (
            self.connection()
            .execute(
                "SELECT q_norm, s FROM suggestions WHERE status = 'accepted' AND source = ? AND target = ? "
                f"AND q_norm IN ({', '.join('?' * len(keys))}) ORDER BY decided, id",
                (source, target, *keys),
            )
            .fetchall()
        )
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
            known = {
                row[0]
                for row in connection.execute(
                    f"SELECT id FROM suggestions WHERE id IN ({', '.join('?' * len(ids))})", ids
                )
            }
            missing = [number for number in ids if number not in known]
            if missing:
                raise ValueError(f"{self.path} holds no suggestion {', '.join(map(str, missing))}")
            connection.executemany(
                "UPDATE suggestions SET status = ?, decided = ?, decided_by = ? WHERE id = ?",
                [(status, time.time(), by, number) for number in ids],
            )
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise

    def accepted_pairs(self, source: str, target: str) -> list[tuple[str, str]]:
        """The accepted (q, s) of a direction, normalised (no tab or newline left), the newest decision per q."""
        rows = (
            self.connection()
            .execute(
                "SELECT q_norm, s FROM suggestions WHERE status = 'accepted' AND source = ? "
                "AND target = ? ORDER BY decided, id",
                (source, target),
            )
            .fetchall()
        )
        return list({row["q_norm"]: normalise(row["s"]) for row in rows}.items())

    def directions(self) -> list[tuple[str, str]]:
        return [
            tuple(row)
            for row in self.connection().execute(
                "SELECT DISTINCT source, target FROM suggestions ORDER BY source, target"
            )
        ]


def check_rate(connection: sqlite3.Connection, client: str, now: float, per_hour: int, per_day: int) -> None:
    for limit, seconds, name in ((per_hour, 3600, "hour"), (per_day, 86400, "day")):
        count = connection.execute(
            "SELECT COUNT(*) FROM suggestions WHERE client = ? AND created > ?", (client, now - seconds)
        ).fetchone()[0]
        if count >= limit:
            raise RequestError(f"Slowdown: {limit} suggestions per {name}", 429)


def listing(rows: list[dict]) -> list[str]:
    """One line a suggestion: id, status, direction, when, the filter's verdict, q and s (whitespace collapsed)."""
    return [
        f"{row['id']}\t{row['status']}\t{row['source']}->{row['target']}\t"
        f"{time.strftime('%Y-%m-%d %H:%M', time.localtime(row['created']))}\t{row['verdict']}\t"
        f"{normalise(row['q'])}\t{normalise(row['s'])}"
        for row in rows
    ]


def export_tsv(store: SuggestionStore, path: str, source: str | None = None, target: str | None = None) -> int:
    """Write a direction's accepted pairs as training data reads them (a header of the two language codes, then
    `source<TAB>target` a line); the direction may be left out when the store holds one. Returns the pairs written."""
    if source is None or target is None:
        directions = store.directions()
        if len(directions) != 1:
            named = ", ".join(f"{s}->{t}" for s, t in directions) or "none"
            raise ValueError(
                f"{store.path} holds suggestions for {len(directions)} directions ({named}): give "
                "--source and --target"
            )
        source, target = directions[0]
    pairs = store.accepted_pairs(source, target)
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"{source}\t{target}\n")
        f.writelines(f"{q}\t{s}\n" for q, s in pairs)
    return len(pairs)


def administer(
    db: str,
    action: str,
    ids: list[int] = (),
    status: str | None = None,
    output: str | None = None,
    source: str | None = None,
    target: str | None = None,
) -> list[str]:
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


__all__ = [
    "BUSY_TIMEOUT_S",
    "COLUMNS",
    "DEFAULT_DB",
    "PER_DAY",
    "PER_HOUR",
    "STATUSES",
    "SuggestionStore",
    "administer",
    "check_rate",
    "export_tsv",
    "listing",
    "normalise",
]
