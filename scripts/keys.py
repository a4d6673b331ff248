"""Manage the API keys of a server's --keys_db: each with LibreTranslate's requests per minute and characters per
request, a quota of characters per UTC day, and an optional allowed Origin.

    transformer-mt-keys add weblate --req_limit 60 --char_limit 5000 --day_limit 500000  # prints the key, once
    transformer-mt-keys add page --origin https://example.org       # only requests from that Origin may use it
    transformer-mt-keys list                                        # id, name, limits, origin, created: no keys
    transformer-mt-keys usage --day 2026-12-05                      # requests and characters per key and UTC day
    transformer-mt-keys remove 3
    transformer-mt-keys import api_keys.txt                         # an --api_keys file: each line a key, no limits

--db is the server's --keys_db (default: keys.sqlite3 in the working directory); add creates it. Only each key's
SHA-256 is stored: a key lost is removed and added again. The day's quota starts again at 00:00 UTC. Limits,
statuses and Redis: docs/serving.md, "Keys and quotas".
"""

from transformer_mt.commands.cli import command
from transformer_mt.commands.keys import parse_args, run


@command
def main(argv=None):
    for line in run(parse_args(argv, __doc__)):
        print(line)


if __name__ == "__main__":
    main()
