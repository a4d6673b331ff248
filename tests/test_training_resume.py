"""Resuming is exact and keeps the run's own tokenizer; damaged checkpoints and bad flags are named, not crashed on."""

import json
import multiprocessing
import os
import shutil
import time

import pytest
import torch
from safetensors.torch import load_file

from transformer_mt.scripts.train import main as train_main
from transformer_mt.training.ema import TRAINING_WEIGHTS

from .utils import DATA, command_env, saved_weights, train, train_command


# The main job's recipe in miniature: length-grouped batches, dropout, label smoothing, warmup + inverse sqrt.
RECIPE = [
    "--train_sampling_strategy",
    "group_by_length",
    "--dropout",
    "0.1",
    "--label_smoothing_factor",
    "0.1",
    "--lr_scheduler_type",
    "inverse_sqrt",
    "--warmup_steps",
    "5",
    "--adam_beta2",
    "0.98",
    "--max_grad_norm",
    "1.0",
    "--per_device_train_batch_size",
    "8",
]


def assert_same_weights(a, b):
    first, second = saved_weights(a), saved_weights(b)
    assert first.keys() == second.keys()
    for key in first:
        assert torch.equal(first[key], second[key]), key


def _train(argv: list[str], log: str) -> None:
    """scripts/train.py's main(argv) in a process of its own (`start_training`): one thread, its output to `log`."""
    with open(log, "w") as f:
        os.dup2(f.fileno(), 1)
        os.dup2(f.fileno(), 2)
    os.environ.update(command_env())  # the fork server's environment is that of the call that started it
    torch.set_num_threads(1)
    train_main(argv)


def start_training(output_dir, *flags) -> tuple[multiprocessing.Process, str]:
    """(process, log) of a training run as `train_command` gives it, in a process forked from multiprocessing's fork
    server: a process of its own like a subprocess (killed, it is killed alone), without importing torch and the
    package again (seconds each), as the benchmark harness starts its workers."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])  # read when the server starts (by the first call in this worker)
    log = f"{output_dir}.log"
    process = context.Process(target=_train, args=(train_command(output_dir, *flags)[2:], log))
    process.start()
    return process, log


def finish_training(output_dir, *flags) -> None:
    """Run a training run to its end (`start_training`); it must succeed."""
    process, log = start_training(output_dir, *flags)
    process.join(timeout=600)
    if process.exitcode is None:
        process.kill()
        process.join()
    assert process.exitcode == 0, open(log).read()[-3000:]


# Kill and resume: a run of STEPS steps is killed once it has saved checkpoint-KILLED_AT (past two epochs, mid-epoch in
# every case), with STEPS - KILLED_AT steps still to go, across another epoch's start; resumed, it ends where an
# unbroken run ends. LAST_CHECKPOINT: the last one saved before the end (STEPS is no multiple of SAVE_STEPS).
STEPS, SAVE_STEPS, KILLED_AT, LAST_CHECKPOINT = 70, 15, 45, "checkpoint-60"


@pytest.mark.slow  # kill and resume: three training processes a case
@pytest.mark.parametrize(
    "batches",
    [[], ["--max_tokens_per_batch", "192"], ["--joined_pairs_share", "0.25"], ["--ema_decay", "0.99"]],
    ids=["pairs", "token-batches", "joined-pairs", "ema"],
)
def test_a_killed_run_resumes_bit_identically_with_the_main_job_recipe(tmp_path, batches):
    # 10 (pairs), 12 (joined pairs) or 19 (token batches) steps an epoch: KILLED_AT is mid-epoch in each
    steps = ["--do_train", "--max_steps", str(STEPS), "--save_steps", str(SAVE_STEPS), *RECIPE, *batches]
    # Every run in a process of its own with one thread: the same kernels in the same order, or floats would differ
    # anyway.
    finish_training(tmp_path / "reference", *steps)

    killed = tmp_path / "killed"
    process, _ = start_training(killed, *steps)
    deadline = time.monotonic() + 300
    while not (killed / f"checkpoint-{KILLED_AT}" / "trainer_state.json").exists():
        assert process.is_alive() and time.monotonic() < deadline, "the run ended before it could be killed"
        time.sleep(0.02)
    process.kill()  # SIGKILL
    process.join()
    assert not (killed / "model.safetensors").exists()  # it did not finish

    finish_training(killed, *steps, "--resume_from_checkpoint", "last")
    assert json.loads((killed / "trainer_state.json").read_text())["global_step"] == STEPS
    assert_same_weights(killed, tmp_path / "reference")
    if "--ema_decay" in batches:  # the average is the saved model; the trained weights resumed exactly too
        assert_same_weights(killed / LAST_CHECKPOINT, tmp_path / "reference" / LAST_CHECKPOINT)
        trained = [load_file(run / LAST_CHECKPOINT / TRAINING_WEIGHTS) for run in (killed, tmp_path / "reference")]
        assert trained[0].keys() == trained[1].keys()
        assert all(torch.equal(trained[0][key], trained[1][key]) for key in trained[0])


@pytest.fixture
def run_with_checkpoints(trained_tiny_model):
    """(data, run): the session's 20-step run on DATA with checkpoints at 10 and 20 (conftest.trained_tiny_model).
    Read only: fresh_copy gives a test its own."""
    return DATA, trained_tiny_model


def fresh_copy(run_with_checkpoints, tmp_path):
    data, output_dir = run_with_checkpoints
    shutil.copytree(output_dir, tmp_path / "run")
    return data, tmp_path / "run"


def test_resuming_keeps_the_runs_tokenizer_although_the_data_changed(run_with_checkpoints, tmp_path):
    data, output_dir = fresh_copy(run_with_checkpoints, tmp_path)
    changed = tmp_path / "changed"
    shutil.copytree(data, changed)
    lines = (changed / "train.tsv").read_text(encoding="utf-8").splitlines()
    (changed / "train.tsv").write_text("\n".join([lines[0], *reversed(lines[1:])]) + "\n", encoding="utf-8")
    saved_tokenizer = (output_dir / "checkpoint-20" / "tokenizer.json").read_bytes()

    trainer = train(
        output_dir,
        "--data",
        changed,
        "--do_train",
        "--max_steps",
        "30",
        "--save_steps",
        "10",
        "--resume_from_checkpoint",
        output_dir / "checkpoint-20",
    )
    assert trainer.state.global_step == 30
    assert (output_dir / "tokenizer.json").read_bytes() == saved_tokenizer
    config = json.loads((output_dir / "config.json").read_text())
    assert (
        config["tokenizer_fingerprint"]
        == json.loads((output_dir / "checkpoint-20" / "config.json").read_text())["tokenizer_fingerprint"]
    )


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--d_model", "64"], "--d_model 64 differs from {checkpoint}'s d_model=32; resuming continues that model"),
        (
            ["--position_embedding_type", "learned"],
            "--position_embedding_type learned differs from {checkpoint}'s position_embedding_type='sinusoidal'",
        ),
        (["--tokenizer_vocab_size", "350"], "--tokenizer_vocab_size 350 differs from {checkpoint}'s tokenizer"),
        (["--tokenizer_name_or_path", "somewhere"], "--tokenizer_name_or_path is not used when resuming"),
    ],
)
def test_resuming_refuses_flags_that_change_the_model_in_one_line(
    run_with_checkpoints, tmp_path, capsys, flags, message
):
    data, output_dir = fresh_copy(run_with_checkpoints, tmp_path)
    checkpoint = output_dir / "checkpoint-20"
    before = sorted(p.name for p in output_dir.iterdir())
    with pytest.raises(SystemExit) as exit_info:
        train_main(
            [
                "--data",
                str(data),
                "--output_dir",
                str(output_dir),
                "--do_train",
                "--max_steps",
                "30",
                "--resume_from_checkpoint",
                str(checkpoint),
                *flags,
            ]
        )
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and error[0].startswith("error: ") and message.format(checkpoint=checkpoint) in error[0]
    assert sorted(p.name for p in output_dir.iterdir()) == before


def test_regularisation_may_change_when_resuming(run_with_checkpoints, tmp_path):
    data, output_dir = fresh_copy(run_with_checkpoints, tmp_path)
    trainer = train(
        output_dir,
        "--data",
        data,
        "--do_train",
        "--max_steps",
        "25",
        "--dropout",
        "0.3",
        "--resume_from_checkpoint",
        output_dir / "checkpoint-20",
    )
    assert trainer.state.global_step == 25 and trainer.model.config.dropout == 0.3


@pytest.mark.parametrize(
    "sizes",
    [["--tokenizer_vocab_size", "4000"], ["--tokenizer_vocab_size", "4000", "--decoder_vocab_size", "3000"]],
    ids=["joint", "separate"],
)
def test_a_corpus_that_yields_fewer_tokens_than_asked_resumes_with_the_runs_own_flags(tmp_path, capsys, sizes):
    """Eight pairs yield far fewer tokens than asked; resuming compares the flags with what the run asked for."""
    output_dir = tmp_path / "run"
    flags = ["--do_train", "--max_train_samples", "8", "--save_steps", "2", *sizes]
    first = train(output_dir, *flags, "--max_steps", "2")
    assert len(first.processing_class) < 4000 and first.model.config.decoder_vocab_size < 3000

    trainer = train(output_dir, *flags, "--max_steps", "4", "--resume_from_checkpoint", "last")
    assert trainer.state.global_step == 4

    with pytest.raises(SystemExit):  # a size the run did not ask for is still refused
        train_main(
            [
                "--data",
                str(DATA),
                "--output_dir",
                str(output_dir),
                *flags,
                "--tokenizer_vocab_size",
                "5000",
                "--max_steps",
                "6",
                "--resume_from_checkpoint",
                "last",
            ]
        )
    assert "--tokenizer_vocab_size 5000 differs from" in capsys.readouterr().err


def test_a_checkpoint_saved_before_the_vocabulary_request_was_recorded_resumes_and_records_it(
    run_with_checkpoints, tmp_path
):
    data, output_dir = fresh_copy(run_with_checkpoints, tmp_path)
    state_file = output_dir / "checkpoint-20" / "trainer_state.json"
    state = json.loads(state_file.read_text())
    del state["stateful_callbacks"]["VocabularyRequest"]
    state_file.write_text(json.dumps(state))

    trainer = train(
        output_dir,
        "--data",
        data,
        "--do_train",
        "--max_steps",
        "30",
        "--save_steps",
        "10",
        "--resume_from_checkpoint",
        output_dir / "checkpoint-20",
    )
    assert trainer.state.global_step == 30
    recorded = json.loads((output_dir / "checkpoint-30" / "trainer_state.json").read_text())["stateful_callbacks"]
    # without a record, what the run has stands for what it asked for
    assert recorded["VocabularyRequest"]["args"] == {
        "tokenizer_vocab_size": len(trainer.processing_class),
        "decoder_vocab_size": None,
    }


def damage(checkpoint, how: str) -> str:
    """Damage a checkpoint the way a kill during a save does; return the file now wrong."""
    if how == "no trainer state":
        (checkpoint / "trainer_state.json").unlink()
        return "trainer_state.json: missing"
    if how == "truncated weights":
        path = checkpoint / "model.safetensors"
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
        return "model.safetensors: truncated"
    if how == "truncated optimizer":
        path = checkpoint / "optimizer.pt"
        path.write_bytes(path.read_bytes()[:100])
        return "optimizer.pt: truncated or corrupt"
    path = checkpoint / "trainer_state.json"  # half-written JSON
    path.write_text(path.read_text()[:50])
    return "trainer_state.json: not valid JSON"


@pytest.mark.parametrize("how", ["no trainer state", "truncated weights", "truncated optimizer", "half-written state"])
def test_resuming_the_latest_skips_an_incomplete_checkpoint_and_names_it_when_asked_for(
    run_with_checkpoints, tmp_path, capsys, how
):
    data, output_dir = fresh_copy(run_with_checkpoints, tmp_path)
    problem = damage(output_dir / "checkpoint-20", how)

    with pytest.raises(SystemExit):
        train_main(
            [
                "--data",
                str(data),
                "--output_dir",
                str(output_dir),
                "--do_train",
                "--max_steps",
                "30",
                "--resume_from_checkpoint",
                str(output_dir / "checkpoint-20"),
            ]
        )
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and f"checkpoint-20/{problem}" in error[0] and "Traceback" not in error[0]

    trainer = train(
        output_dir,
        "--data",
        data,
        "--do_train",
        "--max_steps",
        "30",
        "--save_steps",
        "10",
        "--resume_from_checkpoint",
        "last",
    )
    assert trainer.state.global_step == 30
    history = [entry["step"] for entry in trainer.state.log_history if "loss" in entry]
    assert history == [5, 10, 15, 20, 25, 30]  # restarted from checkpoint-10's state


def test_the_latest_checkpoint_is_looked_for_in_the_output_directory(tmp_path, capsys):
    with pytest.raises(SystemExit):
        train_main(
            [
                "--data",
                str(DATA),
                "--output_dir",
                str(tmp_path / "none"),
                "--do_train",
                "--resume_from_checkpoint",
                "last",
            ]
        )
    assert "holds no complete checkpoint-* directory" in capsys.readouterr().err
