"""Which engine translates a saved model, and the CTranslate2 exports it reads, made once into a cache.

- `load_engine(path, settings)`: what the commands, the server, scoring and alignments decode with, as an
  `EngineSettings` says (`engines.settings`: the engine, device, threads, export; an engine's name alone will do).
  `path` is a saved model directory; `load_export` reads a CTranslate2 export (a directory holding model.bin, which
  carries the model's config and generation config). "auto" takes CTranslate2 where it is installed (the `[fast]`
  extra), the position type exports and the model's generation config maps, else generate(), and says why in
  `Engine.reason`. A CTranslate2 engine reads an export given by path, or one made once into a cache folder keyed by
  a hash of everything the export is made of (`cached_export`), so it is never stale. Every engine loaded from a
  directory carries the calibration saved beside it (`attach_calibration`), attached in one place.
- `resolve_engine(model, tokenizer, engine)`: the same for the Python API, which is handed a model object: CTranslate2
  is used only when that object's weights are the ones saved in its directory (never an export of other weights).
"""

import contextlib
import hashlib
import importlib.util
import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from ..checkpoints import load_translator, tokenizer_files
from ..modeling.positional_embeddings import position_strategy_class
from ..quality import Calibration, CalibrationError
from ..version import __version__
from .generate import GenerateEngine
from .settings import DEVICES, EngineSettings


logger = logging.getLogger(__name__)


def unsupported_settings(generation_config, num_beams: int | None = None) -> list[str]:
    """The generation config's settings that CTranslate2 would not decode as generate() does (searching with
    `num_beams`, else the config's); [] when none."""
    found = []
    if (num_beams or generation_config.num_beams or 1) > 1 and generation_config.early_stopping is not True:
        found.append(
            f"early_stopping={generation_config.early_stopping!r} with beam search (CTranslate2 stops as "
            "early_stopping=True)"
        )
    # bad_words_ids map to suppress_sequences; a forced </s> acts only at the length bound, where generate() writes
    # </s> and CTranslate2 stops: the same text (Opus-MT models carry both)
    forced_eos = generation_config.forced_eos_token_id
    if forced_eos is not None and forced_eos != generation_config.eos_token_id:
        found.append(f"forced_eos_token_id={forced_eos!r}")
    for name in ("forced_bos_token_id", "suppress_tokens", "min_new_tokens", "begin_suppress_tokens", "sequence_bias"):
        if getattr(generation_config, name, None):
            found.append(f"{name}={getattr(generation_config, name)!r}")
    if (generation_config.min_length or 0) > 0:
        found.append(f"min_length={generation_config.min_length}")
    return found


def fast_engine_problem(config, generation_config, num_beams: int | None = None) -> str | None:
    """Why this model cannot translate with CTranslate2 as generate() does (with `num_beams`, else its generation
    config's), or None when it can."""
    if importlib.util.find_spec("ctranslate2") is None:
        return "CTranslate2 is not installed (pip install 'transformer-mt[fast]')"
    from ..bridges.ctranslate2 import export_problem  # needs ctranslate2, found above

    positions = position_strategy_class(config).ctranslate2_problem
    if positions is not None:
        return f"{config.position_embedding_type} positions do not export to CTranslate2: {positions}"
    problem = export_problem(config)
    if problem is not None:
        return problem.rstrip(".")
    unsupported = unsupported_settings(generation_config, num_beams)
    if unsupported:
        return "its generation config has " + "; ".join(unsupported)
    return None


def default_cache_dir() -> Path:
    """$TRANSFORMER_MT_CACHE, else $XDG_CACHE_HOME/transformer_mt, else ~/.cache/transformer_mt."""
    if os.environ.get("TRANSFORMER_MT_CACHE"):
        return Path(os.environ["TRANSFORMER_MT_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "transformer_mt"


EXPORT_INPUTS = (
    "model.safetensors",
    "config.json",
    "generation_config.json",
    "target_tokenizer.json",
    "special_tokens_map.json",
)


def export_key(model_dir: str, quantization: str | None) -> str:
    """A hash of everything an export is made of: the weights, config, generation config and tokenizer files, the
    quantization, the CTranslate2 and transformer-mt versions and the export's format."""
    import ctranslate2

    from ..bridges.ctranslate2 import EXPORT_FORMAT

    digest = hashlib.sha256(f"{quantization}|{ctranslate2.__version__}|{__version__}|{EXPORT_FORMAT}".encode())
    paths = [os.path.join(model_dir, name) for name in EXPORT_INPUTS] + tokenizer_files(model_dir)
    for path in sorted(set(paths)):
        digest.update(os.path.basename(path).encode() + b"\0")
        if os.path.isfile(path):
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()[:32]


def cached_export(
    model_dir: str,
    quantization: str | None = None,
    cache_dir: str | os.PathLike | None = None,
    main_process_first: Callable | None = None,
) -> str:
    """The CTranslate2 export of `model_dir` from the cache, made there first when it is not (under a file lock, so
    that processes started together make it once; staged and renamed into place, so a reader never sees half of
    one). `main_process_first`: accelerate's context manager, so that under a launch the main process exports."""
    from filelock import FileLock

    from ..bridges.ctranslate2 import export_ctranslate2

    root = Path(cache_dir or default_cache_dir()) / "ctranslate2"
    target = root / export_key(model_dir, quantization)
    if (target / "model.bin").is_file():
        return str(target)
    root.mkdir(parents=True, exist_ok=True)
    with main_process_first() if main_process_first else contextlib.nullcontext(), FileLock(f"{target}.lock"):
        if not (target / "model.bin").is_file():
            logger.warning(
                f"Exporting {model_dir} to CTranslate2 ({quantization or 'float32'}) into {target} "
                "(once: later runs of these weights reuse it)."
            )
            staging = tempfile.mkdtemp(prefix=f".{target.name}-", dir=root)
            try:
                export_ctranslate2(model_dir, os.path.join(staging, "export"), quantization)
                os.replace(os.path.join(staging, "export"), target)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
    return str(target)


def resolve_device(device: str = "auto") -> str:
    """ "cpu" or "cuda" for `device` ("auto": cuda when torch sees a CUDA device, else cpu); "cuda" without one is a
    ValueError naming the flag."""
    import torch

    if device not in DEVICES:
        raise ValueError(f"--device must be one of {', '.join(DEVICES)}; got {device!r}.")
    available = torch.cuda.is_available()
    if device == "cuda" and not available:
        raise ValueError(
            "--device cuda: no CUDA device is visible here (torch.cuda.is_available() is False); use "
            "--device cpu, or auto (cuda where there is one)"
        )
    return "cuda" if device == "cuda" or (device == "auto" and available) else "cpu"


def load_engine(
    model_dir: str,
    settings: EngineSettings | str = EngineSettings(),
    *,
    model=None,
    tokenizer=None,
    main_process_first: Callable | None = None,
    sampling: bool = False,
    num_beams: int | None = None,
):
    """The engine the commands translate the model saved in `model_dir` with, as `settings` say (an engine's name
    alone: `EngineSettings(engine=name)`), with the calibration saved beside it; loaded strictly unless `model` and
    `tokenizer` loaded from it are given. `settings.engine`: "transformers", "ctranslate2" (an error saying why when
    it cannot), or "auto": CTranslate2 when it can, else generate(); `settings.device` for both engines (None: where
    `model` is, the CPU when loaded here). The call's own: `sampling`, whether the caller samples (auto then keeps
    generate()); `num_beams`, the beams it will ask for, if not the generation config's; `main_process_first`,
    accelerate's context manager, so that under a launch the main process makes the cached export."""
    settings = EngineSettings(engine=settings) if isinstance(settings, str) else settings
    if model is None:
        model, tokenizer = load_translator(model_dir)
    if settings.device is not None:  # else where the model is (a caller that placed it, as the translate command does)
        model.to(resolve_device(settings.device))
    kept = generate_reason(model_dir, model, settings, sampling, num_beams)
    if kept is not None:
        return attach_calibration(GenerateEngine(model, tokenizer, kept), model_dir)
    export_dir = settings.export_dir
    if export_dir is None:
        export_dir = cached_export(model_dir, settings.quantization, settings.cache_dir, main_process_first)
    elif not is_export(export_dir):
        raise FileNotFoundError(f"--ctranslate2_model {export_dir!r} holds no CTranslate2 model (model.bin).")
    reason = "asked for" if settings.engine == "ctranslate2" else "auto: CTranslate2 installed and the model exports"
    return attach_calibration(
        ctranslate2_engine(
            export_dir, tokenizer, model.config, model.generation_config, settings, reason, model.device.type
        ),
        model_dir,
    )


def generate_reason(
    model_dir: str, model, settings: EngineSettings, sampling: bool = False, num_beams: int | None = None
) -> str | None:
    """Why generate() decodes (the engine's `reason`), or None when CTranslate2 does; a ValueError saying why when
    `settings` ask for CTranslate2 and it cannot decode as generate() does."""
    if settings.engine == "transformers":
        return "asked for"
    problem = None if settings.export_dir else fast_engine_problem(model.config, model.generation_config, num_beams)
    if problem is None and sampling and settings.engine == "auto":
        problem = "sampling draws from another random generator than generate()'s"
    if problem is not None and settings.engine == "ctranslate2":
        raise ValueError(f"--engine ctranslate2 cannot translate {model_dir}: {problem}.")
    return None if problem is None else f"auto: CTranslate2 not used, {problem}"


def ctranslate2_engine(
    export_dir: str, tokenizer, config, generation_config, settings: EngineSettings, reason: str, device: str = "cpu"
):
    """A CTranslate2 engine over `export_dir` with `settings`' threads, on `device` ("cpu" or "cuda")."""
    from .ctranslate2 import CTranslate2Engine  # needs ctranslate2, which its callers found

    return CTranslate2Engine(
        export_dir,
        tokenizer,
        config,
        generation_config,
        intra_threads=settings.intra_threads,
        inter_threads=settings.inter_threads,
        reason=reason,
        device=device,
    )


def attach_calibration(engine, model_dir: str | None, model=None):
    """`engine` with the calibration saved beside its model (`quality.Calibration.load`) as `engine.calibration`;
    one fitted on other weights, or a `model` whose weights differ from the directory's, is refused by name:
    `engine.calibration_problem` says why (a warning now; an error when a confidence is asked for)."""
    engine.calibration, engine.calibration_problem = None, None
    if not model_dir or not os.path.isdir(model_dir):
        return engine
    try:
        engine.calibration = Calibration.load(model_dir)
    except CalibrationError as error:
        engine.calibration_problem = str(error)
        logger.warning(f"No confidence for this model: {error}")
        return engine
    differs = weights_differ(model, model_dir) if model is not None and engine.calibration is not None else None
    if differs:
        engine.calibration, engine.calibration_problem = None, f"the calibration beside it does not fit: {differs}"
    return engine


def is_export(path: str) -> bool:
    """Whether `path` is a CTranslate2 export (a directory holding model.bin) rather than a saved model."""
    return os.path.isfile(os.path.join(path, "model.bin"))


def load_export(export_dir: str, settings: EngineSettings = EngineSettings()):
    """A CTranslate2 engine over an export alone, with `settings`' threads and device (None: the CPU): its
    tokenizer, and the model config and generation config the export carries (`bridges.ctranslate2.
    export_ctranslate2` writes them beside the weights)."""
    from transformers import AutoTokenizer

    from ..bridges.ctranslate2 import read_export_settings  # needs ctranslate2, as the export does

    config, generation_config = read_export_settings(export_dir)
    device = "cpu" if settings.device is None else resolve_device(settings.device)
    return ctranslate2_engine(
        export_dir,
        AutoTokenizer.from_pretrained(export_dir),
        config,
        generation_config,
        settings,
        "an export given",
        device,
    )


def load_for_scoring(path: str):
    """The engine that scores a saved model or an export (`transformer_mt.evaluation`): generate() for a model
    directory, as its recorded scores were made; the export's own CTranslate2 engine for an export. One export so
    gives one answer wherever it is scored, translated or aligned."""
    return load_export(path) if is_export(path) else load_engine(path, "transformers")


def resolve_engine(model, tokenizer, engine="transformers"):
    """The engine `translate()` and the pipeline use for a model object: an engine given as one, generate() for
    "transformers", else `load_engine` from the model's directory, which must hold exactly this model's weights."""
    if not isinstance(engine, str):
        return engine
    if engine == "transformers":
        return GenerateEngine(model, tokenizer)
    directory = getattr(model, "name_or_path", None)
    problem = None if directory and os.path.isdir(directory) else "it was not loaded from a directory"
    problem = problem or weights_differ(model, directory)
    if problem is not None:
        if engine == "ctranslate2":
            raise ValueError(
                f"engine='ctranslate2' exports the model's saved files, and {problem}: save_pretrained "
                "it and load it from there, or use engine='transformers'."
            )
        return GenerateEngine(model, tokenizer, f"auto: CTranslate2 not used, {problem}")
    return load_engine(directory, engine, model=model, tokenizer=tokenizer)


def weights_differ(model, directory: str) -> str | None:
    """None when `model`'s tensors equal those saved in `directory`'s model.safetensors, else what differs."""
    import torch
    from safetensors.torch import load_file

    path = os.path.join(directory, "model.safetensors")
    if not os.path.isfile(path):
        return f"{directory} holds no model.safetensors"
    saved = load_file(path)
    state = model.state_dict()
    for name, tensor in saved.items():
        if name not in state or not torch.equal(state[name].detach().cpu(), tensor):
            return f"its weights differ from {path} (tensor {name})"
    return None


__all__ = [
    "attach_calibration",
    "cached_export",
    "ctranslate2_engine",
    "default_cache_dir",
    "export_key",
    "fast_engine_problem",
    "generate_reason",
    "is_export",
    "load_engine",
    "load_export",
    "load_for_scoring",
    "resolve_device",
    "resolve_engine",
    "unsupported_settings",
    "weights_differ",
]
