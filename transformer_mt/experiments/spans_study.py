"""The protected-spans study: how many placeholders, URLs, e-mail addresses, paths, inline code, numbers and emoji
(`transformer_mt.text.spans`) the model carries alone, how many the repair puts back, and what the repair costs or wins
in BLEU and chrF.

The messages of a split whose source holds any protected span are translated once by the shipped model's default
engine (CTranslate2 where it can) with default options, sentence by sentence as `translate_texts` does
(`translation.segment`), through `steps.translate_masked` (a model trained with span tokens is shown its spans as
those tokens) but without the repair `steps.decode` runs; `spans.repair_counted` then repairs those same hypotheses
with the engine's word alignments, so the two outputs are paired. Each message's spans are counted on the joined
outputs (`spans.lost_spans`): carried by the model, repaired (lost without the repair, held with it), lost. Issue 40
asks carried + repaired >= 99.5%.

    python -m transformer_mt.experiments.spans_study --split validation
"""

import argparse
import collections
import json
import sys
import time
from pathlib import Path

import sacrebleu

from transformer_mt.data import load_parallel_data
from transformer_mt.engines import load_engine
from transformer_mt.experiments.studies import git_commit
from transformer_mt.machine import matmul_gflops
from transformer_mt.options import TranslationOptions
from transformer_mt.steps import translate_masked
from transformer_mt.text.spans import KINDS, lost_spans, protected_spans, repair_counted
from transformer_mt.translation import assemble, segment


MODEL = "models/transformer-mt-en-de-broad"
DATA = ["../shared/data/en-de-ui", "../shared/data/en-de"]
RESULTS = Path("docs/results/spans")
TARGET = 0.995  # issue 40: carried + repaired
OUTCOMES = ("carried", "repaired", "lost", "broken")  # broken: carried by the model, lost by the repair


def messages_with_spans(data: str, split: str) -> tuple[list[str], list[str]]:
    """The sources holding any protected span in one split, and their references."""
    pairs = load_parallel_data(data, "en", "de")[split]
    kept = [(source, reference) for source, reference in zip(pairs["en"], pairs["de"]) if protected_spans(source)]
    return [source for source, _ in kept], [reference for _, reference in kept]


def translate_both(engine, sources: list[str], options: TranslationOptions) -> tuple[list[str], list[str], list]:
    """Each source's best translation without and with the repair (the same hypotheses), and the sentences'
    `SpanReport`s."""
    segments = segment(sources, options, engine.config)
    plain = translate_masked(engine, segments.sentences, options, segments.names, segments.prefixes)
    repaired, reports = repair_counted(
        segments.sentences,
        plain,
        segments.names,
        lambda sources, targets: engine.align_pairs(sources, targets, options),
    )
    best = [
        [found[0][0] if found else "" for found in assemble(segments, hypotheses)] for hypotheses in (plain, repaired)
    ]
    return best[0], best[1], reports


def count(sources: list[str], plain: list[str], repaired: list[str]) -> tuple[dict, list[dict]]:
    """Per kind and overall: spans and their OUTCOMES, and each message that lost one."""
    counts = collections.defaultdict(collections.Counter)
    failures = []
    for source, without, with_repair in zip(sources, plain, repaired):
        lost_before = collections.Counter(lost_spans(source, without))
        lost_after = collections.Counter(lost_spans(source, with_repair))
        failed = +lost_after
        for span in protected_spans(source):
            outcome = (
                ("broken" if lost_after[span] else "carried")
                if not lost_before[span]
                else "lost"
                if lost_after[span]
                else "repaired"
            )
            lost_before[span], lost_after[span] = max(lost_before[span] - 1, 0), max(lost_after[span] - 1, 0)
            for kind in (span.kind, "all"):
                counts[kind]["spans"] += 1
                counts[kind][outcome] += 1
        if failed:
            failures.append(
                {
                    "source": source,
                    "without": without,
                    "with": with_repair,
                    "lost": [list(span) for span in failed.elements()],
                }
            )
    table = {}
    for kind in [*KINDS, "all"]:
        if counts[kind]["spans"]:
            found = counts[kind]
            table[kind] = {
                **{key: found[key] for key in ("spans", *OUTCOMES)},
                **{f"{key}_share": round(found[key] / found["spans"], 4) for key in OUTCOMES},
                "kept_share": round((found["carried"] + found["repaired"]) / found["spans"], 4),
            }
    return table, failures


def scores(hypotheses: list[str], references: list[str]) -> dict:
    return {
        "bleu": round(sacrebleu.corpus_bleu(hypotheses, [references]).score, 2),
        "chrf": round(sacrebleu.corpus_chrf(hypotheses, [references]).score, 2),
    }


def paired(plain: list[str], repaired: list[str], references: list[str]) -> dict:
    """sacreBLEU's paired bootstrap of the repair against the model alone (BLEU and chrF, 1000 resamples)."""
    from sacrebleu.compat import BLEU, CHRF
    from sacrebleu.significance import PairedTest

    metrics = {"bleu": BLEU(), "chrf": CHRF()}
    test = PairedTest([("without", plain), ("with", repaired)], metrics, [references], test_type="bs", n_samples=1000)
    _, results = test()
    columns = [column for column in results if column != "System"]  # "BLEU", "chrF2": one per metric, in order
    return {name: {"p_value": results[column][1].p_value} for name, column in zip(metrics, columns)}


def run_study(data: str, split: str, engine, model: str) -> dict:
    """The study on one split of one corpus: the counts, the scores without and with the repair, the failures."""
    sources, references = messages_with_spans(data, split)
    start = time.perf_counter()
    plain, repaired, reports = translate_both(engine, sources, TranslationOptions())
    table, failures = count(sources, plain, repaired)
    return {
        "data": data,
        "split": split,
        "messages": len(sources),
        "model": model,
        "engine": engine.name,
        "spans": table,
        "sentence_reports": {
            key: sum(len(getattr(report, key)) for report in reports) for key in ("carried", "repaired", "lost")
        },
        "without_repair": scores(plain, references),
        "with_repair": scores(repaired, references),
        "paired_bootstrap": paired(plain, repaired, references),
        "failures": failures,
        "changed": [{"source": s, "without": a, "with": b} for s, a, b in zip(sources, plain, repaired) if a != b],
        "minutes": round((time.perf_counter() - start) / 60, 2),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", nargs="+", default=DATA)
    parser.add_argument("--split", default="test")
    parser.add_argument("--model", default=MODEL)
    parser.add_argument("--engine", default="ctranslate2")
    parser.add_argument("--output", help="The results JSON (default: docs/results/spans/<split>.json).")
    args = parser.parse_args(argv)
    output = Path(args.output or RESULTS / f"{args.split}.json")
    if output.exists():
        parser.error(f"--output {str(output)!r} exists; results never replace a file")
    gflops = matmul_gflops()
    engine = load_engine(args.model, args.engine)
    studies = [run_study(data, args.split, engine, args.model) for data in args.data]
    result = {
        "commit": git_commit(),
        "command": " ".join(
            ["python -m transformer_mt.experiments.spans_study", *(argv if argv is not None else sys.argv[1:])]
        ),
        "matmul_gflops": round(gflops, 1),
        "target_kept_share": TARGET,
        "studies": studies,
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    for study in studies:
        print(
            f"{study['data']} {study['split']}: {study['messages']} messages; without repair "
            f"{study['without_repair']}, with {study['with_repair']}, p {study['paired_bootstrap']}"
        )
        for kind, found in study["spans"].items():
            print(
                f"  {kind:12} {found['spans']:5} spans: carried {found['carried_share']:.1%}, repaired "
                f"{found['repaired_share']:.1%}, lost {found['lost_share']:.1%} (kept {found['kept_share']:.1%})"
            )


if __name__ == "__main__":
    main()
