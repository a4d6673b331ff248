"""Translation engines: what turns a list of sentences into hypotheses, behind one interface.

- `GenerateEngine` ("transformers"): the model's own generate() (`translation.translate_sentences`), the reference.
- `CTranslate2Engine` ("ctranslate2"): a CTranslate2 export of the same model (`bridges.ctranslate2`), which decodes
  as generate() does (greedy; beam search with `early_stopping=True`, as the models this package writes save it)
  several times faster on a CPU.
- `load_engine(model_dir, engine)`: what the commands and the server translate with. "auto" takes CTranslate2 where it
  is installed (the `[fast]` extra), the position type exports and the model's generation config maps, else
  generate(), and returns why in `Engine.reason`. A CTranslate2 engine reads an export given by path, or one made once
  into a cache folder keyed by a hash of everything the export is made of (`cached_export`), so it is never stale.
- `resolve_engine(model, tokenizer, engine)`: the same for the Python API, which is handed a model object: CTranslate2
  is used only when that object's weights are the ones saved in its directory (never an export of other weights).

Both engines take `translate_sentences`' arguments: sentences in, `num_return_sequences` `(text, score)`
hypotheses per sentence out, batches of similar length, the same length bound, the same warnings.
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

from .checkpoints import load_translator, tokenizer_files
from .translation import (
    Hypotheses,
    input_limit,
    length_batches,
    length_bound,
    translate_sentences,
    warn_long_inputs,
    warn_unended,
)


logger = logging.getLogger(__name__)

ENGINES = ("auto", "transformers", "ctranslate2")
# Measured on 2-vCPU machines (docs/translation.md, "Engines"): one intra-op thread per translation and one
# translation per core; two intra-op threads made CTranslate2 4.6x slower there.
DEFAULT_INTRA_THREADS = 1


class GenerateEngine:
    """generate() of a loaded model: `translation.translate_sentences`."""

    name = "transformers"
    workers = 1  # one call at a time: generate() already uses every core

    def __init__(self, model, tokenizer, reason: str = "asked for"):
        self.model, self.tokenizer, self.reason = model, tokenizer, reason
        self.config, self.generation_config = model.config, model.generation_config

    def translate_sentences(self, texts: list[str], names: list[str] | None = None, **options) -> list[Hypotheses]:
        return translate_sentences(self.model, self.tokenizer, texts, names, **options)

    def score_pairs(self, sources: list[str], targets: list[str], batch_size: int = 16,
                    length_penalty: float | None = None) -> list:
        """Given translations' scores (`pair_scoring.score_pairs`)."""
        from .pair_scoring import score_pairs

        return score_pairs(self.model, self.tokenizer, sources, targets, batch_size, length_penalty)

    def align_pairs(self, sources: list[str], targets: list[str], batch_size: int = 16, **tags) -> list:
        """Word alignments of given pairs (`alignment.align_pairs`)."""
        from .alignment import align_pairs

        return align_pairs(self.model, self.tokenizer, sources, targets, batch_size, **tags)


class CTranslate2Engine:
    """A CTranslate2 `Translator` over an export of a TransformerMT model, decoding as generate() does.

    `intra_threads` per translation and `inter_threads` translations at once (the length batches of one call are
    decoded concurrently); `compute_type` as CTranslate2 takes it ("default": as the export stores the weights).
    """

    name = "ctranslate2"

    def __init__(self, export_dir: str, tokenizer, config, generation_config, compute_type: str = "default",
                 intra_threads: int = DEFAULT_INTRA_THREADS, inter_threads: int | None = None,
                 reason: str = "asked for"):
        import ctranslate2

        from .bridges.ctranslate2 import SINUSOID_POSITIONS

        self.export_dir, self.tokenizer, self.reason = export_dir, tokenizer, reason
        self.config, self.generation_config = config, generation_config
        inter_threads = inter_threads or max(1, (os.cpu_count() or 1) // intra_threads)
        self.translator = ctranslate2.Translator(export_dir, device="cpu", compute_type=compute_type,
                                                 intra_threads=intra_threads, inter_threads=inter_threads)
        self.threads = {"intra_threads": intra_threads, "inter_threads": inter_threads}
        self.workers = inter_threads  # batches decoded at once
        # the decoder's positions: a learned table's rows, the exported sinusoid table's rows, or none (rotary)
        self.max_positions = {"learned": config.max_position_embeddings,
                              "sinusoidal": max(config.max_position_embeddings, SINUSOID_POSITIONS)}.get(
            config.position_embedding_type)

    def translate_sentences(self, texts: list[str], names: list[str] | None = None, *, num_beams: int | None = None,
                            batch_size: int = 16, max_new_tokens: int | None = None, num_return_sequences: int = 1,
                            scores: bool = False, target_prefix: list[str | None] | None = None,
                            bad_words: list[str] | None = None, target_language_id: int | None = None,
                            **generate_kwargs) -> list[Hypotheses]:
        from .bridges.ctranslate2 import hypothesis_text
        from .constraints import bad_words_ids, prefix_token_ids
        from .tokenization import target_side

        names = names or [str(number) for number in range(1, len(texts) + 1)]
        tokenizer = self.tokenizer
        limit = input_limit(tokenizer)
        ids = tokenizer(texts)["input_ids"] if texts else []
        warn_long_inputs([len(row) for row in ids], names, limit)
        if limit is not None:  # cut as the tokenizer truncates: the end token stays
            ids = [row if len(row) <= limit else row[: limit - 1] + row[-1:] for row in ids]
        options = self.decoding_options(num_beams, num_return_sequences, scores, generate_kwargs)
        target = target_side(tokenizer)
        suppressed = list(self.generation_config.bad_words_ids or []) + (
            bad_words_ids(tokenizer, bad_words) if bad_words else [])
        if suppressed:
            options["suppress_sequences"] = [target.convert_ids_to_tokens(ids) for ids in suppressed]
        prefixes = [target.convert_ids_to_tokens(ids) if ids else None
                    for ids in prefix_token_ids(tokenizer, target_prefix)] if target_prefix else None
        if target_language_id is not None:  # the target-language token first (tags.target_language_id)
            language = target.convert_ids_to_tokens(target_language_id)
            prefixes = [[language, *(prefix or [])] for prefix in (prefixes or [None] * len(texts))]
        pending = []
        for indices in length_batches([len(row) for row in ids], batch_size):
            budget = max_new_tokens or length_bound(max(len(ids[i]) for i in indices),
                                                    self.generation_config.max_length, self.max_positions)
            batch = [tokenizer.convert_ids_to_tokens(ids[i]) for i in indices]
            batch_prefixes = [prefixes[i] for i in indices] if prefixes else None
            pending.append((indices, budget, self.translator.translate_batch(
                batch, batch_prefixes, max_decoding_length=budget, max_batch_size=len(batch), max_input_length=0,
                asynchronous=True, **options)))
        translations = [None] * len(texts)
        for indices, budget, results in pending:
            for index, result in zip(indices, results):
                result = result.result()
                hypotheses = result.hypotheses[:num_return_sequences]
                translations[index] = [(hypothesis_text(tokenizer, tokens).strip(),
                                        result.scores[rank] if scores else None)
                                       for rank, tokens in enumerate(hypotheses)]
                ended = hypotheses[0][-1:] == [tokenizer.eos_token]
                if max_new_tokens is None and len(hypotheses[0]) >= budget and not ended:
                    warn_unended(names[index], budget)
        return translations

    def score_pairs(self, sources: list[str], targets: list[str], batch_size: int = 16,
                    length_penalty: float | None = None) -> list:
        """Given translations' scores through `score_batch` (`pair_scoring.score_pairs_ctranslate2`)."""
        from .pair_scoring import score_pairs_ctranslate2

        return score_pairs_ctranslate2(self.translator, self.tokenizer, sources, targets, self.generation_config,
                                       batch_size, length_penalty)

    def align_pairs(self, sources: list[str], targets: list[str], batch_size: int = 16, **tags) -> list:
        """Word alignments of given pairs through `return_attention` (`alignment.align_pairs_ctranslate2`)."""
        from .alignment import align_pairs_ctranslate2

        return align_pairs_ctranslate2(self.translator, self.tokenizer, sources, targets, batch_size, **tags)

    def decoding_options(self, num_beams, num_return_sequences: int, scores: bool, generate_kwargs: dict) -> dict:
        """translate_batch's keywords for generate()'s: the generation config's settings unless the call gives
        others; a control CTranslate2 lacks is a ValueError naming it."""
        from .bridges.ctranslate2 import translate_options

        settings = self.generation_config
        controls = {"length_penalty": settings.length_penalty, "no_repeat_ngram_size": settings.no_repeat_ngram_size
                    or None, "repetition_penalty": settings.repetition_penalty, **generate_kwargs}
        beams = num_beams or settings.num_beams or 1
        if beams > 1 and settings.early_stopping is not True and not generate_kwargs.get("do_sample"):
            raise ValueError(f"beam search ({beams} beams) on CTranslate2 stops as generate(early_stopping=True) "
                             f"does, and this model's generation config says early_stopping="
                             f"{settings.early_stopping!r}: set it to true in generation_config.json, or translate "
                             "with engine 'transformers'")
        options = translate_options(beams, num_return_sequences=num_return_sequences, **controls)
        options.pop("max_decoding_length")
        options["return_scores"] = scores
        return options


def unsupported_settings(generation_config, num_beams: int | None = None) -> list[str]:
    """The generation config's settings that CTranslate2 would not decode as generate() does (searching with
    `num_beams`, else the config's); [] when none."""
    found = []
    if (num_beams or generation_config.num_beams or 1) > 1 and generation_config.early_stopping is not True:
        found.append(f"early_stopping={generation_config.early_stopping!r} with beam search (CTranslate2 stops as "
                     "early_stopping=True)")
    # bad_words_ids map to suppress_sequences; a forced </s> acts only at the length bound, where generate() writes
    # </s> and CTranslate2 stops: the same text (Opus-MT models carry both)
    forced_eos = generation_config.forced_eos_token_id
    if forced_eos is not None and forced_eos != generation_config.eos_token_id:
        found.append(f"forced_eos_token_id={forced_eos!r}")
    for name in ("forced_bos_token_id", "suppress_tokens", "min_new_tokens", "begin_suppress_tokens",
                 "sequence_bias"):
        if getattr(generation_config, name, None):
            found.append(f"{name}={getattr(generation_config, name)!r}")
    if (generation_config.min_length or 0) > 0:
        found.append(f"min_length={generation_config.min_length}")
    return found


def fast_engine_problem(config, generation_config, num_beams: int | None = None) -> str | None:
    """Why this model cannot translate with CTranslate2 as generate() does (with `num_beams`, else its generation
    config's), or None when it can."""
    from .bridges.ctranslate2 import NOT_EXPORTED_POSITIONS

    if importlib.util.find_spec("ctranslate2") is None:
        return "CTranslate2 is not installed (pip install 'transformer-mt[fast]')"
    if config.position_embedding_type in NOT_EXPORTED_POSITIONS:
        return f"{config.position_embedding_type} positions do not export to CTranslate2"
    unsupported = unsupported_settings(generation_config, num_beams)
    if unsupported:
        return "its generation config has " + "; ".join(unsupported)
    return None


def default_cache_dir() -> Path:
    """$TRANSFORMER_MT_CACHE, else $XDG_CACHE_HOME/transformer_mt, else ~/.cache/transformer_mt."""
    if os.environ.get("TRANSFORMER_MT_CACHE"):
        return Path(os.environ["TRANSFORMER_MT_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "transformer_mt"


EXPORT_INPUTS = ("model.safetensors", "config.json", "generation_config.json", "target_tokenizer.json",
                 "special_tokens_map.json")


def export_key(model_dir: str, quantization: str | None) -> str:
    """A hash of everything an export is made of: the weights, config, generation config and tokenizer files, the
    quantization, the CTranslate2 and transformer-mt versions and the export's format."""
    import ctranslate2

    from . import __version__
    from .bridges.ctranslate2 import EXPORT_FORMAT

    digest = hashlib.sha256(f"{quantization}|{ctranslate2.__version__}|{__version__}|{EXPORT_FORMAT}".encode())
    paths = [os.path.join(model_dir, name) for name in EXPORT_INPUTS] + tokenizer_files(model_dir)
    for path in sorted(set(paths)):
        digest.update(os.path.basename(path).encode() + b"\0")
        if os.path.isfile(path):
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()[:32]


def cached_export(model_dir: str, quantization: str | None = None, cache_dir: str | os.PathLike | None = None,
                  main_process_first: Callable | None = None) -> str:
    """The CTranslate2 export of `model_dir` from the cache, made there first when it is not (under a file lock, so
    that processes started together make it once; staged and renamed into place, so a reader never sees half of
    one). `main_process_first`: accelerate's context manager, so that under a launch the main process exports."""
    from filelock import FileLock

    from .bridges.ctranslate2 import export_ctranslate2

    root = Path(cache_dir or default_cache_dir()) / "ctranslate2"
    target = root / export_key(model_dir, quantization)
    if (target / "model.bin").is_file():
        return str(target)
    root.mkdir(parents=True, exist_ok=True)
    with (main_process_first() if main_process_first else contextlib.nullcontext()), FileLock(f"{target}.lock"):
        if not (target / "model.bin").is_file():
            logger.warning(f"Exporting {model_dir} to CTranslate2 ({quantization or 'float32'}) into {target} "
                           "(once: later runs of these weights reuse it).")
            staging = tempfile.mkdtemp(prefix=f".{target.name}-", dir=root)
            try:
                export_ctranslate2(model_dir, os.path.join(staging, "export"), quantization)
                os.replace(os.path.join(staging, "export"), target)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
    return str(target)


def load_engine(model_dir: str, engine: str = "auto", *, model=None, tokenizer=None, export_dir: str | None = None,
                quantization: str | None = None, intra_threads: int = DEFAULT_INTRA_THREADS,
                inter_threads: int | None = None, cache_dir: str | None = None,
                main_process_first: Callable | None = None, sampling: bool = False, num_beams: int | None = None):
    """The engine the commands translate the model saved in `model_dir` with (loaded strictly unless `model` and
    `tokenizer` loaded from it are given). `engine`: "transformers", "ctranslate2" (an error saying why when it
    cannot), or "auto": CTranslate2 when it can, else generate(); `num_beams`: the beams the caller will ask for,
    if not the generation config's. `export_dir`: an existing CTranslate2 export to use instead of the cache's;
    `quantization`: the cached export's weight type (default float32)."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}; got {engine!r}.")
    if model is None:
        model, tokenizer = load_translator(model_dir)
    if engine == "transformers":
        return GenerateEngine(model, tokenizer, "asked for")
    problem = None if export_dir else fast_engine_problem(model.config, model.generation_config, num_beams)
    if problem is None and sampling and engine == "auto":
        problem = "sampling draws from another random generator than generate()'s"
    if problem is not None:
        if engine == "ctranslate2":
            raise ValueError(f"--engine ctranslate2 cannot translate {model_dir}: {problem}.")
        return GenerateEngine(model, tokenizer, f"auto: CTranslate2 not used, {problem}")
    if export_dir is None:
        export_dir = cached_export(model_dir, quantization, cache_dir, main_process_first)
    elif not os.path.isfile(os.path.join(export_dir, "model.bin")):
        raise FileNotFoundError(f"--ctranslate2_model {export_dir!r} holds no CTranslate2 model (model.bin).")
    reason = "asked for" if engine == "ctranslate2" else "auto: CTranslate2 installed and the model exports"
    return CTranslate2Engine(export_dir, tokenizer, model.config, model.generation_config,
                             intra_threads=intra_threads, inter_threads=inter_threads, reason=reason)


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
            raise ValueError(f"engine='ctranslate2' exports the model's saved files, and {problem}: save_pretrained "
                             "it and load it from there, or use engine='transformers'.")
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


__all__ = ["CTranslate2Engine", "DEFAULT_INTRA_THREADS", "ENGINES", "GenerateEngine", "cached_export",
           "default_cache_dir", "export_key", "fast_engine_problem", "load_engine", "resolve_engine",
           "unsupported_settings", "weights_differ"]
