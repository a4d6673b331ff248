"""Engines: what turns sentences into hypotheses, scores given pairs and aligns them, behind one protocol (`Engine`).

- `GenerateEngine` ("transformers"): the model's own generate(), the reference (`engines.generate`).
- `CTranslate2Engine` ("ctranslate2"): a CTranslate2 export of the same model, decoding as generate() does, several
  times faster on a CPU (`engines.ctranslate2`; needs the `[fast]` extra, so it is imported from there).
- `load_engine`, `resolve_engine`, `load_for_scoring` and the export cache (`engines.loader`): which engine a saved
  model, a model object or an export translates with.
- `EngineSettings` (`engines.settings`): which engine, device, threads and export, as one object; the commands'
  engine flags defined once (`add_engine_arguments`, `engine_settings`).
"""

from .generate import GenerateEngine, hypothesis_scores
from .loader import (
    attach_calibration,
    cached_export,
    default_cache_dir,
    export_key,
    fast_engine_problem,
    is_export,
    load_engine,
    load_export,
    load_for_scoring,
    resolve_device,
    resolve_engine,
    unsupported_settings,
    weights_differ,
)
from .protocol import Engine
from .settings import DEFAULT_INTRA_THREADS, DEVICES, ENGINES, EngineSettings, add_engine_arguments, engine_settings


__all__ = [
    "DEFAULT_INTRA_THREADS",
    "DEVICES",
    "ENGINES",
    "EngineSettings",
    "add_engine_arguments",
    "attach_calibration",
    "cached_export",
    "default_cache_dir",
    "Engine",
    "engine_settings",
    "export_key",
    "fast_engine_problem",
    "GenerateEngine",
    "hypothesis_scores",
    "is_export",
    "load_engine",
    "load_export",
    "load_for_scoring",
    "resolve_device",
    "resolve_engine",
    "unsupported_settings",
    "weights_differ",
]
