"""The pivot study (issue 53, item 2, "Measured"): what translating through English costs in quality and time.

Two UI test splits that share English (`--data ../shared/data/en-fr-ui/test.tsv ../shared/data/en-es-ui/test.tsv`)
are joined on their English source (exact; the first row of each English text): each joined message has a text in
both languages, each the other's reference. For each direction X→Y that the models folder routes through English
(`serving.folder.route`: X→en and en→Y, no X→Y of its own), the messages are translated
- through English (`steps.pivot.Pivot`: X→en, then en→Y), scored against the Y texts;
- from their true English by the en→Y model alone (`from_english`): one model and one hop, the cost of a direct
  pair and what the second hop reaches without the first hop's errors;
- by the X→en model alone (`first_hop`), timed.
BLEU and chrF (sacreBLEU, the package's `evaluation.score`), wall seconds and sentences per second, one run each,
every translation beam 4 with the package's default options (`translate_texts`), in one process on one engine,
after a warm-up of each model; the machine's fp32 matmul figure beside them.

    python -m transformer_mt.experiments.pivot_study --models models --languages de fr \
        --data ../shared/data/en-de-ui/test.tsv ../shared/data/en-fr-ui/test.tsv \
        --output docs/results/languages/pivot-de-fr.json
"""

import argparse
import csv
import json
import sys
import time
from pathlib import Path

from transformer_mt.engines import load_engine
from transformer_mt.evaluation import score
from transformer_mt.machine import git_commit, matmul_gflops, processor
from transformer_mt.options import TranslationOptions
from transformer_mt.serving.folder import route
from transformer_mt.steps import PIVOT, Pivot
from transformer_mt.translation import translate_texts


NUM_BEAMS = 4


def read_split(path: str, language: str) -> dict[str, str]:
    """English source -> the `language` text of a test split (TSV with a header; the first row of each English)."""
    with open(path, encoding="utf-8", newline="") as f:
        rows = csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        if language not in (rows.fieldnames or ()) or PIVOT not in rows.fieldnames:
            raise ValueError(f"{path} has no {PIVOT!r} and {language!r} columns (it has {rows.fieldnames})")
        joined: dict[str, str] = {}
        for row in rows:
            joined.setdefault(row[PIVOT], row[language])
        return joined


def shared_messages(paths: list[str], languages: list[str]) -> list[dict[str, str]]:
    """The messages whose English source is in every split: {"en": ..., X: ..., Y: ...}, in the first's order."""
    splits = [read_split(path, language) for path, language in zip(paths, languages, strict=True)]
    return [
        {PIVOT: english, **{language: split[english] for language, split in zip(languages, splits)}}
        for english in splits[0]
        if all(english in split for split in splits[1:])
    ]


def timed(engine, texts: list[str], source: str, target: str) -> tuple[list[str], float]:
    """The texts' best translations by `engine` and the wall seconds they took."""
    options = TranslationOptions(num_beams=NUM_BEAMS, source_lang=source, target_lang=target)
    translate_texts(engine, texts[:8], options)  # warm-up: the first calls' allocations are not the pair's cost
    start = time.perf_counter()
    translations = [hypotheses[0][0] if hypotheses else "" for hypotheses in translate_texts(engine, texts, options)]
    return translations, time.perf_counter() - start


def figures(translations: list[str], seconds: float, references: list[str] | None = None) -> dict:
    shown = {"seconds": round(seconds, 2), "sentences_per_second": round(len(translations) / seconds, 2)}
    if references is not None:
        shown.update({name: entry["score"] for name, entry in score(translations, references).items()})
    return shown


def direction(models: str, messages: list[dict], source: str, target: str, engine_name: str) -> dict:
    """One direction's figures, or why it was not measured."""
    try:
        directories = route(models, source, target)
    except ValueError as error:
        return {"measured": False, "why": str(error)}
    if len(directories) == 1:
        return {"measured": False, "why": f"{models} has a {source}-{target} model of its own: nothing to pivot"}
    first, second = (load_engine(directory, engine_name) for directory in directories)
    sources, references = [m[source] for m in messages], [m[target] for m in messages]
    pivoted, pivot_seconds = timed(Pivot(first, second), sources, source, target)
    direct, direct_seconds = timed(second, [m[PIVOT] for m in messages], PIVOT, target)
    english, first_seconds = timed(first, sources, source, PIVOT)
    return {
        "measured": True,
        "route": directories,
        "pivot": figures(pivoted, pivot_seconds, references),
        "from_english": figures(direct, direct_seconds, references),
        "first_hop": figures(english, first_seconds, [m[PIVOT] for m in messages]),
        "time_ratio": round(pivot_seconds / direct_seconds, 2),
        "examples": [
            {"source": s, "english": e, "pivot": p, "reference": r}
            for s, e, p, r in list(zip(sources, english, pivoted, references))[:5]
        ],
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", required=True, help="A folder of models (serve --models DIR).")
    parser.add_argument("--languages", nargs=2, required=True, metavar=("X", "Y"), help="Both directions are tried.")
    parser.add_argument("--data", nargs=2, required=True, metavar=("EN_X", "EN_Y"), help="en-X and en-Y test TSVs.")
    parser.add_argument("--engine", default="ctranslate2", choices=["transformers", "ctranslate2"])
    parser.add_argument("--limit", type=int, help="At most this many messages (default: all).")
    parser.add_argument("--output", help="Write the JSON here (default: stdout only).")
    args = parser.parse_args(argv)
    x, y = args.languages
    messages = shared_messages(args.data, [x, y])[: args.limit]
    if not messages:
        parser.error(f"{args.data[0]} and {args.data[1]} share no English source")
    result = {
        "command": "python -m transformer_mt.experiments.pivot_study " + " ".join(argv or sys.argv[1:]),
        "commit": git_commit(),
        "machine": {"matmul_gflops_fp32_2048_2threads": round(matmul_gflops(), 1), "processor": processor()},
        "engine": args.engine,
        "num_beams": NUM_BEAMS,
        "data": {"files": args.data, "joined_on": "the English source, exact", "messages": len(messages)},
        "directions": {f"{a}-{b}": direction(args.models, messages, a, b, args.engine) for a, b in ((x, y), (y, x))},
    }
    result["machine"]["matmul_gflops_after"] = round(matmul_gflops(), 1)
    shown = json.dumps(result, indent=2, ensure_ascii=False)
    if args.output:
        Path(args.output).write_text(shown + "\n", encoding="utf-8")
    print(shown)
    return result


if __name__ == "__main__":
    main()
