"""API keys with quotas (the serve command's `--keys_db`, `transformer-mt-keys`): one SQLite file (`KeyStore`) of
keys, each stored as its SHA-256 (the key itself is shown once, by `add`), with LibreTranslate's requests per minute
and characters per request, a quota of characters per UTC day and an optional allowed `Origin`; and what the server
does with them (`KeyGate`).

The file is opened as the suggestions' store is (`SuggestionStore.connection`: WAL, `synchronous=FULL`, a busy
timeout, a connection per thread and process), so a key added or a day's count written survives a `kill -9` and a
power cut, and every process on the machine sees the same counts. The requests per minute are `shared.ClientLimit`'s
moving window (in Redis with `--redis`, per process without); the day's characters are counted in Redis (INCRBY,
expiring the next midnight UTC) with `--redis` and in the SQLite file otherwise (checked and added in one
transaction). A day is a UTC date: every count starts again at 00:00 UTC, whatever the server's time zone.
"""

import contextlib
import datetime
import hashlib
import os
import secrets
import threading
import time

from .fields import RequestError
from .shared import PREFIX, ClientLimit, SharedStore, StoreDown
from .suggestion_store import SuggestionStore


SCHEMA = """
CREATE TABLE IF NOT EXISTS keys (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    hash TEXT NOT NULL UNIQUE,          -- the key's SHA-256 (hex): the key itself is never stored
    name TEXT NOT NULL,
    req_limit INTEGER NOT NULL,         -- requests per minute; 0: none
    char_limit INTEGER NOT NULL,        -- characters per request; 0: the server's --char_limit only
    day_limit INTEGER NOT NULL,         -- characters per UTC day; 0: none
    origin TEXT,                        -- the only Origin header its requests may carry; NULL: any
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS usage (
    key_id INTEGER NOT NULL REFERENCES keys (id) ON DELETE CASCADE,
    day TEXT NOT NULL,                  -- the UTC date, YYYY-MM-DD
    requests INTEGER NOT NULL, characters INTEGER NOT NULL,
    PRIMARY KEY (key_id, day)
);
"""
LIMITS = ("req_limit", "char_limit", "day_limit")
COLUMNS = ("id", "name", *LIMITS, "origin", "created")


class QuotaSpent(Exception):
    """A request's characters would take its key over the day's quota; args: the quota, the characters left."""


def hash_of(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def utc_day(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%Y-%m-%d")


def day_count(key_id: int, day: str) -> str:
    """The Redis key of a key's characters on a UTC day."""
    return f"{PREFIX}:keys:{key_id}:{day}"


def next_midnight(seconds: float) -> int:
    """The next 00:00 UTC after `seconds`, as a Unix time."""
    return (int(seconds) // 86400 + 1) * 86400


class KeyStore:
    """The keys and their daily usage in the SQLite file at `path`, created on first use."""

    connection = SuggestionStore.connection  # this thread's WAL connection, synchronous=FULL

    def __init__(self, path: str):
        self.path = os.fspath(path)
        self.local = threading.local()
        self.connection().executescript(SCHEMA)

    @contextlib.contextmanager
    def transaction(self):
        """A write transaction that holds the file's lock from its start: processes cannot overtake each other."""
        connection = self.connection()
        connection.execute("BEGIN IMMEDIATE")
        try:
            yield connection
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")

    def add(self, name: str, req_limit=0, char_limit=0, day_limit=0, origin=None, key=None) -> tuple[dict, str]:
        """A new key (a random one unless `key` is given) and its record; the key is not kept, only its hash."""
        for field, value in zip(LIMITS, (req_limit, char_limit, day_limit)):
            if not isinstance(value, int) or value < 0:
                raise ValueError(f"{field} must be an integer >= 0 (0: no limit), got {value!r}")
        key = key or secrets.token_urlsafe(24)
        with self.transaction() as connection:
            if connection.execute("SELECT 1 FROM keys WHERE hash = ?", (hash_of(key),)).fetchone():
                raise ValueError(f"{self.path} already holds that key")
            cursor = connection.execute(
                "INSERT INTO keys (hash, name, req_limit, char_limit, day_limit, origin, created) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (hash_of(key), name, req_limit, char_limit, day_limit, origin or None, time.time()),
            )
        return self.record(cursor.lastrowid), key

    def import_keys(self, keys, name: str) -> int:
        """Each of `keys` (an --api_keys file's) as a key without limits named `name`; those already held are
        skipped. Returns how many were added."""
        with self.transaction() as connection:
            added = connection.executemany(
                "INSERT OR IGNORE INTO keys (hash, name, req_limit, char_limit, day_limit, origin, created) "
                "VALUES (?, ?, 0, 0, 0, NULL, ?)",
                [(hash_of(key), name, time.time()) for key in sorted(keys)],
            )
        return added.rowcount

    def record(self, key_id: int) -> dict:
        row = self.connection().execute(f"SELECT {', '.join(COLUMNS)} FROM keys WHERE id = ?", (key_id,)).fetchone()
        if row is None:
            raise ValueError(f"{self.path} holds no key {key_id}")
        return dict(row)

    def find(self, key: str) -> dict | None:
        """The record of `key` (by its hash), or None."""
        query = f"SELECT {', '.join(COLUMNS)} FROM keys WHERE hash = ?"
        row = self.connection().execute(query, (hash_of(key),)).fetchone()
        return None if row is None else dict(row)

    def records(self) -> list[dict]:
        return [dict(row) for row in self.connection().execute(f"SELECT {', '.join(COLUMNS)} FROM keys ORDER BY id")]

    def remove(self, key_id: int) -> dict:
        """Remove a key (its usage with it); its record. An id not held is an error naming it."""
        found = self.record(key_id)
        with self.transaction() as connection:
            connection.execute("DELETE FROM usage WHERE key_id = ?", (key_id,))
            connection.execute("DELETE FROM keys WHERE id = ?", (key_id,))
        return found

    def used(self, key_id: int, day: str) -> int:
        row = (
            self.connection()
            .execute("SELECT characters FROM usage WHERE key_id = ? AND day = ?", (key_id, day))
            .fetchone()
        )
        return row[0] if row else 0

    def usage(self, day: str | None = None) -> list[dict]:
        """Each key's requests and characters per day (`day` only, when given), newest day first."""
        query = (
            "SELECT usage.day, keys.id, keys.name, usage.requests, usage.characters, keys.day_limit FROM usage "
            "JOIN keys ON keys.id = usage.key_id" + (" WHERE usage.day = ?" if day else "")
        )
        rows = self.connection().execute(query + " ORDER BY usage.day DESC, keys.id", (day,) if day else ())
        return [dict(row) for row in rows]

    def spend(self, record: dict, characters: int, day: str, check: bool = True) -> int:
        """Count a request of `characters` for the key of `record` on `day`; with `check`, QuotaSpent (and nothing
        counted) when it would take the day over the key's quota. The day's characters after it."""
        with self.transaction() as connection:
            used = self.used(record["id"], day)
            if check and record["day_limit"] and used + characters > record["day_limit"]:
                raise QuotaSpent(record["day_limit"], record["day_limit"] - used)
            connection.execute(
                "INSERT INTO usage VALUES (?, ?, 1, ?) ON CONFLICT (key_id, day) DO UPDATE SET "
                "requests = requests + 1, characters = characters + ?",
                (record["id"], day, characters, characters),
            )
        return used + characters


def characters_of(q) -> int:
    """The characters of a request's `q` (a string, or a list of them); 0 for anything else (refused later)."""
    if isinstance(q, str):
        return len(q)
    return sum(len(text) for text in q if isinstance(text, str)) if isinstance(q, list) else 0


class KeyGate:
    """Who may ask what: the static keys of --api_keys (no limits) and those of the `--keys_db` store (`path`),
    their per-minute limits through `store` (Redis or this process), their day's characters through Redis when
    `store` has it and the SQLite file otherwise; `clock` gives the time (tests move it to the next day)."""

    def __init__(self, api_keys, path: str | None, store: SharedStore, clock=time.time):
        if path and not os.path.isfile(path):
            raise FileNotFoundError(f"--keys_db {path!r} does not exist: create it with transformer-mt-keys add")
        self.api_keys, self.store, self.clock = api_keys, store, clock
        self.keys = KeyStore(path) if path else None
        self.per_minute: dict[int, ClientLimit] = {}  # one moving window per distinct limit
        self.required = api_keys is not None or self.keys is not None

    def check(self, request, fields: dict) -> None:
        """The request's key (`api_key`) known, its Origin allowed and its requests per minute under the key's
        limit; the key's record kept as `request.state.key`, and the characters of `q` charged to it (LibreTranslate's
        statuses: 400 over the key's characters per request, 429 over its day's quota)."""
        key = fields.get("api_key") if isinstance(fields.get("api_key"), str) else None  # a list is no key
        record = self.keys.find(key) if self.keys is not None and key else None
        if self.required and record is None and (self.api_keys is None or key not in self.api_keys):
            raise RequestError("Invalid API key", 403)
        request.state.key = record
        if record is None:
            return
        origin = request.headers.get("origin")
        if record["origin"] and origin != record["origin"]:
            raise RequestError(f"Origin {origin!r} may not use this API key: it is for {record['origin']}", 403)
        if record["req_limit"]:
            limit = self.per_minute.setdefault(record["req_limit"], ClientLimit(record["req_limit"], self.store))
            limit.check(f"key:{record['id']}")
        if "q" in fields:
            self.charge(request, characters_of(fields["q"]))

    def charge(self, request, characters: int, deepl: bool = False, per_request: bool = True) -> None:
        """Count `characters` for the request's key (none for a static key or none at all); over the key's
        characters per request a 400 (DeepL's 413; not for an uploaded file's pieces: `per_request` False, the file's
        own limits hold), over its day's quota a 429 (DeepL's 456, "Quota exceeded")."""
        record = getattr(request.state, "key", None)
        if record is None:
            return
        if per_request and record["char_limit"] and characters > record["char_limit"]:
            if deepl:
                raise RequestError(
                    f"Request Entity Too Large: {characters} characters (at most {record['char_limit']})", 413
                )
            raise RequestError(f"Invalid request: request ({characters}) exceeds text limit ({record['char_limit']})")
        try:
            self.spend(record, characters)
        except QuotaSpent as spent:
            limit, left = spent.args
            if deepl:
                raise RequestError("Quota exceeded", 456) from None
            raise RequestError(
                f"Slowdown: {limit} characters per day ({left} left today, {characters} asked; "
                "the quota starts again at 00:00 UTC)",
                429,
            ) from None

    def spend(self, record: dict, characters: int) -> None:
        """The day's count in Redis when the store has it (the SQLite file then records it unchecked), in the
        SQLite file otherwise and while Redis is down."""
        now = self.clock()
        day, checked = utc_day(now), self.store.client is None
        if not checked:
            name = day_count(record["id"], day)

            def count(client):
                pipeline = client.pipeline()
                pipeline.incrby(name, characters)
                pipeline.expireat(name, next_midnight(now) + 60)  # a minute's grace for the clocks of other hosts
                used = pipeline.execute()[0]
                if record["day_limit"] and used > record["day_limit"]:
                    client.decrby(name, characters)
                    raise QuotaSpent(record["day_limit"], record["day_limit"] - used + characters)

            try:
                self.store.run(count)
            except StoreDown:
                checked = True
        self.keys.spend(record, characters, day, check=checked)

    def usage(self, request) -> tuple[int, int] | None:
        """The request's key's characters today and its quota (0: none), or None for a request without a stored
        key."""
        record = getattr(request.state, "key", None)
        if record is None:
            return None
        return self.keys.used(record["id"], utc_day(self.clock())), record["day_limit"]


def read_api_keys(path: str) -> frozenset[str]:
    """The keys of an --api_keys file: one a line, `#` lines and blank ones left out."""
    with open(path, encoding="utf-8") as f:
        keys = frozenset(line.strip() for line in f if line.strip() and not line.startswith("#"))
    if not keys:
        raise ValueError(f"--api_keys {path!r} holds no keys (one a line)")
    return keys


__all__ = [
    "COLUMNS",
    "KeyGate",
    "KeyStore",
    "read_api_keys",
    "QuotaSpent",
    "characters_of",
    "day_count",
    "hash_of",
    "next_midnight",
    "utc_day",
]
