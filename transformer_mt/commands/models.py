"""The models command (scripts/models.py, `transformer-mt-models`): its flags (`parse_args`) and `run`, which lists,
installs, removes and verifies models through `transformer_mt.installer` and writes the index from `models/`."""

import argparse
import os

from ..installer import (
    INDEX,
    MODELS_ENV,
    build_index,
    install,
    listing,
    load_index,
    models_dir,
    remove,
    save_index,
    verify,
)
from ..installer.sources import KINDS
from ..installer.store import installed


def parse_args(argv=None, description: str | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = parser.add_subparsers(dest="verb", required=True)
    where = argparse.ArgumentParser(add_help=False)
    where.add_argument(
        "--models_dir", help=f"Where models are installed (default ${MODELS_ENV}, else {models_dir(None)})."
    )
    where.add_argument("--index", help="A model index to read (default: the one shipped in the package).")
    verbs.add_parser("list", parents=[where], help="The index's models, and which are installed.")
    add = verbs.add_parser("install", parents=[where], help="Install a model, verified file by file.")
    add.add_argument("model", help="A model's name, a pair (en-de), or a Hub repository id of an Opus-MT model.")
    add.add_argument(
        "--source",
        choices=KINDS,
        help="Install from this kind of source only (default: the first "
        "that can be reached: a repository checkout's folder, the Hub, a URL).",
    )
    add.add_argument("--repository", help="The repository checkout for a repository source (default: this one).")
    add.add_argument("--revision", default="main", help="An Opus-MT repository's revision (default main).")
    add.add_argument("--overwrite", action="store_true", help="Replace an installed model of that name.")
    verbs.add_parser("remove", parents=[where], help="Delete an installed model.").add_argument("model")
    check = verbs.add_parser("verify", parents=[where], help="Check an installed model's files against its hashes.")
    check.add_argument("model", nargs="?", help="A name or folder (default: every installed model).")
    write = verbs.add_parser("index", help="Write the model index from the repository's models/ folder.")
    write.add_argument("--models", required=True, help="The repository's models/ folder.")
    write.add_argument("--output", default=str(INDEX), help="The index to write (default: the package's).")
    parser.epilog = "verbs:\n" + "".join(f"  {verb.format_usage()[7:]}" for verb in verbs.choices.values())
    return parser.parse_args(argv)


def list_lines(rows: list[dict]) -> list[str]:
    lines = []
    for row in rows:
        scores = ", ".join(f"{name} {found['bleu']:.2f}" for name, found in row["scores"].items() if "bleu" in found)
        lines += [
            f"{row['name']}  {row['pair']}  version {row['version'] or '-'}"
            + ("" if row["in_index"] else "  (not in the index)")
            + (f"  installed ({row['installed']})" if row["installed"] else "  not installed"),
            f"    license {', '.join(row['license']) or 'not stated'}; BLEU {scores or 'not measured'}; "
            f"{'calibrated' if row['calibration'] else 'no calibration'}; sources: {', '.join(row['sources'])}",
        ]
    return lines


def run(args: argparse.Namespace) -> int:
    """Do the verb; returns the exit status (1 when verify finds a problem)."""
    if args.verb == "index":
        previous = load_index(args.output) if os.path.isfile(args.output) else None
        path = save_index(build_index(args.models, previous), args.output)
        print(f"Wrote {path}")
    elif args.verb == "list":
        print("\n".join(list_lines(listing(args.models_dir, args.index))))
    elif args.verb == "install":
        done = install(
            args.model, args.models_dir, args.index, args.source, args.repository, args.overwrite, args.revision
        )
        print(f"Installed {done['name']} (version {done['version'] or '-'}) from {done['source']} in {done['path']}")
        for note in done["notes"]:
            print(f"  {note}")
    elif args.verb == "remove":
        print(f"Removed {remove(args.model, models_dir(args.models_dir))}")
    else:
        names = [args.model] if args.model else list(installed(models_dir(args.models_dir)))
        if not names:
            print(f"No models installed in {models_dir(args.models_dir)}")
        failed = 0
        for name in names:
            path, found = verify(name, args.models_dir, args.index)
            failed += bool(found)
            print(f"{path}: " + ("ok" if not found else f"{len(found)} problem{'s' * (len(found) > 1)}"))
            for problem in found:
                print(f"  {problem}")
        return 1 if failed else 0
    return 0
