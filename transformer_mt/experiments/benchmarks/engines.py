"""The translate command's engines, end to end: lines in, translations out, each engine in a process of its own.

Every configuration translates the same lines through `translate_stream` (sentence splitting, length-sorted
batches, the model's generation config: what `scripts/translate.py` does), after a warm-up on the first batch and
with the one-time CTranslate2 export made before any timing. Measured: lines/s and sentences/s (best and median over
interleaved repeats), and BLEU/chrF of the first repeat's translations of the test split.
"""

import tempfile
import time

from transformer_mt.checkpoints import load_translator
from transformer_mt.engines import EngineSettings, cached_export, load_engine
from transformer_mt.generation import compile_generation
from transformer_mt.metrics import translation_scores
from transformer_mt.options import TranslationOptions
from transformer_mt.text import sentences
from transformer_mt.translation import translate_stream

from .harness import interleaved_order, markdown_table, run_worker, sample_stats


# name -> how it translates: engine, torch threads (generate()) or CTranslate2 threads, quantization, compiled.
CONFIGURATIONS = {
    "transformers (default)": dict(engine="transformers", threads=2),
    "transformers, 1 thread": dict(engine="transformers", threads=1),
    "transformers compiled": dict(engine="transformers", threads=2, compiled=True),
    "auto (default)": dict(engine="auto", threads=2),
    "ctranslate2 float32, 2 threads x 1": dict(engine="ctranslate2", threads=2, intra_threads=2, inter_threads=1),
    "ctranslate2 int8": dict(engine="ctranslate2", threads=2, quantization="int8"),
}
DEFAULTS = ("transformers (default)", "auto (default)")  # the done-when's comparison: each command's defaults


def engine_worker(spec: dict) -> dict:
    """One configuration translating every line once (after a warm-up): seconds, lines/s, sentences/s, outputs."""

    model, tokenizer = load_translator(spec["model_dir"])
    settings = spec["configuration"]
    if settings.get("compiled"):
        model = compile_generation(model.eval())
    export = spec["exports"].get(settings.get("quantization") or "float32")
    threads = {key: settings[key] for key in ("intra_threads", "inter_threads") if key in settings}
    chosen = EngineSettings(
        settings["engine"], export_dir=export if settings["engine"] != "transformers" else None, **threads
    )
    engine = load_engine(spec["model_dir"], chosen, model=model, tokenizer=tokenizer)
    lines = spec["lines"]
    outputs = []
    translate_stream(engine, lines[: spec["batch_size"]], outputs.append, TranslationOptions())  # warm-up
    outputs.clear()
    start = time.perf_counter()
    translate_stream(engine, lines, outputs.append, TranslationOptions(batch_size=spec["batch_size"]))
    seconds = time.perf_counter() - start
    language = model.config.source_lang
    count = sum(len(sentences.split(line, language)[0]) for line in lines)
    return {
        "engine": engine.name,
        "reason": engine.reason,
        "seconds": seconds,
        "lines_per_second": len(lines) / seconds,
        "sentences_per_second": count / seconds,
        "outputs": outputs,
    }


def compare_engines(
    model_dir: str,
    lines: list[str],
    references: list[str],
    configurations=CONFIGURATIONS,
    repeats: int = 3,
    batch_size: int = 16,
) -> dict:
    """Every configuration in a fresh process per repeat, interleaved; the first `len(references)` lines are the
    test split, scored by BLEU and chrF."""

    configurations = {**{name: CONFIGURATIONS[name] for name in DEFAULTS}, **configurations}  # always compared
    results = {"lines": len(lines), "batch_size": batch_size, "configurations": {}}
    with tempfile.TemporaryDirectory(prefix="transformer-mt-engines-") as cache:
        exports = {
            kind: cached_export(model_dir, None if kind == "float32" else kind, cache) for kind in ("float32", "int8")
        }
        runs = {name: [] for name in configurations}
        for name in interleaved_order(list(configurations), repeats):
            spec = {
                "model_dir": model_dir,
                "configuration": configurations[name],
                "lines": lines,
                "batch_size": batch_size,
                "exports": exports,
            }
            runs[name].append(run_worker(engine_worker, spec, configurations[name]["threads"]))
    reference_outputs = runs[DEFAULTS[0]][0]["outputs"]
    for name, measured in runs.items():
        first = measured[0]
        scores = translation_scores(first["outputs"][: len(references)], references)
        results["configurations"][name] = {
            **configurations[name],
            "engine": first["engine"],
            "reason": first["reason"],
            "lines_per_second": sample_stats([run["lines_per_second"] for run in measured]),
            "sentences_per_second": sample_stats([run["sentences_per_second"] for run in measured]),
            "bleu": scores["bleu"],
            "chrf": scores["chrf"],
            "lines equal to generate()": sum(a == b for a, b in zip(first["outputs"], reference_outputs)),
        }
    base = results["configurations"][DEFAULTS[0]]["sentences_per_second"]
    fast = results["configurations"][DEFAULTS[1]]["sentences_per_second"]
    results["default speed-up"] = {"best": fast["best"] / base["best"], "median": fast["median"] / base["median"]}
    return results


def engines_report(results: dict) -> str:
    rows = [
        {
            "configuration": name,
            "engine": measured["engine"],
            "sentences/s (best)": measured["sentences_per_second"]["best"],
            "sentences/s (median)": measured["sentences_per_second"]["median"],
            "BLEU": measured["bleu"],
            "chrF": measured["chrf"],
            "lines equal to generate()": f"{measured['lines equal to generate()']}/{results['lines']}",
        }
        for name, measured in results["configurations"].items()
    ]
    speed_up = results["default speed-up"]
    return (
        f"{results['lines']} lines, batch {results['batch_size']}\n\n"
        + markdown_table(rows)
        + f"\n\ntranslate.py's default engine against --engine transformers: {speed_up['best']:.2f}x (best), "
        f"{speed_up['median']:.2f}x (median)"
    )
