"""Two runs of `translation_hashes` compared: which cases translate the same, and for a case that does not, how many
lines differ and how many of those the one change meant to alter outputs explains: a placeholder written more often
than its source holds, removed (`text.spans.drop_extra`, commit ee56579).

The lines come from the runs' `--lines` files (every case's outputs, in the order the hashes were made), kept out of
the repository; the comparison names the two JSONs and holds only counts and the lines' numbers:

    python -m transformer_mt.experiments.hash_compare docs/results/restructure/before.json \
        docs/results/restructure/after.json --lines runs/before.lines.json runs/after.lines.json \
        --output docs/results/restructure/compare.json
"""

import argparse
import json
from pathlib import Path

from transformer_mt.data import load_parallel_data
from transformer_mt.experiments.translation_hashes import ENGINES, MODELS, REPO, cases
from transformer_mt.text.spans import drop_extra


def case_order() -> list[tuple[str, str, str, str]]:
    """(model, engine, case, data file) in the order `translation_hashes` hashes them."""
    return [
        (model, engine, name, path) for model in MODELS for engine in ENGINES for name, path, _ in cases(REPO / model)
    ]


def explained(sources: list[str], before: list[str], after: list[str]) -> dict:
    """The lines that differ (1-based), and those whose change is the removal of a placeholder written too often."""
    differ = [i for i, (old, new) in enumerate(zip(before, after, strict=True)) if old != new]
    removal = [i for i in differ if drop_extra(sources[i], before[i])[0] == after[i]]
    return {
        "lines_differ": len(differ),
        "placeholder_removed": len(removal),
        "unexplained": [i + 1 for i in differ if i not in removal],
    }


def compare(before: dict, after: dict, lines: tuple[list, list] | None) -> dict:
    """Per model, engine and case: whether the two runs' hashes are equal (and, given the lines, what differs)."""
    found = {}
    for k, (model, engine, name, path) in enumerate(case_order()):
        old, new = before["hashes"][model][engine][name], after["hashes"][model][engine][name]
        entry = {"equal": old == new}
        if old != new and lines is not None:
            sources = list(load_parallel_data({"test": REPO / path}, "en", "de")["test"]["en"])[: old["lines"]]
            entry.update(explained(sources, lines[0][k], lines[1][k]))
        found.setdefault(model, {}).setdefault(engine, {})[name] = entry
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--lines", type=Path, nargs=2, metavar=("BEFORE", "AFTER"), help="the runs' lines files")
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args(argv)
    before, after = (json.loads(path.read_text(encoding="utf-8")) for path in (args.before, args.after))
    lines = tuple(json.loads(path.read_text(encoding="utf-8")) for path in args.lines) if args.lines else None
    cases_found = compare(before, after, lines)
    entries = [entry for engines in cases_found.values() for found in engines.values() for entry in found.values()]
    report = {
        "before": {"file": str(args.before), "commit": before["commit"]},
        "after": {"file": str(args.after), "commit": after["commit"]},
        "cases": len(entries),
        "equal": sum(entry["equal"] for entry in entries),
        "unexplained_lines": sum(len(entry.get("unexplained", [])) for entry in entries),
        "compared": cases_found,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({key: value for key, value in report.items() if key != "compared"}, indent=2))


if __name__ == "__main__":
    main()
