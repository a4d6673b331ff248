"""Regenerate data/en-de/ from the shared English-German corpus: its LibreOffice-help and GNOME-docs rows only.

    python data/make_subset.py [SOURCE_DIR]      # SOURCE_DIR defaults to ../shared/data/en-de (from the repo root)

Only these two origins are shipped because their licenses (MPL-2.0, CC-BY-SA-3.0) allow redistribution with
attribution. Rows keep their split and their order, so the output is the same bytes on every run.
"""

import argparse
from collections import Counter
from pathlib import Path

from transformer_mt.scripts.data import SPLITS, load_parallel_data


REPO_ROOT = Path(__file__).resolve().parents[1]
ORIGINS = ("lohelp", "gnomehelp")
COLUMNS = ("en", "de", "origin")
MAX_BYTES = 7_000_000  # keeps the repository small; the whole lohelp+gnomehelp train split fits (about 6.6 MB)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", nargs="?", type=Path, default=REPO_ROOT.parent / "shared" / "data" / "en-de")
    parser.add_argument("--output", type=Path, default=REPO_ROOT / "data" / "en-de")
    args = parser.parse_args(argv)

    corpus = load_parallel_data(args.source, *COLUMNS[:2], extra_columns=COLUMNS[2:])
    args.output.mkdir(parents=True, exist_ok=True)
    for split in SPLITS:
        table = corpus[split].to_dict()  # plain lists: iterating a datasets Column row by row is far slower
        rows = [row for row in zip(*(table[column] for column in COLUMNS)) if row[-1] in ORIGINS]
        data = "".join("\t".join(fields) + "\n" for fields in [COLUMNS, *rows]).encode("utf-8")
        if len(data) > MAX_BYTES:
            # Not reached with the current corpus; stop rather than silently ship a different subset.
            raise SystemExit(f"{split}: {len(data):,} bytes exceed {MAX_BYTES:,}; decide which pairs to drop")
        (args.output / f"{split}.tsv").write_bytes(data)
        counts = Counter(row[-1] for row in rows)
        print(f"{split}: {len(rows):,} rows ({', '.join(f'{o} {counts[o]:,}' for o in ORIGINS)}), {len(data):,} bytes")


if __name__ == "__main__":
    main()
