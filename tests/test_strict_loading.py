"""Strict loading in every command: a model whose files do not belong together is named, never used.

transformers' `from_pretrained` loads what fits and reports the rest: a missing tensor is drawn at random, a config
with fewer layers than the weights drops the extra ones. Every command (translate, score, serve, export, average,
push) loads through `checkpoints.load_translator` instead, which stops with one line naming the file and what is wrong;
`from_pretrained` from Python keeps transformers' behaviour."""

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file
from transformers import AutoModelForSeq2SeqLM

from transformer_mt import train_tokenizer
from transformer_mt.checkpoints import load_translator
from transformer_mt.scripts import average_checkpoints, export_ctranslate2, push_to_hub, score, serve, translate

from .utils import DATA


TENSOR = "model.encoder.layers.0.fc1.weight"


def edit_config(model_dir, **changes):
    path = model_dir / "config.json"
    config = json.loads(path.read_text())
    config.update(changes)
    path.write_text(json.dumps(config))


def drop_tensor(model_dir):
    weights = load_file(model_dir / "model.safetensors")
    del weights[TENSOR]
    save_file(weights, model_dir / "model.safetensors", metadata={"format": "pt"})


def other_tokenizer(model_dir):
    train_tokenizer(
        ["Öffnen Sie die Datei.", "Open the file.", "Drucken", "Print"] * 10, vocab_size=300, min_frequency=1
    ).save_pretrained(model_dir)


def no_tokenizer(model_dir):
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (model_dir / name).unlink()


# damage -> (what it does to the model directory, words the error must hold besides the file's name)
DAMAGE = {
    "missing tensor": (drop_tensor, ["config.json", "1 tensor(s) the config needs are missing", TENSOR]),
    "config with fewer layers": (
        lambda d: edit_config(d, encoder_layers=1),
        ["config.json", "the config has no place for", "model.encoder.layers.1."],
    ),
    "config with more layers": (
        lambda d: edit_config(d, decoder_layers=3),
        ["config.json", "the config needs are missing", "model.decoder.layers.2."],
    ),
    "config of another shape": (lambda d: edit_config(d, encoder_ffn_dim=48), ["config.json", "fc1"]),
    "config of another model type": (
        lambda d: edit_config(d, model_type="bert"),
        ["holds a 'bert' checkpoint, not a TransformerMT"],
    ),
    "truncated weights": (
        lambda d: (d / "model.safetensors").write_bytes((d / "model.safetensors").read_bytes()[:-9]),
        ["model.safetensors: truncated"],
    ),
    "garbage tokenizer": (
        lambda d: (d / "tokenizer.json").write_text("{not json"),
        ["tokenizer.json", "cannot be read as a tokenizer"],
    ),
    "no tokenizer": (no_tokenizer, ["holds no tokenizer"]),
    "another tokenizer": (other_tokenizer, ["is not the one the model was trained with"]),
}


@pytest.fixture(params=list(DAMAGE))
def damaged(request, model_dir):
    damage, words = DAMAGE[request.param]
    damage(model_dir)
    return model_dir, words


def test_an_intact_model_loads_and_python_keeps_transformers_behaviour(model_dir):
    model, tokenizer = load_translator(model_dir)
    assert model.config.model_type == "transformer_mt" and len(tokenizer) == model.config.vocab_size
    drop_tensor(model_dir)
    model, report = AutoModelForSeq2SeqLM.from_pretrained(model_dir, output_loading_info=True)
    assert report["missing_keys"] == {TENSOR}  # transformers loads it, draws the tensor and reports it


def test_the_library_names_each_damage(damaged):
    model_dir, words = damaged
    with pytest.raises((ValueError, OSError)) as error:
        load_translator(model_dir)
    assert all(word in str(error.value) for word in words), str(error.value)
    assert str(model_dir) in str(error.value)


def fail(main, argv, capsys) -> str:
    """Run a command that must stop with one error line (exit status 2); return that line."""
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[-1].startswith("error: ")
    return lines[-1]


def fake_run(model_dir, run_dir):
    """A training run's directory with two complete checkpoints copied from `model_dir`."""
    for step in (1, 2):
        checkpoint = run_dir / f"checkpoint-{step}"
        shutil.copytree(model_dir, checkpoint)
        (checkpoint / "trainer_state.json").write_text(json.dumps({"global_step": step}))
        for name in ("optimizer.pt", "scheduler.pt"):
            torch.save({}, checkpoint / name)
    return run_dir


@pytest.mark.parametrize("command", ["translate", "score", "export", "push", "serve"])
def test_every_command_stops_on_a_damaged_model_with_one_line_naming_it(damaged, command, tmp_path, capsys):
    model_dir, words = damaged
    main, argv = {
        "translate": (translate.main, ["--model", str(model_dir), "--no_progress", "Click the Save button."]),
        "score": (score.main, ["--model", str(model_dir), "--data", str(DATA), "--max_samples", "2"]),
        "export": (export_ctranslate2.main, [str(model_dir), str(tmp_path / "ct2")]),
        "push": (push_to_hub.main, [str(model_dir), "user/model", "--dry_run"]),
        "serve": (serve.main, [str(model_dir), "--port", "5999"]),  # refused before it listens
    }[command]
    line = fail(main, argv, capsys)
    assert all(word in line for word in words), line
    assert not (tmp_path / "ct2").exists()


@pytest.mark.parametrize("damage", ["missing tensor", "config with fewer layers", "truncated weights"])
def test_averaging_stops_on_a_damaged_checkpoint(model_dir, damage, tmp_path, capsys):
    run = fake_run(model_dir, tmp_path / "run")
    DAMAGE[damage][0](run / "checkpoint-1")
    named = [str(run / "checkpoint-1"), str(run / "checkpoint-2")]  # --last would skip a truncated one, warning
    line = fail(average_checkpoints.main, [*named, "--output_dir", str(tmp_path / "avg")], capsys)
    assert "checkpoint-1" in line and all(word in line for word in DAMAGE[damage][1][1:]), line
    assert not (tmp_path / "avg").exists()


def test_averaging_names_a_later_checkpoint_that_lacks_a_tensor(model_dir, tmp_path, capsys):
    run = fake_run(model_dir, tmp_path / "run")
    drop_tensor(run / "checkpoint-2")
    line = fail(average_checkpoints.main, [str(run), "--last", "2", "--output_dir", str(tmp_path / "avg")], capsys)
    assert "checkpoint-2" in line and "they hold different tensors" in line and TENSOR in line, line
    assert not (tmp_path / "avg").exists()  # nothing written before the average is whole
