"""The bit-identity check of a restructuring: the same fixed-step main-job run at two commits, each from a git
worktree of its own, and the hashes of what each wrote (its weights and its test translations).

Each commit is checked out under `runs/bitcheck-worktrees/<commit>` with links in its `transformer_mt/` to its own
`modeling/`, `configuration/`, `tokenization/` and `scripts/` (the folders setuptools maps into the package), and the
run is started there with `PYTHONPATH` at that worktree, so that no module comes from another checkout. The runs go
one after the other on one thread each:

    python -m transformer_mt.experiments.bitcheck --commits c1e52da f4caa61 --output docs/results/bitcheck/issue50.json
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from transformer_mt.machine import matmul_gflops


REPO = Path(__file__).resolve().parents[2]
MAPPED = ("modeling", "configuration", "tokenization", "scripts")
STEPS = 200
COMMAND = "scripts/main_job.py --max_steps {steps} --max_train_minutes 100000 --seed 0 --output_dir {output}"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def worktree(commit: str) -> Path:
    """A worktree of `commit` under runs/, its mapped folders linked into its transformer_mt/."""
    path = REPO / "runs" / "bitcheck-worktrees" / commit
    if not path.is_dir():
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(path), commit], check=True)
    for name in MAPPED:
        link = path / "transformer_mt" / name
        if not link.exists():
            link.symlink_to(Path("..") / name)
    return path


def run_at(commit: str, steps: int) -> dict:
    """The fixed-step run at `commit`: the hashes of its weights and test translations, its test BLEU."""
    tree = worktree(commit)
    output = REPO / "runs" / f"bitcheck-{commit}"
    if not (output / "model.safetensors").is_file():
        environment = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        command = [sys.executable, *COMMAND.format(steps=steps, output=output).split()]
        subprocess.run(command, cwd=tree, env=environment, check=True)
    results = json.loads((output / "all_results.json").read_text(encoding="utf-8"))
    return {
        "model.safetensors": sha256(output / "model.safetensors"),
        "test_predictions.txt": sha256(output / "test_predictions.txt"),
        "test_bleu": results.get("test_bleu", results.get("predict_bleu")),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", nargs=2, required=True, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--output", type=Path, required=True, help="the JSON to write")
    args = parser.parse_args(argv)
    commits = [
        subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", c], capture_output=True, text=True, check=True
        ).stdout.strip()
        for c in args.commits
    ]
    gflops, started = round(matmul_gflops(), 1), time.perf_counter()
    runs = {commit: run_at(commit, args.steps) for commit in commits}
    before, after = runs.values()
    report = {
        "what": "the same fixed-step main-job run before and after a restructuring, each from its own worktree",
        "command": "OMP_NUM_THREADS=1 python " + COMMAND.format(steps=args.steps, output="runs/bitcheck-COMMIT"),
        "before": commits[0],
        "after": commits[1],
        "matmul_gflops_at_start": gflops,
        "seconds": round(time.perf_counter() - started),
        "runs": runs,
        "equal": before["model.safetensors"] == after["model.safetensors"]
        and before["test_predictions.txt"] == after["test_predictions.txt"],
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
