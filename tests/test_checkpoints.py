"""Checkpoint directories: intact weights, complete checkpoints, and the tokenizer that belongs to the model."""

import logging

import pytest
from transformers import pipeline

from transformer_mt import train_tokenizer
from transformer_mt.checkpoints import checkpoint_problems, load_translator, safetensors_problem
from transformer_mt.tokenization import tokenizer_fingerprint

from .utils import SENTENCES


def test_an_intact_weights_file_has_no_problem_and_damage_is_named(model_dir):
    weights = model_dir / "model.safetensors"
    assert safetensors_problem(weights) is None
    data = weights.read_bytes()
    weights.write_bytes(data[:-1])
    assert safetensors_problem(weights).startswith(
        f"{weights}: truncated: {len(data) - 1} bytes, but its tensors need"
    )
    weights.write_bytes(b"\x01\x00")
    assert safetensors_problem(weights) == f"{weights}: truncated (2 bytes), not a safetensors file"
    weights.write_bytes(b"garbage!" * 4)
    assert "not a safetensors file, or truncated" in safetensors_problem(weights)


def test_a_saved_model_directory_is_not_a_complete_trainer_checkpoint(model_dir):
    assert checkpoint_problems(model_dir) == [
        f"{model_dir / 'trainer_state.json'}: missing",
        f"{model_dir / 'optimizer.pt'}: missing",
        f"{model_dir / 'scheduler.pt'}: missing",
    ]


def test_fingerprints_tell_vocabularies_apart_not_tokenizer_objects(model_dir):
    first = train_tokenizer(SENTENCES * 5, vocab_size=300, min_frequency=1)
    again = train_tokenizer(SENTENCES * 5, vocab_size=300, min_frequency=1)
    other = train_tokenizer(
        list(reversed(SENTENCES)) * 3 + ["Öffnen Sie die Datei."] * 4, vocab_size=300, min_frequency=1
    )
    assert tokenizer_fingerprint(first) == tokenizer_fingerprint(again) != tokenizer_fingerprint(other)


def swap_in_another_tokenizer(model_dir):
    """Replace the model's tokenizer by one of the same kind trained on other text."""
    other = train_tokenizer(
        ["Öffnen Sie die Datei.", "Open the file.", "Drucken", "Print"] * 10, vocab_size=300, min_frequency=1
    )
    other.save_pretrained(model_dir)


def test_a_tokenizer_that_is_not_the_models_own_stops_a_command_and_is_warned_about_from_python(model_dir, caplog):
    with caplog.at_level(logging.WARNING, logger="transformer_mt"):
        load_translator(model_dir)
        pipeline("translation", model=str(model_dir))
    assert not caplog.records
    swap_in_another_tokenizer(model_dir)
    with pytest.raises(ValueError, match="is not the one the model was trained with"):
        load_translator(model_dir)  # what every command loads by (tests/test_strict_loading.py)
    with caplog.at_level(logging.WARNING, logger="transformer_mt"):
        pipeline("translation", model=str(model_dir))
    messages = [record.getMessage() for record in caplog.records]
    assert len(messages) == 1 and "is not the one the model was trained with" in messages[0]
