"""The placeholder study: through `translate.py` on a .po file, how many messages keep their source's placeholders as a
multiset (issue 51, item 4), and what `msgfmt --check-format` says of the catalogue that comes back.

The messages of a split whose source holds a placeholder (`text.spans.placeholders`) are written into a .po file
(polib), each entry with the gettext format flag its placeholders imply (`format_flag`: c-format for printf's `%s`,
`%d`, `%1$s`; python-format for `%(name)s`; python-brace-format for `{name}`, `{0}`; qt-format for Qt's `%1`;
sh-format for `${var}`; none for HexChat's `%C2`, strftime's `%Y` or `$1`, which gettext does not check). For each
shipped model and engine the real command translates it:

    python scripts/translate.py --model MODEL --engine ENGINE --input in.po --output out.po --no_progress

and out.po is read back with polib: per entry, whether msgstr holds the same multiset of placeholders as msgid
(`kept`), and whether translate.py marked it for review because its placeholders differ (`documents.files`'
PLACEHOLDERS_DIFFER comment; every entry it writes is fuzzy besides, unless `--trusted_above`). msgfmt runs on
out.po as written (every entry fuzzy, so nothing is checked), with `--use-fuzzy` (every entry checked), and on the
catalogue a reviewer would compile: out.po with `fuzzy` taken off every entry not marked for review. Issue 51 asks
99.5% kept on the test split with both models and both engines, and msgfmt accepting every entry not marked for
review. Before any model runs, a probe asks msgfmt whether it checks each flagged msgid at all (`probe_flags`: a
msgstr without the msgid's last placeholder must be refused). What gettext checks (`format_flag`, `msgfmt`,
`entries_at`, `probe_flags`) lives in `gettext_checks`; its names are importable from here too.

    python -m transformer_mt.experiments.placeholder_study --split validation
"""

import argparse
import collections
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from transformer_mt.documents.files import PLACEHOLDERS_DIFFER
from transformer_mt.experiments.gettext_checks import entries_at, format_flag, msgfmt, probe_flags
from transformer_mt.experiments.studies import git_commit
from transformer_mt.machine import matmul_gflops
from transformer_mt.text.spans import placeholders


REPO = Path(__file__).resolve().parents[2]
DATA = "../shared/data/en-de-ui"
MODELS = ("models/transformer-mt-en-de", "models/transformer-mt-en-de-broad")
ENGINES = ("transformers", "ctranslate2")
RESULTS = Path("docs/results/placeholders")
TARGET = 0.995  # issue 51: the share of messages whose translation keeps the multiset


def same_placeholders(source: str, translation: str) -> bool:
    """Whether `translation` holds the same placeholders as `source`, each as often (in any order)."""
    return collections.Counter(placeholders(source)) == collections.Counter(placeholders(translation))


def multiset_difference(source: str, translation: str) -> dict[str, list[str]]:
    """The placeholders `translation` lacks (`missing`) and those it holds more often than `source` (`extra`)."""
    have, want = collections.Counter(placeholders(translation)), collections.Counter(placeholders(source))
    return {"missing": sorted((want - have).elements()), "extra": sorted((have - want).elements())}


def cause(source: str, translation: str, marked: bool) -> str:
    """What went wrong with one message's placeholders, in a word: `reordered` (same multiset, kept), `missing`,
    `extra` (written twice or invented), `swapped` (both: one changed into another), and whether translate.py
    marked it for review (`, unmarked` when it did not)."""
    difference = multiset_difference(source, translation)
    kind = (
        "swapped"
        if difference["missing"] and difference["extra"]
        else "missing"
        if difference["missing"]
        else "extra"
        if difference["extra"]
        else "reordered"
        if placeholders(source) != placeholders(translation)
        else "kept"
    )
    return kind if marked or kind in ("kept", "reordered") else f"{kind}, unmarked"


def messages_with_placeholders(data: str | Path, split: str, limit: int | None = None) -> list[tuple[str, str]]:
    """(source, origin) of each message of `data`/`split`.tsv whose source holds a placeholder, in file order."""
    path = Path(data) / f"{split}.tsv"
    path = path if path.is_absolute() else REPO / path
    lines = path.read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t")
    rows = [dict(zip(header, line.split("\t"))) for line in lines[1:] if line]
    found = [(row["en"], row.get("origin", "")) for row in rows if placeholders(row["en"])]
    return found[:limit]


def build_po(messages: list[tuple[str, str]]):
    """A polib catalogue of `messages` (source, origin), each entry with its `format_flag` and the origin as a
    reference; a source written twice gets a msgctxt (its origin and position): gettext takes one msgid a context."""
    import polib

    catalogue = polib.POFile(wrapwidth=0)
    catalogue.metadata = {
        "Project-Id-Version": "placeholder-study",
        "MIME-Version": "1.0",
        "Content-Type": "text/plain; charset=UTF-8",
        "Content-Transfer-Encoding": "8bit",
        "Language": "de",
        "Plural-Forms": "nplurals=2; plural=(n != 1);",
    }
    counts = collections.Counter(source for source, _ in messages)
    for n, (source, origin) in enumerate(messages):
        flag = format_flag(source)
        catalogue.append(
            polib.POEntry(
                msgid=source,
                msgstr="",
                flags=[flag] if flag else [],
                msgctxt=f"{origin} {n}" if counts[source] > 1 else None,
                occurrences=[(origin, "")] if origin else [],
            )
        )
    return catalogue


def read_back(path: Path) -> list[dict]:
    """Each translated entry of out.po: its source, translation, flags, transformer-mt comment, whether it keeps
    the placeholder multiset and whether translate.py marked it for review."""
    import polib

    rows = []
    for entry in polib.pofile(str(path), wrapwidth=0):
        if not entry.msgid:
            continue
        marked = PLACEHOLDERS_DIFFER in entry.tcomment
        rows.append(
            {
                "source": entry.msgid,
                "translation": entry.msgstr,
                "msgctxt": entry.msgctxt,
                "flag": next((flag for flag in entry.flags if flag.endswith("-format")), None),
                "fuzzy": "fuzzy" in entry.flags,
                "marked_for_review": marked,
                "kept": same_placeholders(entry.msgid, entry.msgstr),
                "cause": cause(entry.msgid, entry.msgstr, marked),
                "comment": " ".join(
                    line
                    for line in entry.tcomment.splitlines()
                    if line.startswith("transformer-mt:") and line != PLACEHOLDERS_DIFFER
                ),
            }
        )
    return rows


def accepted_copy(path: Path, output: Path) -> int:
    """out.po as a reviewer would compile it: `fuzzy` taken off every entry not marked for review; the number of
    entries that stay fuzzy."""
    import polib

    catalogue = polib.pofile(str(path), wrapwidth=0)
    left = 0
    for entry in catalogue:
        if PLACEHOLDERS_DIFFER in entry.tcomment:
            left += "fuzzy" in entry.flags
        elif "fuzzy" in entry.flags:
            entry.flags.remove("fuzzy")
    catalogue.save(str(output))
    return left


def translate_po(model: str, engine: str, source: Path, output: Path) -> tuple[list[str], float]:
    """Run translate.py on `source` into `output` in a process of its own; the command and its seconds."""
    command = [
        sys.executable,
        "scripts/translate.py",
        "--model",
        model,
        "--engine",
        engine,
        "--input",
        str(source),
        "--output",
        str(output),
        "--no_progress",
    ]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr[-4000:]}")
    return command, time.perf_counter() - start


def run_one(model: str, engine: str, source: Path, folder: Path) -> dict:
    """One model on one engine: translate.py on `source`, then the counts, msgfmt's three answers, the failures."""
    output = folder / "out.po"
    command, seconds = translate_po(model, engine, source, output)
    rows = read_back(output)
    accepted = folder / "accepted.po"
    left_fuzzy = accepted_copy(output, accepted)
    kept = sum(row["kept"] for row in rows)
    accepted_check = msgfmt(accepted)
    refused = {(entry.msgctxt, entry.msgid) for entry in entries_at(accepted, accepted_check["lines"])}
    return {
        "model": model,
        "engine": engine,
        "messages": len(rows),
        "kept": kept,
        "share": round(kept / len(rows), 4) if rows else None,
        "marked_for_review": sum(row["marked_for_review"] for row in rows),
        "fuzzy": sum(row["fuzzy"] for row in rows),
        "causes": dict(collections.Counter(row["cause"] for row in rows if row["cause"] != "kept")),
        "msgfmt": {
            "as_written": {key: value for key, value in msgfmt(output).items() if key != "lines"},
            "use_fuzzy": {key: value for key, value in msgfmt(output, use_fuzzy=True).items() if key != "lines"},
            "not_marked_for_review": {
                **{key: value for key, value in accepted_check.items() if key != "lines"},
                "entries_checked": len(rows) - left_fuzzy,
                "fuzzy_left": left_fuzzy,
            },
        },
        "failures": [
            {
                **{
                    key: row[key] for key in ("source", "translation", "flag", "marked_for_review", "cause", "comment")
                },
                **multiset_difference(row["source"], row["translation"]),
                "msgfmt_refused_unmarked": (row["msgctxt"], row["source"]) in refused,
            }
            for row in rows
            if not row["kept"] or (row["msgctxt"], row["source"]) in refused
        ],
        "reordered": sum(row["cause"] == "reordered" for row in rows),
        "seconds": round(seconds, 1),
        "translate_command": " ".join(["python", *command[1:]]),
    }


def run_study(
    data: str, split: str, models=MODELS, engines=ENGINES, limit: int | None = None, po_dir: Path | None = None
) -> dict:
    """The study on one split: the source catalogue's flags and msgfmt's probe of them, then each model on each
    engine (`run_one`)."""
    if not shutil.which("msgfmt"):
        raise RuntimeError("msgfmt (GNU gettext) is not installed: the study needs its --check-format")
    messages = messages_with_placeholders(data, split, limit)
    catalogue = build_po(messages)
    with tempfile.TemporaryDirectory(prefix="placeholder-study-") as temporary:
        folder = Path(po_dir) if po_dir else Path(temporary)
        folder.mkdir(parents=True, exist_ok=True)
        source = folder / f"{split}.po"
        catalogue.save(str(source))
        probe = probe_flags(catalogue, folder)
        runs = []
        for model in models:
            for engine in engines:
                run_folder = folder / f"{Path(model).name}-{engine}"
                run_folder.mkdir()
                runs.append(run_one(model, engine, source, run_folder))
                print(
                    f"{model} {engine}: {runs[-1]['kept']}/{runs[-1]['messages']} kept ({runs[-1]['share']:.1%}), "
                    f"{runs[-1]['marked_for_review']} marked for review, msgfmt on the rest: "
                    f"{runs[-1]['msgfmt']['not_marked_for_review']['errors']} errors",
                    flush=True,
                )
    return {
        "data": data,
        "split": split,
        "messages": len(messages),
        "flags": dict(collections.Counter(entry.flags[0] if entry.flags else "none" for entry in catalogue)),
        "flag_probe": probe,
        "target_share": TARGET,
        "runs": runs,
    }


def uncommitted() -> list[str]:
    """The tracked files of the package and the commands that differ from the commit (other work in the checkout):
    what the figures may owe to something `commit` does not hold."""
    done = subprocess.run(
        [
            "git",
            "status",
            "--porcelain",
            "--untracked-files=no",
            "--",
            "transformer_mt",
            "scripts",
            "configuration",
            "modeling",
            "tokenization",
            "models",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    return [line[3:] for line in done.stdout.splitlines()]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=DATA, help="a folder of {validation,test}.tsv (en, de, origin)")
    parser.add_argument("--split", default="validation")
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--engines", nargs="+", default=list(ENGINES), choices=ENGINES)
    parser.add_argument("--limit", type=int, default=None, help="only the first N messages (a quick look)")
    parser.add_argument("--po_dir", type=Path, help="keep the .po files here (default: a temporary folder)")
    parser.add_argument("--output", help="The results JSON (default: docs/results/placeholders/<split>.json).")
    args = parser.parse_args(argv)
    output = Path(args.output or REPO / RESULTS / f"{args.split}.json")
    if output.exists():
        parser.error(f"--output {str(output)!r} exists; results never replace a file")
    gflops, changed = matmul_gflops(), uncommitted()
    started = time.perf_counter()
    study = run_study(args.data, args.split, args.models, args.engines, args.limit, args.po_dir)
    command = ["python -m transformer_mt.experiments.placeholder_study", *(argv if argv is not None else sys.argv[1:])]
    result = {
        "commit": git_commit(),
        "uncommitted": changed,
        "command": " ".join(command),
        "matmul_gflops": round(gflops, 1),
        "matmul_gflops_after": round(matmul_gflops(), 1),
        "minutes": round((time.perf_counter() - started) / 60, 2),
        **study,
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    checked = {
        flag: f"{counts.get('checked', 0)}/{counts['flagged']}"
        for flag, counts in study["flag_probe"]["flags"].items()
    }
    print(f"{args.split}: {study['messages']} messages with placeholders; msgfmt checks the flagged ones: {checked}")
    for run in study["runs"]:
        print(
            f"  {run['model']:36} {run['engine']:12} kept {run['kept']}/{run['messages']} ({run['share']:.1%}), "
            f"marked {run['marked_for_review']}, msgfmt on the entries not marked: "
            f"{run['msgfmt']['not_marked_for_review']['errors']} errors; causes {run['causes']}"
        )


if __name__ == "__main__":
    main()
