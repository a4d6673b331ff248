"""What DeepL's API keeps between requests, in one SQLite file (`DeepLStore`): glossaries and their dictionaries
(one dictionary a v2 glossary, several a v3 one), the characters translated per API key (`/v2/usage`), and the
documents waiting for their download (`/v2/document`). Everything is scoped to the API key that made it: a key is
kept as its SHA-256 prefix (`owner_of`), never as it is.

As the suggestions' store (`suggestion_store`): WAL mode, so readers never wait for the writer; `synchronous=FULL`,
so a glossary is on disk before its creation is answered; a busy timeout for writers of several processes; one
connection per thread of each process.
"""

import datetime
import hashlib
import json
import os
import secrets
import threading
import time

from .suggestion_store import SuggestionStore


DEFAULT_DB = "deepl.sqlite3"  # beside the suggestions' file, or in the server's working directory
SCHEMA = """
CREATE TABLE IF NOT EXISTS glossaries (
    id TEXT PRIMARY KEY, owner TEXT NOT NULL, name TEXT NOT NULL, created REAL NOT NULL,
    version INTEGER NOT NULL        -- 2 or 3: the API that made it (a v2 glossary holds one dictionary)
);
CREATE TABLE IF NOT EXISTS dictionaries (
    glossary TEXT NOT NULL REFERENCES glossaries (id) ON DELETE CASCADE,
    source TEXT NOT NULL, target TEXT NOT NULL,
    entries TEXT NOT NULL,          -- JSON: [[source term, target term], ...] in the order given
    PRIMARY KEY (glossary, source, target)
);
CREATE TABLE IF NOT EXISTS usage (owner TEXT PRIMARY KEY, characters INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    id TEXT PRIMARY KEY, key TEXT NOT NULL, owner TEXT NOT NULL,
    name TEXT NOT NULL,             -- the translation's name in the server's FileStore
    created REAL NOT NULL
);
"""


def owner_of(key: str | None) -> str:
    """Whose a glossary, a count or a document is: the API key's SHA-256 prefix ("" for requests without a key)."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16] if key else ""


def iso_time(seconds: float) -> str:
    """A time as DeepL writes `creation_time`: ISO 8601 with a fraction and the zone (UTC)."""
    moment = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z"


class DeepLStore:
    """The DeepL API's tables in the SQLite file at `path`, created on first use."""

    def __init__(self, path: str):
        self.path = os.fspath(path)
        self.local = threading.local()
        self.connection().executescript(SCHEMA)

    connection = SuggestionStore.connection  # this thread's WAL connection, synchronous=FULL, foreign keys on
    row_factory = None  # rows as tuples

    def write(self, statements: list[tuple[str, tuple]]) -> None:
        """Run `statements` as one transaction."""
        connection = self.connection()
        connection.execute("BEGIN IMMEDIATE")
        try:
            for sql, values in statements:
                connection.execute(sql, values)
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")

    def create(self, owner: str, name: str, dictionaries: dict, version: int) -> dict:
        """A new glossary of `dictionaries` ({(source, target): [(term, translation), ...]}); its record."""
        glossary = secrets.token_hex(16)
        created = time.time()
        self.write(
            [("INSERT INTO glossaries VALUES (?, ?, ?, ?, ?)", (glossary, owner, name, created, version))]
            + [_put_dictionary(glossary, pair, entries) for pair, entries in dictionaries.items()]
        )
        return self.glossary(owner, glossary)

    def glossary(self, owner: str, glossary: str) -> dict | None:
        """`{"id", "name", "created", "version", "dictionaries": {(source, target): entries}}`, or None when
        `owner` has no such glossary."""
        row = (
            self.connection()
            .execute("SELECT id, name, created, version FROM glossaries WHERE id = ? AND owner = ?", (glossary, owner))
            .fetchone()
        )
        if row is None:
            return None
        found = self.connection().execute(
            "SELECT source, target, entries FROM dictionaries WHERE glossary = ? ORDER BY rowid", (glossary,)
        )
        dictionaries = {
            (source, target): [tuple(entry) for entry in json.loads(entries)] for source, target, entries in found
        }
        return {"id": row[0], "name": row[1], "created": row[2], "version": row[3], "dictionaries": dictionaries}

    def glossaries(self, owner: str) -> list[dict]:
        """Every glossary of `owner`, oldest first."""
        ids = (
            self.connection()
            .execute("SELECT id FROM glossaries WHERE owner = ? ORDER BY created, id", (owner,))
            .fetchall()
        )
        return [self.glossary(owner, glossary) for (glossary,) in ids]

    def delete(self, owner: str, glossary: str) -> bool:
        """Delete `owner`'s glossary: whether there was one."""
        connection = self.connection()
        return connection.execute("DELETE FROM glossaries WHERE id = ? AND owner = ?", (glossary, owner)).rowcount > 0

    def update(self, owner: str, glossary: str, name: str | None, dictionaries: dict, merge: bool) -> None:
        """Rename `owner`'s glossary (`name` not None) and put `dictionaries` in it: each replacing the one of its
        pair, or with `merge` its entries added to it (a term already there takes the new translation)."""
        found = self.glossary(owner, glossary)
        statements = [("UPDATE glossaries SET name = ? WHERE id = ?", (name, glossary))] if name is not None else []
        for pair, entries in dictionaries.items():
            if merge and pair in found["dictionaries"]:
                entries = list((dict(found["dictionaries"][pair]) | dict(entries)).items())
            statements.append(_put_dictionary(glossary, pair, entries))
        self.write(statements)

    def delete_dictionary(self, owner: str, glossary: str, pair: tuple[str, str]) -> bool:
        """Delete a dictionary of `owner`'s glossary: whether there was one."""
        if self.glossary(owner, glossary) is None:
            return False
        sql = "DELETE FROM dictionaries WHERE glossary = ? AND source = ? AND target = ?"
        return self.connection().execute(sql, (glossary, *pair)).rowcount > 0

    def count(self, owner: str, characters: int) -> None:
        """Add `characters` to what `owner` translated."""
        self.write(
            [
                (
                    "INSERT INTO usage VALUES (?, ?) ON CONFLICT (owner) DO UPDATE SET characters = characters + ?",
                    (owner, characters, characters),
                )
            ]
        )

    def used(self, owner: str) -> int:
        row = self.connection().execute("SELECT characters FROM usage WHERE owner = ?", (owner,)).fetchone()
        return row[0] if row else 0

    def add_document(self, owner: str, name: str) -> tuple[str, str]:
        """A translated document (its FileStore `name`) waiting for `owner`: its id and its key."""
        document, key = secrets.token_hex(16).upper(), secrets.token_hex(32).upper()
        self.write(
            [
                (
                    "INSERT INTO documents VALUES (?, ?, ?, ?, ?)",
                    (document, key, owner, name, time.time()),
                )
            ]
        )
        return document, key

    def document(self, owner: str, document: str, key: str) -> str | None:
        """The FileStore name of the document `owner` uploaded as `document` with `key`, or None."""
        row = (
            self.connection()
            .execute("SELECT name FROM documents WHERE id = ? AND key = ? AND owner = ?", (document, key, owner))
            .fetchone()
        )
        return None if row is None else row[0]

    def forget_document(self, document: str) -> None:
        self.write([("DELETE FROM documents WHERE id = ?", (document,))])


def _put_dictionary(glossary: str, pair: tuple[str, str], entries: list) -> tuple[str, tuple]:
    return (
        "INSERT INTO dictionaries VALUES (?, ?, ?, ?) ON CONFLICT (glossary, source, target) "
        "DO UPDATE SET entries = excluded.entries",
        (glossary, *pair, json.dumps([list(entry) for entry in entries], ensure_ascii=False)),
    )


__all__ = ["DEFAULT_DB", "DeepLStore", "iso_time", "owner_of"]
