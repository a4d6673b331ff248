"""What reading a file's contexts costs (issue 54, item 3): the UI test split's first `--rows` messages written as
one file and translated by `documents.files.translate_bytes` with their contexts (one engine call per distinct
context: `documents.in_contexts`) and without (one call), interleaved A/B/B/A over `--repeats`. `--format`:

- `json`: one catalogue, each message under a key path of its own (`<package>.<msgctxt or "message">.<n>`, from the
  row's origin and context, as an application's catalogue names its strings), read as its context (`keys`);
- `po`: one .po, each message with its msgctxt where the split gives it one (`msgctxt`, the default source).

Reported: each side's best and median seconds, the ratio of the two (from the best and from the median), the
engine calls each side made, and each side's BLEU and chrF against the references, so that a cost is seen beside
what the contexts change. Beam 4, the model's default options otherwise.

    python -m transformer_mt.experiments.file_contexts --model models/transformer-mt-en-fr \
        --data ../shared/data/en-fr-ui/test.tsv --output docs/results/context/file-contexts-en-fr.json
    python -m transformer_mt.experiments.file_contexts --model models/transformer-mt-en-fr --format po --rows 600 \
        --data ../shared/data/en-fr-ui/test.tsv --output docs/results/context/file-contexts-en-fr-po.json
"""

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

from transformer_mt.documents.files import translate_bytes
from transformer_mt.engines import load_engine
from transformer_mt.evaluation import score
from transformer_mt.machine import git_commit, matmul_gflops
from transformer_mt.options import TranslationOptions
from transformer_mt.translation import translate_texts

from .context_study import Message, read_messages


def key_path(message: Message, number: int) -> list[str]:
    """A message's key path as parts: its package, its msgctxt made an identifier (else "message"), its number."""
    package = message.origin.split(":", 1)[-1] or "app"
    name = re.sub(r"\W+", "_", message.context).strip("_").lower() or "message"
    return [package, name, f"m{number}"]


def catalogue(messages: list[Message]) -> bytes:
    """The messages as one nested JSON catalogue, each under its `key_path`."""
    root = {}
    for number, message in enumerate(messages):
        *parents, leaf = key_path(message, number)
        node = root
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = message.source
    return json.dumps(root, indent=2, ensure_ascii=False).encode("utf-8")


def written_texts(data: bytes, messages: list[Message]) -> list[str]:
    """The translated catalogue's value under each message's `key_path`, in the messages' order."""
    root = json.loads(data)
    found = []
    for number, message in enumerate(messages):
        node = root
        for part in key_path(message, number):
            node = node[part]
        found.append(node)
    return found


def po_catalogue(messages: list[Message]) -> bytes:
    """The messages as one .po, in order, each with its msgctxt where it has one."""
    import polib

    catalogue = polib.POFile(wrapwidth=0)
    catalogue.metadata = {"Content-Type": "text/plain; charset=UTF-8"}
    for message in messages:
        catalogue.append(polib.POEntry(msgid=message.source, msgstr="", msgctxt=message.context or None))
    return str(catalogue).encode("utf-8")


def po_texts(data: bytes, messages: list[Message]) -> list[str]:
    """The translated .po's msgstrs, in the messages' order."""
    import polib

    return [entry.msgstr for entry in polib.pofile(data.decode("utf-8"))]


def contexts_of(messages: list[Message], format: str) -> list[str | None]:
    """Each message's context in the file `format` writes: its key path, or its msgctxt (None without one)."""
    return [".".join(key_path(m, n)) if format == "json" else m.context or None for n, m in enumerate(messages)]


FORMATS = {"json": (catalogue, written_texts, "keys"), "po": (po_catalogue, po_texts, "msgctxt")}


def measure(engine, messages: list[Message], repeats: int, format: str = "json") -> dict:
    """Both sides timed interleaved; their calls, BLEU and chrF."""
    write, read, source = FORMATS[format]
    data, options, calls = write(messages), TranslationOptions(num_beams=4), {True: 0, False: 0}
    seconds, outputs = {True: [], False: []}, {}

    def run(contexts: bool) -> None:
        def translate(texts, format="text", context=None):
            calls[contexts] += 1
            found = translate_texts(engine, texts, options.replace(format=format, context=context))
            return [hypotheses[0][0] if hypotheses else "" for hypotheses in found]

        started = time.perf_counter()
        written, _ = translate_bytes(data, format, translate, contexts={source} if contexts else set())
        seconds[contexts].append(time.perf_counter() - started)
        outputs[contexts] = read(written, messages)

    for repeat in range(repeats):
        for contexts in (True, False) if repeat % 2 == 0 else (False, True):
            run(contexts)
    references = [message.reference for message in messages]
    sides = {
        name: {
            "best_seconds": round(min(seconds[contexts]), 3),
            "median_seconds": round(statistics.median(seconds[contexts]), 3),
            "engine_calls": calls[contexts] // repeats,
            **{
                key: round(value["score"], 2)
                for key, value in score(outputs[contexts], references, ("bleu", "chrf")).items()
            },
        }
        for name, contexts in (("contexts", True), ("none", False))
    }
    best, median = (sides["contexts"][k] / sides["none"][k] for k in ("best_seconds", "median_seconds"))
    return {"sides": sides, "time_ratio_best": round(best, 2), "time_ratio_median": round(median, 2)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="a model trained with context (config.source_context)")
    parser.add_argument("--data", required=True, type=Path, help="a UI split: en, the target, origin, context")
    parser.add_argument("--language", default=None, help="the target's column (default: the model's target)")
    parser.add_argument("--engine", default="ctranslate2", choices=["transformers", "ctranslate2"])
    parser.add_argument("--rows", type=int, default=200, help="the split's first rows to translate")
    parser.add_argument("--format", default="json", choices=sorted(FORMATS), help="the file the rows are written as")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args(argv)
    engine = load_engine(args.model, args.engine)
    if not getattr(engine.config, "source_context", False):
        parser.error(f"--model {args.model} was not trained with context: it reads none")
    language = args.language or engine.config.target_lang
    messages = read_messages(args.data, language)[: args.rows]
    gflops = matmul_gflops()
    result = {
        "command": " ".join(
            ["python -m transformer_mt.experiments.file_contexts", *(sys.argv[1:] if argv is None else argv)]
        ),
        "commit": git_commit(),
        "matmul_gflops": round(gflops, 1),
        "engine": args.engine,
        "format": args.format,
        "contexts_from": FORMATS[args.format][2],
        "rows": len(messages),
        "distinct_contexts": len({context for context in contexts_of(messages, args.format) if context}),
        **measure(engine, messages, args.repeats, args.format),
        "matmul_gflops_after": round(matmul_gflops(), 1),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
