"""The lines two `translation_hashes` runs translate differently, translated again by a third checkout (the later
commit less the change meant to alter outputs): if it gives every such line as the earlier run did, the rest of what
lay between the two commits (a restructuring) changed none of them.

Run it as a file, with `PYTHONPATH` at that checkout's worktree, so that the package it translates with is the
worktree's own (its `transformer_mt/` holding links to its mapped folders):

    git worktree add --detach runs/revert-check 0c4ce0f && (cd runs/revert-check && git revert --no-commit ee56579)
    cd runs/revert-check && PYTHONPATH=$PWD python ../../transformer_mt/experiments/hash_recheck.py \
        ../hashes-98ecb0f.json.lines.json ../hashes-0c4ce0f.json.lines.json --output recheck.json
"""

import argparse
import json
import subprocess
from pathlib import Path

from transformer_mt.data import load_parallel_data
from transformer_mt.engines import load_engine
from transformer_mt.experiments.translation_hashes import ENGINES, MODELS, REPO, cases
from transformer_mt.translation import translate_texts


def recheck(before: list[list[str]], after: list[list[str]]) -> dict:
    """Every line the two runs' cases translate differently, translated again here (only those lines, per case):
    how many come out as `before` has them, and which do not."""
    k, same, other = -1, 0, []
    for model in MODELS:
        for engine_name in ENGINES:
            engine = None
            for name, path, options in cases(REPO / model):
                k += 1
                lines = [i for i, (old, new) in enumerate(zip(before[k], after[k], strict=True)) if old != new]
                if not lines:
                    continue
                engine = engine or load_engine(str(REPO / model), engine_name)
                sources = list(load_parallel_data({"test": REPO / path}, "en", "de")["test"]["en"])
                found = translate_texts(engine, [sources[i] for i in lines], options)
                for i, hypotheses in zip(lines, found, strict=True):
                    if (hypotheses[0][0] if hypotheses else "") == before[k][i]:
                        same += 1
                    else:
                        other.append([model, engine_name, name, i + 1])
    return {"lines": same + len(other), "as_before": same, "otherwise": other}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path, help="the earlier run's lines file")
    parser.add_argument("after", type=Path, help="the later run's lines file")
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args(argv)
    before, after = (json.loads(path.read_text(encoding="utf-8")) for path in (args.before, args.after))
    state = subprocess.run(["git", "-C", str(REPO), "log", "--oneline", "-1"], capture_output=True, text=True).stdout
    changes = subprocess.run(["git", "-C", str(REPO), "status", "--short"], capture_output=True, text=True).stdout
    report = {"checkout": state.strip(), "uncommitted": changes.splitlines(), **recheck(before, after)}
    args.output.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({key: value for key, value in report.items() if key != "uncommitted"}, indent=2))


if __name__ == "__main__":
    main()
