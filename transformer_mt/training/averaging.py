"""Checkpoint averaging: the element-wise mean of the weights of a run's last checkpoints (fairseq's
average_checkpoints.py, Marian's exponential smoothing done after the fact), usually worth a few tenths of BLEU
over the last checkpoint alone.

The averaged model is written as a saved model directory: the mean weights, and the newest checkpoint's config,
generation config and tokenizer, so that `from_pretrained` loads it like the run's own output.
"""

import json
import logging
import os
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

# The listing lives with the other checkpoint checks; imported here too for `averaging.last_complete` and training.
from ..checkpoints import (
    RESUMABLE_FIELDS,
    check_output_dir,
    checkpoint_problems,
    last_complete,
    load_model_strictly,
    newest_complete,
    run_checkpoints,
)


logger = logging.getLogger(__name__)

# What a checkpoint holds for resuming training, not for the model: never copied into the averaged directory.
TRAINER_FILES = {"optimizer.pt", "scheduler.pt", "trainer_state.json", "training_args.bin", "scaler.pt"}
# Config fields that may differ between checkpoints of one run (a resumed run may change its regularisation).
MAY_DIFFER = RESUMABLE_FIELDS | {"transformers_version"}


def _model_config(checkpoint: Path) -> dict:
    with open(checkpoint / "config.json", encoding="utf-8") as f:
        config = json.load(f)
    return {key: value for key, value in config.items() if key not in MAY_DIFFER}


def check_compatible(checkpoints: list[Path]) -> None:
    """Every checkpoint complete, the first one's weights fitting its config, all of the same architecture and
    vocabulary as the first; else a ValueError that names the checkpoint and what differs."""
    problems = [problem for path in checkpoints for problem in checkpoint_problems(path)]
    if problems:
        raise ValueError("cannot average incomplete checkpoints: " + "; ".join(problems))
    load_model_strictly(checkpoints[0])  # its weights fit its config: every tensor there, none extra or misshaped
    reference = _model_config(checkpoints[0])
    for path in checkpoints[1:]:
        config = _model_config(path)
        differences = sorted(key for key in reference.keys() | config.keys() if reference.get(key) != config.get(key))
        if differences:
            what = ", ".join(f"{key}={config.get(key)!r} vs {reference.get(key)!r}" for key in differences)
            kind = "tokenizer" if differences == ["tokenizer_fingerprint"] else "config"
            raise ValueError(f"cannot average {path} with {checkpoints[0]}: their {kind} differs ({what}).")


def average_weights(checkpoints: list[Path], dtype: torch.dtype | None = None) -> dict[str, torch.Tensor]:
    """The element-wise mean of the checkpoints' model.safetensors, accumulated in float64, in their dtype (or, for
    floating-point tensors, in `dtype`)."""
    total, first = None, None
    for path in checkpoints:
        weights = load_file(path / "model.safetensors")
        if total is None:
            first = weights
            total = {key: tensor.to(torch.float64) for key, tensor in weights.items()}
            continue
        if weights.keys() != total.keys():
            raise ValueError(
                f"cannot average {path} with {checkpoints[0]}: they hold different tensors "
                f"({sorted(weights.keys() ^ total.keys())[:5]})."
            )
        for key, tensor in weights.items():
            if tensor.shape != total[key].shape:
                raise ValueError(
                    f"cannot average {path} with {checkpoints[0]}: {key} is {tuple(tensor.shape)} in one "
                    f"and {tuple(total[key].shape)} in the other."
                )
            total[key] += tensor.to(torch.float64)
    average = {}
    for key, tensor in total.items():
        average[key] = (tensor / len(checkpoints)).to(
            dtype if dtype and first[key].is_floating_point() else first[key].dtype
        )
        if first[key].is_floating_point() and not torch.isfinite(average[key]).all():
            raise ValueError(
                f"{key} does not fit in {average[key].dtype}: some of its averaged values become inf "
                "or nan; keep the checkpoints' own dtype."
            )
    return average


def average_checkpoints(
    checkpoints: list[str | os.PathLike],
    output_dir: str | os.PathLike,
    overwrite: bool = False,
    dtype: torch.dtype | None = None,
) -> Path:
    """Average `checkpoints` into `output_dir`, a model directory with the newest checkpoint's config, generation
    config and tokenizer; record which checkpoints went in (averaged_from.json). Returns `output_dir`.

    `dtype` (e.g. torch.float16) stores the weights smaller; the config keeps the training dtype, so that
    `from_pretrained` loads them back into it (float16 -> float32 is exact)."""
    checkpoints = [Path(path) for path in checkpoints]
    if not checkpoints:
        raise ValueError("no checkpoints to average: name some, or give a run directory and --last N.")
    check_compatible(checkpoints)
    check_output_dir(output_dir, overwrite=overwrite, flag="--overwrite")
    average = average_weights(checkpoints, dtype)  # before anything is written: a failure leaves no output behind
    output = Path(output_dir)
    output.mkdir(parents=True, exist_ok=True)
    newest = checkpoints[-1]
    for path in newest.iterdir():
        if (
            path.is_file()
            and path.name not in TRAINER_FILES
            and path.name != "model.safetensors"
            and not path.name.startswith("rng_state")
        ):
            shutil.copy2(path, output / path.name)
    save_file(average, output / "model.safetensors", metadata={"format": "pt"})
    (output / "averaged_from.json").write_text(
        json.dumps({"checkpoints": [str(path) for path in checkpoints]}, indent=2), encoding="utf-8"
    )
    return output


__all__ = [
    "average_checkpoints",
    "average_weights",
    "check_compatible",
    "last_complete",
    "newest_complete",
    "run_checkpoints",
]
