"""Checkpoint directories: what training, the bridges and the Hub push read and write alike, and a run's
`checkpoint-N` directories listed once (newest complete, for resuming and averaging)."""

import contextlib
import json
import logging
import os
import shutil
from pathlib import Path

from .tokenization import tokenizer_fingerprint


logger = logging.getLogger(__name__)


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
        raise ValueError(
            f"{directory!r} holds a {config.get('model_type')!r} checkpoint, not a {label} "
            f"({expected_model_type!r}) one."
        )
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


# What a resumed run may set differently from its checkpoint: regularisation, not the model's shape or vocabulary.
RESUMABLE_FIELDS = frozenset(
    {"dropout", "attention_dropout", "activation_dropout", "alignment_layer", "alignment_heads"}
)
# What a Trainer checkpoint needs to resume from; a kill during a save can leave any of them missing or truncated.
CHECKPOINT_FILES = ("config.json", "model.safetensors", "trainer_state.json", "optimizer.pt", "scheduler.pt")
LATEST = ("last", "latest", "true")  # --resume_from_checkpoint values that mean the newest complete checkpoint


def safetensors_problem(path: str | os.PathLike) -> str | None:
    """What is wrong with a safetensors file (truncated, not safetensors at all), or None; reads only its header."""
    path = os.fspath(path)
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        prefix = f.read(8)
        if len(prefix) < 8:
            return f"{path}: truncated ({size} bytes), not a safetensors file"
        header_length = int.from_bytes(prefix, "little")
        if header_length > size - 8:
            return f"{path}: not a safetensors file, or truncated (its header claims {header_length} bytes of {size})"
        try:
            header = json.loads(f.read(header_length))
        except ValueError:
            return f"{path}: corrupt safetensors header (not JSON)"
    end = max((entry["data_offsets"][1] for key, entry in header.items() if key != "__metadata__"), default=0)
    if 8 + header_length + end != size:
        return f"{path}: truncated: {size} bytes, but its tensors need {8 + header_length + end}"
    return None


def checkpoint_problems(checkpoint: str | os.PathLike) -> list[str]:
    """Every missing or damaged file of a Trainer checkpoint, each named with what is wrong (empty: complete)."""
    import zipfile

    checkpoint = os.fspath(checkpoint)
    if not os.path.isdir(checkpoint):
        return [f"{checkpoint}: no such checkpoint directory"]
    problems = [
        f"{os.path.join(checkpoint, name)}: missing"
        for name in CHECKPOINT_FILES
        if not os.path.isfile(os.path.join(checkpoint, name))
    ]
    for name in sorted(os.listdir(checkpoint)):
        path = os.path.join(checkpoint, name)
        if name.endswith(".json") and os.path.isfile(path):
            try:
                with open(path, encoding="utf-8") as f:
                    json.load(f)
            except ValueError as error:
                problems.append(f"{path}: not valid JSON ({error})")
        elif name.endswith(".safetensors"):
            problems.append(safetensors_problem(path))
        elif name.endswith((".pt", ".pth")):  # torch.save writes zip archives: a truncated one has no directory
            if not zipfile.is_zipfile(path):
                problems.append(f"{path}: truncated or corrupt (not a complete torch.save archive)")
    return [problem for problem in problems if problem]


def run_checkpoints(run_dir: str | os.PathLike) -> list[Path]:
    """The run's `checkpoint-N` directories, oldest first."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FileNotFoundError(f"{str(run_dir)!r} is not a directory (expected a training run's output_dir).")
    found = [
        path
        for path in run_dir.iterdir()
        if path.name.startswith("checkpoint-") and path.name.removeprefix("checkpoint-").isdigit()
    ]
    return sorted(found, key=lambda path: int(path.name.removeprefix("checkpoint-")))


def newest_complete(run_dir: str | os.PathLike, count: int) -> list[Path]:
    """Up to `count` of the newest complete checkpoints of a run, oldest first (incomplete ones skipped with a
    warning naming them)."""
    chosen = []
    for path in reversed(run_checkpoints(run_dir)):
        if len(chosen) == count:
            break
        problems = checkpoint_problems(path)
        if problems:
            logger.warning(f"Skipping the incomplete checkpoint {path}: {'; '.join(problems)}")
            continue
        chosen.append(path)
    return chosen[::-1]


def last_complete(run_dir: str | os.PathLike, count: int) -> list[Path]:
    """The `count` newest complete checkpoints of a run (incomplete ones skipped with a warning naming them)."""
    if count < 1:
        raise ValueError(f"--last must be >= 1, got {count}.")
    chosen = newest_complete(run_dir, count)[::-1]
    if len(chosen) == count:
        return chosen[::-1]
    raise ValueError(
        f"--last {count}: {run_dir} holds only {len(chosen)} complete checkpoint(s)"
        + (f" ({', '.join(path.name for path in chosen[::-1])})" if chosen else "")
        + "; keep more with --save_total_limit, or average fewer."
    )


def has_complete_checkpoint(run_dir: str | os.PathLike) -> bool:
    """Whether a run directory holds a complete checkpoint to resume from (silent: resuming warns about the rest)."""
    return os.path.isdir(run_dir) and any(not checkpoint_problems(path) for path in run_checkpoints(run_dir))


def resolve_checkpoint(resume_from_checkpoint: str, output_dir: str) -> str:
    """The checkpoint directory to resume from: the newest complete one in `output_dir` for "last" (incomplete
    ones are skipped with a warning), or the given one, which must be complete."""
    if resume_from_checkpoint.lower() not in LATEST:
        problems = checkpoint_problems(resume_from_checkpoint)
        if problems:
            raise ValueError(f"cannot resume from {resume_from_checkpoint}: " + "; ".join(problems))
        return resume_from_checkpoint
    candidates = run_checkpoints(output_dir) if os.path.isdir(output_dir) else []
    newest = newest_complete(output_dir, 1) if candidates else []
    if newest:
        return os.path.join(output_dir, newest[0].name)
    raise FileNotFoundError(
        f"--resume_from_checkpoint {resume_from_checkpoint}: {output_dir!r} holds no complete "
        f"checkpoint-* directory" + (f" ({len(candidates)} incomplete)" if candidates else "")
    )


def check_tokenizer_matches(config, tokenizer, where: str, strict: bool = False) -> None:
    """Warn (or with `strict`, raise a ValueError) when the tokenizer is not the one the model was trained with
    (its fingerprint is in the config)."""
    expected = getattr(config, "tokenizer_fingerprint", None)
    if expected is None:
        return
    found = tokenizer_fingerprint(tokenizer)  # hashes the whole vocabulary: once
    if found != expected:
        message = (
            f"{where}: the tokenizer ({len(tokenizer)} tokens, fingerprint {found}) is not the one the model "
            f"was trained with (fingerprint {expected}); its ids mean other tokens to the model."
        )
        if strict:
            raise ValueError(message)
        logger.warning(message)


def _named(keys, count: int = 3) -> str:
    keys = sorted(keys)
    return ", ".join(keys[:count]) + (f" and {len(keys) - count} more" if len(keys) > count else "")


@contextlib.contextmanager
def quiet_transformers():
    """transformers' loading progress bar and warnings off for a block (restored after it)."""
    from transformers.utils import logging as transformers_logging

    verbosity, bars = transformers_logging.get_verbosity(), transformers_logging.is_progress_bar_enabled()
    transformers_logging.set_verbosity_error()
    transformers_logging.disable_progress_bar()
    try:
        yield
    finally:
        transformers_logging.set_verbosity(verbosity)
        if bars:
            transformers_logging.enable_progress_bar()


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def tokenizer_files(model_dir: str) -> list[str]:
    """The tokenizer files saved in `model_dir`; a FileNotFoundError naming the directory when there are none."""
    found = [path for path in (os.path.join(model_dir, name) for name in TOKENIZER_FILES) if os.path.isfile(path)]
    if not found:
        raise FileNotFoundError(f"{model_dir!r} holds no tokenizer (tokenizer.json or tokenizer_config.json).")
    return found


def load_model_strictly(model_dir: str | os.PathLike, require_tokenizer: bool = False):
    """The TransformerMT model saved in `model_dir`, every tensor in its place: what commands load by.

    transformers' `from_pretrained` loads what fits and reports the rest (a missing tensor drawn at random, an
    unexpected one dropped, as when config.json has fewer layers than the weights); here each of these is a
    ValueError naming the files and the tensors: a config of another model type, a corrupt or truncated weights
    file, a tensor missing, unexpected, or of another shape than the config gives it.
    """
    from transformers import AutoModelForSeq2SeqLM

    model_dir = os.fspath(model_dir)
    if not os.path.isdir(model_dir):
        raise FileNotFoundError(f"{model_dir!r} is not a directory (expected a saved model with config.json).")
    config_file = os.path.join(model_dir, "config.json")
    if not os.path.isfile(config_file):
        raise FileNotFoundError(f"{model_dir!r} holds no saved model: config.json is missing.")
    try:
        read_config(model_dir, "transformer_mt", "TransformerMT")
    except json.JSONDecodeError as error:
        raise ValueError(f"{config_file}: not valid JSON ({error})") from error
    weights = os.path.join(model_dir, "model.safetensors")
    if os.path.isfile(weights):
        problem = safetensors_problem(weights)
        if problem:
            raise ValueError(problem)
    elif os.path.isfile(weights + ".index.json"):
        weights += ".index.json"
    else:
        raise FileNotFoundError(f"{model_dir!r} holds no model weights: model.safetensors is missing.")
    if require_tokenizer:
        tokenizer_files(model_dir)  # before the weights are read: the cheaper check first
    try:
        # every mismatch is reported (not raised mid-load), so that the error below names each tensor; transformers'
        # own progress bar and load report stay quiet: a command's stderr is the one line below, or nothing
        with quiet_transformers():
            model, report = AutoModelForSeq2SeqLM.from_pretrained(
                model_dir, output_loading_info=True, ignore_mismatched_sizes=True
            )
    except (RuntimeError, ValueError) as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(f"{weights} does not fit {config_file}: {reason}") from error
    problems = []
    if report["missing_keys"]:
        problems.append(
            f"{len(report['missing_keys'])} tensor(s) the config needs are missing ({_named(report['missing_keys'])})"
        )
    if report["unexpected_keys"]:
        problems.append(
            f"{len(report['unexpected_keys'])} tensor(s) the config has no place for "
            f"({_named(report['unexpected_keys'])})"
        )
    if report["mismatched_keys"]:
        shapes = [f"{key} {tuple(found)} vs {tuple(expected)}" for key, found, expected in report["mismatched_keys"]]
        problems.append(f"{len(shapes)} tensor(s) of another shape than the config gives them ({_named(shapes)})")
    if problems:
        raise ValueError(f"{weights} does not fit {config_file}: " + "; ".join(problems) + ".")
    return model


def load_tokenizer_strictly(model_dir: str | os.PathLike, config=None):
    """The tokenizer saved in `model_dir`, which must be readable and, when `config` records a fingerprint, the one
    the model was trained with; else a ValueError naming the file and what is wrong."""
    from transformers import AutoTokenizer

    model_dir = os.fspath(model_dir)
    files = " or ".join(tokenizer_files(model_dir))
    try:
        with quiet_transformers():
            tokenizer = AutoTokenizer.from_pretrained(model_dir)
    except Exception as error:  # whatever a damaged file raises, the command names the file
        raise ValueError(
            f"{files}: cannot be read as a tokenizer ({type(error).__name__}: "
            f"{str(error).strip().splitlines()[0] if str(error).strip() else 'no message'})"
        ) from error
    if config is not None:
        check_tokenizer_matches(config, tokenizer, model_dir, strict=True)
    return tokenizer


def load_translator(model_dir: str | os.PathLike):
    """The (model, tokenizer) saved in `model_dir`, loaded strictly: what every command translates, scores,
    exports, averages or pushes. Anything that does not belong together (see `load_model_strictly`), a missing or
    unreadable tokenizer, or one other than the model was trained with, is an error naming the file."""
    model = load_model_strictly(model_dir, require_tokenizer=True)
    return model, load_tokenizer_strictly(model_dir, model.config)
