"""What the checkpoint bridges (convert_marian, convert_bert, export_ctranslate2) check and copy alike."""

import json
import os
import shutil


def read_model_type(directory: str, expected: str, label: str) -> dict:
    """config.json of the checkpoint in `directory`, which must be of `model_type` `expected`."""
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"{label} checkpoint directory {directory!r} does not exist.")
    config_file = os.path.join(directory, "config.json")
    if not os.path.isfile(config_file):
        raise FileNotFoundError(f"{directory!r} has no config.json.")
    with open(config_file, encoding="utf-8") as f:
        config = json.load(f)
    if config.get("model_type") != expected:
        raise ValueError(f"{directory!r} holds a {config.get('model_type')!r} checkpoint, not a {label} "
                         f"({expected!r}) one.")
    return config


def check_output_dir(output_dir: str, overwrite: bool, flag: str = "overwrite") -> None:
    """Nothing a user saved is replaced silently: a non-empty output directory needs `overwrite`."""
    if os.path.exists(output_dir) and not os.path.isdir(output_dir):
        raise FileExistsError(f"Output path {output_dir!r} is a file, not a directory.")
    if os.path.isdir(output_dir) and os.listdir(output_dir) and not overwrite:
        raise FileExistsError(f"Output directory {output_dir!r} is not empty; pass {flag}=True (--{flag}).")


def copy_tokenizer_files(source_dir: str, output_dir: str, names, tokenizer_class: str) -> None:
    """Copy the checkpoint's own tokenizer files byte for byte and pin their class in tokenizer_config.json.

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


def run_converter(parser, convert):
    """Run a bridge for the command line: a user's mistake ends with a one-line message, not a traceback."""
    try:
        return convert()
    except (OSError, ValueError) as error:  # OSError: missing paths and files, a non-empty output
        parser.exit(2, f"error: {error}\n")
