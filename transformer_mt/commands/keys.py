"""The keys command (scripts/keys.py, `transformer-mt-keys`): its flags (`parse_args`) and `run`, which adds, lists,
removes and imports the API keys of a server's `--keys_db` and shows their usage (`serving.keys.KeyStore`)."""

import argparse
import datetime
import os

from ..serving.keys import COLUMNS, KeyStore, read_api_keys


DEFAULT_DB = "keys.sqlite3"  # in the working directory unless --db says otherwise
USAGE_COLUMNS = ("day", "id", "name", "requests", "characters", "day_limit")


def parse_args(argv=None, description: str | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", default=DEFAULT_DB, help="The server's --keys_db (default: %(default)s).")
    verbs = parser.add_subparsers(dest="verb", required=True)
    added = verbs.add_parser("add", parents=[common], help="Add a key and print it (once: only its hash is kept).")
    added.add_argument("name", help="Whose key it is (a comment shown by list).")
    added.add_argument("--req_limit", type=int, default=0, help="Requests per minute (0: none).")
    added.add_argument("--char_limit", type=int, default=0, help="Characters per request (0: the server's).")
    added.add_argument("--day_limit", type=int, default=0, help="Characters per UTC day (0: none).")
    added.add_argument("--origin", help="The only Origin header its requests may carry (default: any).")
    verbs.add_parser("list", parents=[common], help="The keys, one a line (tab-separated; never the keys).")
    removed = verbs.add_parser("remove", parents=[common], help="Remove a key by its id (its usage with it).")
    removed.add_argument("id", type=int)
    used = verbs.add_parser("usage", parents=[common], help="Requests and characters per key and UTC day.")
    used.add_argument("--day", help="One UTC day, YYYY-MM-DD (default: every day held).")
    imported = verbs.add_parser("import", parents=[common], help="Add each key of an --api_keys file (no limits).")
    imported.add_argument("file")
    return parser.parse_args(argv)


def table(columns, rows: list[dict]) -> list[str]:
    """A header, then one tab-separated line a row; times as UTC."""

    def shown(name, value):
        if name == "created":
            return datetime.datetime.fromtimestamp(value, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        return "-" if value is None else str(value)

    return ["\t".join(columns)] + ["\t".join(shown(name, row[name]) for name in columns) for row in rows]


def run(args: argparse.Namespace) -> list[str]:
    """What `transformer-mt-keys VERB` does to the store at --db (which must exist but for add), as lines."""
    if args.verb != "add" and not os.path.isfile(args.db):
        raise FileNotFoundError(f"no keys database at {args.db} (the server's --keys_db; transformer-mt-keys add)")
    store = KeyStore(args.db)
    if args.verb == "add":
        limits = (args.req_limit, args.char_limit, args.day_limit)
        record, key = store.add(args.name, *limits, origin=args.origin)
        return [f"key {record['id']} ({record['name']}), shown this once: {key}"]
    if args.verb == "list":
        return table(COLUMNS, store.records())
    if args.verb == "remove":
        record = store.remove(args.id)
        return [f"removed key {record['id']} ({record['name']})"]
    if args.verb == "usage":
        if args.day is not None:
            try:
                datetime.date.fromisoformat(args.day)
            except ValueError:
                raise ValueError(f"--day must be a UTC date YYYY-MM-DD, got {args.day!r}") from None
        return table(USAGE_COLUMNS, store.usage(args.day))
    keys = read_api_keys(args.file)
    added = store.import_keys(keys, f"imported from {os.path.basename(args.file)}")
    return [f"{args.file}: {added} keys added, {len(keys) - added} already held"]


__all__ = ["DEFAULT_DB", "parse_args", "run", "table"]
