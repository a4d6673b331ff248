"""Review the suggestions a server took with --suggestions (LibreTranslate's /suggest), and export the accepted ones.

    python scripts/suggestions.py list                        # the pending ones: id, status, pair, when, verdict, q, s
    python scripts/suggestions.py list --status all --db /srv/mt/suggestions.sqlite3
    python scripts/suggestions.py approve 3 4                 # the server's memory answers them at once
    python scripts/suggestions.py reject 5
    python scripts/suggestions.py export accepted.tsv         # source<TAB>target, for fine-tuning

--db is the server's --suggestions_db (default: suggestions.sqlite3 in the working directory). Every process
serving that file answers an approved suggestion from its next request on. export writes one direction's accepted
pairs (--source and --target when the file holds several) under a header of the two language codes, as the training
data is laid out. Filters, storage and the memory: docs/serving.md, "Suggestions".
"""

import argparse

from transformer_mt.commands.cli import command
from transformer_mt.serving.suggestion_store import DEFAULT_DB, STATUSES, administer


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", default=DEFAULT_DB, help="The server's --suggestions_db (default: %(default)s).")
    actions = parser.add_subparsers(dest="action", required=True)
    listed = actions.add_parser("list", parents=[common], help="List suggestions, one a line (tab-separated).")
    listed.add_argument("--status", choices=(*STATUSES, "all"), default="pending")
    for name in ("approve", "reject"):
        decided = actions.add_parser(name, parents=[common], help=f"{name.capitalize()} suggestions by id.")
        decided.add_argument("ids", nargs="+", type=int)
    exported = actions.add_parser("export", parents=[common], help="Write one direction's accepted pairs as a TSV.")
    exported.add_argument("output")
    exported.add_argument("--source")
    exported.add_argument("--target")
    return parser.parse_args(argv)


@command
def main(argv=None):
    for line in administer(**vars(parse_args(argv))):
        print(line)


if __name__ == "__main__":
    main()
