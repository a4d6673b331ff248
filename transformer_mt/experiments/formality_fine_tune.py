"""The weights of a formality fine-tune put in place of a shipped en→de model's (issue 52): the two en→de models were
made before `language_models` and carry hand-written cards, so their fine-tune ships here, weights and training
record only; the confidence and the scores are then measured again by `scripts/score.py` (the card's commands).

    python -m transformer_mt.experiments.formality_fine_tune --model models/transformer-mt-en-de-broad \\
        --stage runs/formality-rw-broad 5c7a622 --stage runs/formality-rw2-broad 9429743

- **Weights**: the last stage's output in float16 (`language_models.half_precision_copy`), with its configs and
  tokenizer (which now hold the `<formal>` and `<informal>` tags); the card and terms kept; `calibration.json` and
  `scores.json` left out until `scripts/score.py` measures them again (a stale confidence would be refused anyway).
- **Training record**: the model's `training_info.json` kept whole, each stage's own record (data, recipe,
  augmentation, side constraints, its data's origins with their licences, the commit it ran at and what it started
  from) appended to its `fine_tunes`.

The model is built beside the shipped one and takes its place only once whole.
"""

import argparse
import json
import shutil
from pathlib import Path

from transformer_mt.experiments.language_models import FINE_TUNE_INFO, half_precision_copy, licensed_sources


def stage_record(run: Path, commit: str, started_from: str, language: str) -> dict:
    """What a fine-tune stage adds to the shipped model's `fine_tunes`."""
    info = json.loads((run / "training_info.json").read_text(encoding="utf-8"))
    record = {key: info[key] for key in FINE_TUNE_INFO if key in info}
    record["data_sources"] = licensed_sources(info["data_sources"], language)
    return {**record, "commit": commit, "from": started_from}


def ship_weights(model: Path, stages: list[tuple[Path, str]], language: str = "de") -> dict:
    """Put the last of `stages` (run, commit; each started from the one before, the first from `model`) in place of
    `model`'s weights, configs and tokenizer, its card, terms and training record kept, the stages added to the
    record; returns the new training_info."""
    if not stages:
        raise ValueError("stages: give at least one fine-tune run with its commit")
    info = json.loads((model / "training_info.json").read_text(encoding="utf-8"))
    starts = [str(model), *(str(run) for run, _ in stages[:-1])]
    info["fine_tunes"] = info.get("fine_tunes", []) + [
        stage_record(run, commit, start, language) for (run, commit), start in zip(stages, starts)
    ]
    built = model.with_name(f"{model.name}.new")
    try:
        half_precision_copy(stages[-1][0], built)
        (built / "training_info.json").write_text(
            json.dumps(info, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        (built / "averaged_from.json").write_text(json.dumps({"checkpoints": [str(stages[-1][0])]}, indent=2) + "\n")
        for name in ("README.md", "terms.tsv"):  # kept over the run's; the confidence and scores are measured again
            if (model / name).is_file():
                shutil.copy2(model / name, built / name)
    except BaseException:
        shutil.rmtree(built, ignore_errors=True)
        raise
    replaced = model.with_name(f"{model.name}.replaced")
    model.rename(replaced)
    built.rename(model)
    shutil.rmtree(replaced)
    return info


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True, help="the shipped model whose weights are replaced")
    parser.add_argument(
        "--stage",
        nargs=2,
        action="append",
        required=True,
        metavar=("RUN", "COMMIT"),
        help="a fine-tune run and the commit it ran at, in order; the first started from --model",
    )
    args = parser.parse_args(argv)
    info = ship_weights(args.model, [(Path(run), commit) for run, commit in args.stage])
    print(f"{args.model}: {len(info['fine_tunes'])} fine-tunes recorded")


if __name__ == "__main__":
    main()
