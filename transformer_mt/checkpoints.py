"""Checkpoint directories: what training, the bridges and the Hub push read and write alike."""

import json
import os
import shutil


def check_output_dir(output_dir: str | os.PathLike, overwrite: bool, flag: str = "--overwrite") -> None:
    """Nothing a user saved is replaced silently: writing into a non-empty directory needs `overwrite`.

    `flag` names the option that sets `overwrite` in the caller's interface, so the message says what to pass.
    """
    output_dir = os.fspath(output_dir)
    if os.path.exists(output_dir) and not os.path.isdir(output_dir):
        raise FileExistsError(f"Output path {output_dir!r} is a file, not a directory.")
    if os.path.isdir(output_dir) and os.listdir(output_dir) and not overwrite:
        raise FileExistsError(f"Output directory {output_dir!r} is not empty; pass {flag} to write into it anyway.")


def read_config(directory: str | os.PathLike, expected_model_type: str, label: str) -> dict:
    """config.json of the checkpoint in `directory`, which must be of `model_type` `expected_model_type`."""
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"{label} checkpoint directory {directory!r} does not exist.")
    config_file = os.path.join(directory, "config.json")
    if not os.path.isfile(config_file):
        raise FileNotFoundError(f"{directory!r} has no config.json.")
    with open(config_file, encoding="utf-8") as f:
        config = json.load(f)
    if config.get("model_type") != expected_model_type:
        raise ValueError(f"{directory!r} holds a {config.get('model_type')!r} checkpoint, not a {label} "
                         f"({expected_model_type!r}) one.")
    return config


def copy_tokenizer_files(source_dir: str, output_dir: str, names, tokenizer_class: str) -> None:
    """Copy a checkpoint's own tokenizer files byte for byte and pin their class in tokenizer_config.json.

    Without `tokenizer_class`, AutoTokenizer would go by config.json's model type, now transformer_mt, and load
    our byte-level BPE tokenizer class instead of the checkpoint's own.
    """
    os.makedirs(output_dir, exist_ok=True)
    for name in names:
        if os.path.isfile(os.path.join(source_dir, name)):
            shutil.copy2(os.path.join(source_dir, name), os.path.join(output_dir, name))
    path = os.path.join(output_dir, "tokenizer_config.json")
    tokenizer_config = {}
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            tokenizer_config = json.load(f)
    if "tokenizer_class" not in tokenizer_config:
        tokenizer_config["tokenizer_class"] = tokenizer_class
        with open(path, "w", encoding="utf-8") as f:
            json.dump(tokenizer_config, f, indent=2)
