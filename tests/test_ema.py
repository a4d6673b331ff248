"""--ema_decay: a moving average of the weights is what a run validates, checkpoints, averages and saves; the trained
weights beside it resume the run (bit-identical resumption with it: test_training_resume.py)."""

import json

import pytest
import torch
from safetensors.torch import load_file

from transformer_mt.training.ema import TRAINING_WEIGHTS, WeightEMA

from .utils import saved_weights, tiny_model, train


DECAY = 0.8


@pytest.fixture(scope="module")
def ema_run(tmp_path_factory):
    """4 steps with --ema_decay, a checkpoint and a validation loss after each."""
    output_dir = tmp_path_factory.mktemp("ema") / "run"
    train(
        output_dir,
        "--do_train",
        "--max_steps",
        4,
        "--save_steps",
        1,
        "--eval_strategy",
        "steps",
        "--eval_steps",
        1,
        "--ema_decay",
        DECAY,
    )
    return output_dir


@pytest.mark.slow  # ema_run: a 4-step training run that validates and checkpoints at every step
def test_each_checkpoint_holds_the_average_of_the_trained_weights_so_far(ema_run):
    trained = [load_file(ema_run / f"checkpoint-{step}" / TRAINING_WEIGHTS) for step in range(1, 5)]
    averaged = [saved_weights(ema_run / f"checkpoint-{step}") for step in range(1, 5)]
    shared = [key for key in averaged[0] if key in trained[0]]
    assert len(shared) > 10
    expected = dict(trained[0])  # the first step's weights start the average
    for step in range(1, 4):
        expected = {key: torch.lerp(expected[key], trained[step][key], 1 - DECAY) for key in shared}
        for key in shared:
            torch.testing.assert_close(averaged[step][key], expected[key], rtol=0, atol=1e-7)
        assert any(not torch.equal(averaged[step][key], trained[step][key]) for key in shared)


@pytest.mark.slow  # ema_run: 4 training steps, each validated and checkpointed; then an evaluation run
def test_the_run_validates_and_saves_the_average(ema_run, tmp_path):
    final = saved_weights(ema_run)
    last = saved_weights(ema_run / "checkpoint-4")
    assert final.keys() == last.keys() and all(torch.equal(final[key], last[key]) for key in final)
    # the validation loss logged at step 2 is the loss of checkpoint-2's model (the average), not of its trained
    # weights
    logged = [
        entry["eval_loss"]
        for entry in json.loads((ema_run / "trainer_state.json").read_text())["log_history"]
        if entry.get("step") == 2 and "eval_loss" in entry
    ]
    scored = train(tmp_path / "average", "--model_name_or_path", ema_run / "checkpoint-2", "--do_eval")
    average_loss = scored.evaluate()["eval_loss"]
    assert logged == [pytest.approx(average_loss, rel=1e-6)]
    info = json.loads((ema_run / "training_info.json").read_text())
    assert info["recipe"]["ema_decay"] == DECAY


def test_the_average_is_swapped_in_and_out_bit_for_bit():
    model = tiny_model()
    ema = WeightEMA(model, 0.5)
    before = {key: value.clone() for key, value in model.state_dict().items()}
    ema.update(model)
    with torch.no_grad():
        for weights in model.parameters():
            weights.add_(1.0)
    ema.update(model)
    trained = {key: value.clone() for key, value in model.state_dict().items()}
    with ema.swapped_in(model):
        name = "model.encoder.layers.0.fc1.weight"
        torch.testing.assert_close(model.state_dict()[name], before[name] + 0.5)
    assert all(torch.equal(model.state_dict()[key], trained[key]) for key in trained)


@pytest.mark.slow  # ema_run: a 4-step training run that validates and checkpoints at every step
@pytest.mark.parametrize(
    "flags, message",
    [
        ([], "saved with --ema_decay 0.8"),
        (["--ema_decay", "0.9"], "pass --ema_decay 0.8"),
    ],
    ids=["without", "another-decay"],
)
def test_resuming_keeps_the_runs_average_or_refuses_by_name(ema_run, tmp_path, flags, message):
    with pytest.raises(ValueError, match=message):
        train(ema_run, "--do_train", "--max_steps", 6, "--resume_from_checkpoint", ema_run / "checkpoint-4", *flags)


def test_resuming_a_run_without_an_average_refuses_one(tmp_path):
    output_dir = tmp_path / "plain"
    train(output_dir, "--do_train", "--max_steps", 2, "--save_steps", 2)
    with pytest.raises(ValueError, match="saved without a moving average"):
        train(output_dir, "--do_train", "--max_steps", 4, "--resume_from_checkpoint", "last", "--ema_decay", 0.9)


@pytest.mark.parametrize("decay", ["0", "1", "1.5"])
def test_a_decay_outside_zero_to_one_is_refused_by_name(tmp_path, decay):
    with pytest.raises(ValueError, match=rf"--ema_decay must be in \(0, 1\).*got {decay}"):
        train(tmp_path / "run", "--do_train", "--max_steps", 2, "--ema_decay", decay)
