"""The training pipeline end to end on ~200 real pairs: loss, checkpoints, resume, saved model, accelerate."""

import json
import os
import subprocess
import sys

import pytest
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, pipeline

from transformer_mt import training, translate

from .utils import DATA, REPO, SCRIPTS, TINY


def run(output_dir, *flags):
    return training.run(*training.parse_args([*TINY, "--output_dir", str(output_dir), *map(str, flags)]))


def test_loss_falls_and_the_saved_model_loads_and_translates(tmp_path, position_type):
    output_dir = tmp_path / "run"
    trainer = run(output_dir, "--do_train", "--do_predict", "--predict_with_generate", "--max_steps", 60,
                  "--position_embedding_type", position_type, "--save_strategy", "no")
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    assert len(losses) == 12
    assert losses[-1] < losses[0] - 1.0, losses  # more than one nat per token lower

    test = json.loads((output_dir / "test_results.json").read_text())
    assert 0 <= test["test_bleu"] <= 100 and 0 <= test["test_chrf"] <= 100
    assert len((output_dir / "test_predictions.txt").read_text().splitlines()) == 16

    model = AutoModelForSeq2SeqLM.from_pretrained(output_dir)
    tokenizer = AutoTokenizer.from_pretrained(output_dir)
    assert model.config.position_embedding_type == position_type and model.config.d_model == 32
    assert model.config.vocab_size == len(tokenizer) and model.generation_config.num_beams == 2
    sentences = ["Click the Save button.", "Close the window."]
    translations = translate(model, tokenizer, sentences)
    assert len(translations) == 2 and all(isinstance(t, str) for t in translations)
    translator = pipeline("translation", model=str(output_dir), tokenizer=str(output_dir))
    assert [r["translation_text"].strip() for r in translator(sentences)] == translations


def test_checkpoint_resume_finishes_the_run(tmp_path):
    output_dir = tmp_path / "run"
    run(output_dir, "--do_train", "--max_steps", 20, "--save_steps", 10)
    checkpoint = output_dir / "checkpoint-20"
    assert (checkpoint / "model.safetensors").exists() and (checkpoint / "trainer_state.json").exists()
    assert not (checkpoint / "pytorch_model.bin").exists()  # weights as safetensors; the trainer's own state
    # (optimizer.pt, rng_state.pth) is read back with torch.load(weights_only=True)

    resumed = run(output_dir, "--do_train", "--max_steps", 30, "--save_steps", 10,
                  "--resume_from_checkpoint", checkpoint)
    assert resumed.state.global_step == 30
    logged_steps = [e["step"] for e in resumed.state.log_history if "loss" in e]
    assert logged_steps == [5, 10, 15, 20, 25, 30]  # history of the first run carried over, then continued
    assert (output_dir / "checkpoint-30").exists()
    AutoModelForSeq2SeqLM.from_pretrained(output_dir)


def test_a_new_run_does_not_replace_a_saved_model(tmp_path):
    output_dir = tmp_path / "run"
    run(output_dir, "--do_train", "--max_steps", 2, "--save_strategy", "no")
    saved = (output_dir / "model.safetensors").read_bytes()
    with pytest.raises(FileExistsError, match="is not empty; pass --overwrite_output_dir true"):
        run(output_dir, "--do_train", "--max_steps", 2, "--save_strategy", "no", "--learning_rate", 1e-2)
    assert (output_dir / "model.safetensors").read_bytes() == saved
    run(output_dir, "--do_train", "--max_steps", 2, "--save_strategy", "no", "--learning_rate", 1e-2,
        "--overwrite_output_dir", "true")
    assert (output_dir / "model.safetensors").read_bytes() != saved


def test_time_budget_stops_training_and_still_saves(tmp_path):
    output_dir = tmp_path / "run"
    trainer = run(output_dir, "--do_train", "--max_steps", 100_000, "--max_train_minutes", 0.05,
                  "--save_strategy", "no")
    assert 0 < trainer.state.global_step < 100_000
    assert (output_dir / "model.safetensors").exists()


def test_two_processes_under_accelerate_save_one_model(tmp_path):
    output_dir = tmp_path / "run"
    env = dict(os.environ, OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
    command = [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", "2", "--num_machines", "1",
               "--mixed_precision", "no", "--dynamo_backend", "no", "--cpu",
               str(SCRIPTS / "train.py"), *TINY, "--output_dir", str(output_dir), "--do_train",
               "--max_steps", "4", "--save_strategy", "no"]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((output_dir / "train_results.json").read_text())["train_runtime"] > 0
    assert list(output_dir.glob("*.safetensors")) == [output_dir / "model.safetensors"]
    state = json.loads((output_dir / "trainer_state.json").read_text())
    assert state["global_step"] == 4
    AutoModelForSeq2SeqLM.from_pretrained(output_dir)


@pytest.mark.parametrize("script", ["train.py", "translate.py", "main_job.py"])
def test_help_works(script):
    result = subprocess.run([sys.executable, str(SCRIPTS / script), "--help"], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0 and "usage:" in result.stdout


@pytest.mark.parametrize(
    "argv, message",
    [
        (["train.py", "--data", "/nonexistent/corpus", "--output_dir", "out"], "/nonexistent/corpus"),
        (["train.py", "--data", str(DATA), "--output_dir", "out", "--no_such_flag", "1"], "--no_such_flag"),
        (["translate.py", "--model", "/nonexistent/model", "Hello"], "--model '/nonexistent/model' is not a directory"),
        (["translate.py", "--model", str(REPO), "--input", "/nonexistent.txt"], "--input '/nonexistent.txt' does not"),
    ],
)
def test_bad_path_or_unknown_flag_gives_a_clear_message(argv, message, tmp_path):
    result = subprocess.run([sys.executable, str(SCRIPTS / argv[0]), *argv[1:]], capture_output=True,
                            text=True, timeout=120, cwd=tmp_path)
    assert result.returncode != 0
    assert message in result.stderr
    assert "Traceback" not in result.stderr
