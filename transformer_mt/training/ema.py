"""An exponential moving average of the weights while training (fairseq's EMA, OpenNMT's `average_decay`, Marian's
`--exponential-smoothing`): torch's `AveragedModel` with its EMA function, updated after every optimizer step.

The average is the model a run evaluates, keeps and saves: validations (and so the best-checkpoint choice) score
it, a checkpoint's model.safetensors holds it (so that `--load_best_model_at_end`, averaging the last checkpoints
and `scripts/average_checkpoints.py` all work on it unchanged), and the model saved at the end is it. The weights
the optimizer trains live beside it in the checkpoint's TRAINING_WEIGHTS file, with the average's update count and
decay, so that a killed run resumes bit-identically.
"""

import contextlib
import os

import torch
from safetensors import safe_open
from safetensors.torch import load_model, save_model
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn


TRAINING_WEIGHTS = "training_weights.safetensors"  # in each checkpoint of a run with --ema_decay


class WeightEMA:
    """The moving average of `model`'s parameters: `ema = decay * ema + (1 - decay) * weights` after each step,
    starting from the weights of the first step."""

    def __init__(self, model: torch.nn.Module, decay: float):
        if not 0 < decay < 1:
            raise ValueError(f"ema_decay must be in (0, 1), e.g. 0.999, got {decay}.")
        self.decay = decay
        self.averaged = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(decay))

    @torch.no_grad()
    def update(self, model: torch.nn.Module) -> None:
        self.averaged.update_parameters(model)

    @torch.no_grad()
    def copy_to(self, model: torch.nn.Module) -> None:
        """Put the average into `model`'s parameters (the first step's weights if it has not been updated yet)."""
        if int(self.averaged.n_averaged):
            for weights, average in zip(model.parameters(), self.averaged.module.parameters(), strict=True):
                weights.copy_(average)

    @contextlib.contextmanager
    def swapped_in(self, model: torch.nn.Module):
        """`model` holds the average inside the block and its own weights again after it, bit for bit."""
        with torch.no_grad():
            trained = [weights.detach().clone() for weights in model.parameters()]
        self.copy_to(model)
        try:
            yield model
        finally:
            with torch.no_grad():
                for weights, kept in zip(model.parameters(), trained, strict=True):
                    weights.copy_(kept)

    def save_training_weights(self, model: torch.nn.Module, checkpoint_dir: str) -> None:
        """`model`'s own (trained) weights, the update count and the decay, into checkpoint_dir/TRAINING_WEIGHTS."""
        os.makedirs(checkpoint_dir, exist_ok=True)
        save_model(
            model,
            os.path.join(checkpoint_dir, TRAINING_WEIGHTS),
            metadata={"n_averaged": str(int(self.averaged.n_averaged)), "ema_decay": repr(self.decay)},
        )

    @torch.no_grad()
    def resume(self, model: torch.nn.Module, checkpoint_dir: str) -> None:
        """Continue from a checkpoint whose weights `model` has just loaded (the average): they become the
        average, and the trained weights of TRAINING_WEIGHTS go back into `model`."""
        for average, weights in zip(self.averaged.module.parameters(), model.parameters(), strict=True):
            average.copy_(weights)
        path = os.path.join(checkpoint_dir, TRAINING_WEIGHTS)
        load_model(model, path)
        self.averaged.n_averaged.fill_(int(saved_ema_settings(checkpoint_dir)["n_averaged"]))


def saved_ema_settings(checkpoint_dir: str) -> dict | None:
    """{"n_averaged", "ema_decay"} of a checkpoint saved with --ema_decay, or None for one saved without."""
    path = os.path.join(checkpoint_dir, TRAINING_WEIGHTS)
    if not os.path.exists(path):
        return None
    with safe_open(path, "pt") as f:
        return f.metadata() or {}


def check_resume(checkpoint_dir: str, ema_decay: float | None) -> None:
    """A resumed run keeps its checkpoint's moving average, or its absence: a different --ema_decay is refused."""
    saved = saved_ema_settings(checkpoint_dir)
    if saved is not None and "ema_decay" not in saved:
        raise ValueError(
            f"{checkpoint_dir}/{TRAINING_WEIGHTS} does not say its decay (no ema_decay in its metadata): "
            "it was not written by --ema_decay; resume from another checkpoint"
        )
    saved_decay = float(saved["ema_decay"]) if saved else None
    if saved_decay == ema_decay:
        return
    if saved_decay is None:
        raise ValueError(
            f"--ema_decay {ema_decay}: {checkpoint_dir} was saved without a moving average of the "
            "weights; resuming continues that run: drop the flag, or start a new run."
        )
    given = f"--ema_decay {ema_decay}" if ema_decay is not None else "no --ema_decay"
    raise ValueError(
        f"{given}, but {checkpoint_dir} was saved with --ema_decay {saved_decay} (its model.safetensors "
        f"holds the average, {TRAINING_WEIGHTS} the trained weights); resuming continues that run: "
        f"pass --ema_decay {saved_decay}, or start a new run."
    )
