"""The language models' training runs as they go (issue 52): each run's validation scores so far, read from its
newest checkpoint, written as a small JSON beside the command that trains it, so that a session that ends mid-run
loses nothing it measured.

    python -m transformer_mt.experiments.language_runs --run runs/de-en --commit 9b8a081 \\
        --command "$(cat runs/de-en.command)" --output docs/results/languages/de-en-progress.json
"""

import argparse
import json
from pathlib import Path

from transformer_mt.checkpoints import newest_complete
from transformer_mt.machine import matmul_gflops


def progress(run: Path) -> dict:
    """The newest checkpoint's step and every validation so far (step, BLEU, chrF, loss)."""
    newest = newest_complete(run, 1)
    if not newest:
        raise FileNotFoundError(f"{run} holds no complete checkpoint yet")
    state = json.loads((newest[-1] / "trainer_state.json").read_text(encoding="utf-8"))
    evaluations = [
        {
            "step": entry["step"],
            "bleu": round(entry["eval_bleu"], 2),
            "chrf": round(entry["eval_chrf"], 2),
            "loss": round(entry["eval_loss"], 4),
        }
        for entry in state["log_history"]
        if "eval_bleu" in entry
    ]
    return {"step": state["global_step"], "max_steps": state["max_steps"], "validation": evaluations}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=Path, required=True, help="the run's output directory")
    parser.add_argument("--commit", required=True, help="the commit the run trains from (its pinned worktree)")
    parser.add_argument("--command", required=True, help="the command that trains (and resumes) it")
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args(argv)
    report = {
        "commit": args.commit,
        "command": args.command,
        "gflops": round(matmul_gflops(), 1),
        **progress(args.run),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
