"""Hashes of what the shipped models translate, to show that a restructuring changed no translation (issue 50).

For each shipped model and each engine (generate() and CTranslate2), the translations of the repository's help-text
test split and the UI messages' test split with the default options, with the model's own `terms.tsv` as a
glossary and with `min_confidence=0.5`, and of the markup development set with `format="html"`: one SHA-256 a case
over its outputs joined by newlines (and the number of lines). Run it before and after a change and compare:

    python -m transformer_mt.experiments.translation_hashes --output docs/results/restructure/before.json
"""

import argparse
import hashlib
import json
import time
from pathlib import Path

from transformer_mt.data import load_parallel_data
from transformer_mt.engines import load_engine
from transformer_mt.experiments.studies import git_commit
from transformer_mt.machine import matmul_gflops
from transformer_mt.options import TranslationOptions
from transformer_mt.text.glossary import read_glossary
from transformer_mt.translation import translate_texts


REPO = Path(__file__).resolve().parents[2]
MODELS = ("models/transformer-mt-en-de", "models/transformer-mt-en-de-broad")
ENGINES = ("transformers", "ctranslate2")
SPLITS = {"help": "data/en-de/test.tsv", "ui": "../shared/data/en-de-ui/test.tsv"}
MARKUP = "../shared/data/en-de-markup/dev.tsv"


def cases(model_dir: Path) -> list[tuple[str, str, TranslationOptions]]:
    """(name, data file, options) of every case a model is hashed on."""
    glossary = tuple(read_glossary(str(model_dir / "terms.tsv")))
    variants = {
        "default": TranslationOptions(),
        "glossary": TranslationOptions(glossary=glossary),
        "min_confidence": TranslationOptions(min_confidence=0.5),
    }
    return [
        *(
            (f"{split}/{variant}", path, options)
            for split, path in SPLITS.items()
            for variant, options in variants.items()
        ),
        ("markup/html", MARKUP, TranslationOptions(format="html")),
    ]


def digest(lines: list[str]) -> str:
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


def hash_model(model_dir: Path, engine_name: str, limit: int | None = None) -> dict[str, dict]:
    """Each case's {"lines", "sha256"} for one model on one engine (the first `limit` lines of each file)."""
    engine = load_engine(str(model_dir), engine_name)
    results = {}
    for name, path, options in cases(model_dir):
        texts = list(load_parallel_data({"test": REPO / path}, "en", "de")["test"]["en"])[:limit]
        outputs = [hypotheses[0][0] if hypotheses else "" for hypotheses in translate_texts(engine, texts, options)]
        results[name] = {"lines": len(outputs), "sha256": digest(outputs)}
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, required=True, help="the JSON to write")
    parser.add_argument("--limit", type=int, default=None, help="only the first N lines of each file (a quick look)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    hashes = {model: {engine: hash_model(REPO / model, engine, args.limit) for engine in ENGINES} for model in MODELS}
    report = {
        "commit": git_commit(),
        "gflops": round(matmul_gflops(), 1),
        "limit": args.limit,
        "seconds": round(time.perf_counter() - started),
        "hashes": hashes,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
