"""The context study (issue 52, item 3, "Measured"): what a model trained with context (`config.source_context`) and
register tags (`config.formality_tags`) makes of them, on each engine asked for.

1. Context disambiguation: the messages of the UI validation and test splits whose source text occurs with different
   translations under different contexts (`ambiguous`: two of its messages differ in context and in reference by
   the match rule), each translated with its own context and without. A translation matches when it equals that
   message's reference after NFC, casefold and collapsed whitespace (`MATCH_RULE`); the paired counts, both match
   rates, McNemar's exact p (`mcnemar_exact`: binomial on the discordant pairs) and each side's chrF.
2. The whole UI test split translated with each row's context (none where it has none) and without any: BLEU and
   chrF, sacreBLEU's paired bootstrap p (`evaluation.compare_systems`), the mean difference over the same resamples
   and its 95% interval (`paired_difference`), and a verdict (`verdict`, `VERDICT_RULE`).
3. Formality: the sentences whose reference addresses the reader in one register (`text.formality.register`), of
   the UI test split and of each --formality_data file, translated asking `more`, `less` and `default`: per asked
   register the shares of outputs in it, in the other and in none (`register_shares`; at `default` the reference's
   register is the one asked). A model without the tags refuses `more` and `less`: recorded, and only those skipped.
   --baseline: the model at `default` against a model without the tags on the UI test split, as in 2.

Every translation: beam 4, default options otherwise (`Translations`), the package's `translate_texts`. Formality
and the baseline translate without context.

    python -m transformer_mt.experiments.context_study --model runs/en-fr --data ../shared/data/en-fr-ui \
        --engine generate ctranslate2 --output docs/results/context/en-fr.json
"""

import argparse
import collections
import dataclasses
import itertools
import json
import math
import os
import sys
import time
import unicodedata
from pathlib import Path

import numpy as np
import sacrebleu

from transformer_mt.data import load_parallel_data
from transformer_mt.engines import EngineSettings, load_engine
from transformer_mt.evaluation import compare_systems, score
from transformer_mt.machine import git_commit, matmul_gflops
from transformer_mt.options import OptionError, TranslationOptions
from transformer_mt.text.formality import FORMAL, INFORMAL, has_register_words, register
from transformer_mt.translation import translate_texts


RESULTS = Path("docs/results/context")
ENGINES = {"generate": "transformers", "ctranslate2": "ctranslate2"}  # the study's names -> EngineSettings.engine
NUM_BEAMS = 4
ALPHA = 0.05  # a difference with p below this is significant
MARGIN = 0.3  # the largest mean loss (BLEU points) a verdict of "no significant loss" allows
PAIRED_SAMPLES = 1000  # bootstrap resamples, as score.py --paired and the promotion test take
MATCH_RULE = "output equals the message's reference after NFC, casefold and whitespace collapsed to single spaces"
VERDICT_RULE = (
    f"'no significant loss' when not (p < {ALPHA} and mean difference < 0) and mean difference >= -{MARGIN}; "
    f"else 'significant loss' (p < {ALPHA}, mean < 0) or 'mean loss beyond {MARGIN}'; decided by BLEU"
)
ASKED = {"more": FORMAL, "less": INFORMAL}  # `default`: the reference's own register


@dataclasses.dataclass(frozen=True)
class Message:
    """One row of a corpus split: the source text, its reference, its context ("" for none), origin and split."""

    source: str
    reference: str
    context: str = ""
    origin: str = ""
    split: str = ""


def normalized(text: str) -> str:
    """`text` as the match rule compares it: NFC, casefolded, whitespace collapsed to single spaces."""
    return " ".join(unicodedata.normalize("NFC", text).casefold().split())


def matches(output: str, reference: str) -> bool:
    """Whether `output` is `reference` by `MATCH_RULE`."""
    return normalized(output) == normalized(reference)


def read_messages(path: Path, language: str, split: str = "", source_lang: str = "en") -> list[Message]:
    """The rows of a corpus TSV (`en`, the other language, optionally `origin` and `context`) read from `source_lang`
    into `language` (an en-X corpus read the other way for X→en), by the package's reader (tabs only, no quoting); a
    file without a `context` column gives every row none."""
    with open(path, encoding="utf-8-sig") as file:
        header = file.readline().rstrip("\r\n").split("\t")
    extra = [column for column in ("origin", "context") if column in header]
    rows = load_parallel_data({"rows": path}, source_lang, language, extra_columns=extra)["rows"]
    columns = {column: list(rows[column]) for column in [source_lang, language, *extra]}
    empty = [""] * len(columns[source_lang])
    return [
        Message(source, reference, context, origin, split)
        for source, reference, context, origin in zip(
            columns[source_lang], columns[language], columns.get("context", empty), columns.get("origin", empty)
        )
    ]


def ambiguous(messages: list[Message]) -> dict[str, list[Message]]:
    """Source text -> all its messages, for each source text (as written) two of whose messages differ in context
    and in reference (by `MATCH_RULE`), in the order the texts first occur."""
    by_text = collections.defaultdict(list)
    for message in messages:
        by_text[message.source].append(message)
    return {
        text: group
        for text, group in by_text.items()
        if any(
            a.context != b.context and not matches(a.reference, b.reference)
            for a, b in itertools.combinations(group, 2)
        )
    }


def paired_counts(with_context: list[bool], without_context: list[bool]) -> dict[str, int]:
    """How many messages match with and without context, only with it, only without it, neither."""
    pairs = collections.Counter(zip(with_context, without_context))
    return {
        "both": pairs[True, True],
        "only_with_context": pairs[True, False],
        "only_without_context": pairs[False, True],
        "neither": pairs[False, False],
    }


def mcnemar_exact(only_with: int, only_without: int) -> float:
    """McNemar's exact test, two-sided: the binomial (n = the discordant pairs, 1/2) probability of a split at least
    as uneven as the one seen; 1.0 without discordant pairs."""
    n = only_with + only_without
    tail = sum(math.comb(n, k) for k in range(min(only_with, only_without) + 1)) / 2**n
    return min(1.0, 2 * tail)


def verdict(p_value: float, mean_difference: float, alpha: float = ALPHA, margin: float = MARGIN) -> str:
    """The verdict on a system against its baseline, by `VERDICT_RULE`."""
    if p_value < alpha and mean_difference < 0:
        return "significant loss"
    if mean_difference < -margin:
        return f"mean loss beyond {margin}"
    return "no significant loss"


def register_shares(sources: list[str], outputs: list[str], language: str, wanted: list[str]) -> dict:
    """Of `outputs`, how many address the reader in the register `wanted` of each, in the other, in none (or
    both: `text.formality.register`), and those shares; the formal and informal counts besides."""
    found = [register(source, output, language) for source, output in zip(sources, outputs)]
    counts = {
        "sentences": len(found),
        "formal": found.count(FORMAL),
        "informal": found.count(INFORMAL),
        "in_asked": sum(got == asked for got, asked in zip(found, wanted)),
        "in_other": sum(got is not None and got != asked for got, asked in zip(found, wanted)),
        "in_none": found.count(None),
    }
    for key in ("in_asked", "in_other", "in_none"):
        counts[f"share_{key}"] = round(counts[key] / len(found), 4) if found else None
    return counts


def paired_difference(
    baseline: list[str], system: list[str], references: list[str], metric: str, samples: int = PAIRED_SAMPLES
) -> dict:
    """The system's score minus the baseline's over sacreBLEU's paired bootstrap resamples (the same indices as
    `compare_systems`, seeded by $SACREBLEU_SEED as sacreBLEU seeds them, scored by sacreBLEU's metric): the mean
    difference and its 95% interval (sacreBLEU's: the 1/40 and 39/40 order statistics)."""
    scorer = {"bleu": sacrebleu.BLEU, "chrf": sacrebleu.CHRF}[metric]()
    seed = os.environ.get("SACREBLEU_SEED", "12345")
    rng = np.random.default_rng(None if seed.lower() == "none" else int(seed))
    indices = rng.choice(len(references), size=(samples, len(references)), replace=True)

    def resampled(hypotheses: list[str]) -> np.ndarray:
        stats = np.array(scorer._extract_corpus_statistics(hypotheses, [references]), dtype="float32")
        return np.array([scorer._compute_score_from_stats(sample.sum(0)).score for sample in stats[indices]])

    differences = np.sort(resampled(system) - resampled(baseline))
    low = samples // 40
    return {
        "mean_difference": round(float(differences.mean()), 2),
        "ci95": [round(float(differences[low]), 2), round(float(differences[samples - low - 1]), 2)],
    }


def paired_comparison(baseline: str, system: str, hypotheses: dict, references: list[str], samples: int) -> dict:
    """`hypotheses[system]` against `hypotheses[baseline]`: per metric both scores, the paired bootstrap p, the
    mean difference and its 95% interval, and the verdict; the verdict BLEU gives."""
    compared = compare_systems(
        {name: hypotheses[name] for name in (baseline, system)}, references, ("bleu", "chrf"), "bs", samples
    )
    result = {
        "pairs": len(references),
        # sacreBLEU's p is 1 / (samples + 1) for two identical outputs: read it with how many differ
        "outputs_differ": sum(a != b for a, b in zip(hypotheses[baseline], hypotheses[system])),
        "test": compared["test"],
        "samples": samples,
        "verdict_rule": VERDICT_RULE,
    }
    for metric, found in compared["metrics"].items():
        p_value = found["systems"][system]["p_value"]
        difference = paired_difference(hypotheses[baseline], hypotheses[system], references, metric, samples)
        result[metric] = {
            **{name: found["systems"][name]["score"] for name in (baseline, system)},
            "p_value": p_value,
            **difference,
            "verdict": verdict(p_value, difference["mean_difference"]),
            "signature": found["signature"],
        }
    result["verdict"] = result["bleu"]["verdict"]
    return result


class Translations:
    """An engine's translations at beam 4, default options otherwise, each (text, context, register) decoded once,
    one `translate_texts` call per context and register; called as `translate(texts, contexts, formality)`."""

    def __init__(self, engine):
        self.engine, self.done = engine, {}

    def __call__(self, texts: list[str], contexts: list[str | None], formality: str = "default") -> list[str]:
        keys = [(text, context or None, formality) for text, context in zip(texts, contexts)]
        missing = collections.defaultdict(list)
        for text, context, _ in dict.fromkeys(key for key in keys if key not in self.done):
            missing[context].append(text)
        for context, group in missing.items():
            options = TranslationOptions(num_beams=NUM_BEAMS, context=context, formality=formality)
            for text, found in zip(group, translate_texts(self.engine, group, options)):
                self.done[text, context, formality] = found[0][0] if found else ""
        return [self.done[key] for key in keys]


def disambiguation(messages: list[Message], translate, limit: int | None = None) -> dict:
    """Part 1 on `messages` (the validation and test splits): see the module."""
    groups = ambiguous(messages)
    chosen = [message for group in groups.values() for message in group][:limit]
    found = {"rule": MATCH_RULE, "texts": len(groups), "messages": sum(map(len, groups.values()))}
    found["messages_with_context"] = sum(bool(message.context) for group in groups.values() for message in group)
    if not chosen:
        return {**found, "note": "no source text occurs with different translations under different contexts"}
    sources, references = [m.source for m in chosen], [m.reference for m in chosen]
    with_context = translate(sources, [m.context or None for m in chosen])
    without_context = translate(sources, [None] * len(chosen))
    hits = [[matches(o, r) for o, r in zip(side, references)] for side in (with_context, without_context)]
    counts = paired_counts(*hits)
    return {
        **found,
        "measured": len(chosen),
        "paired": counts,
        "match_rate_with_context": round(sum(hits[0]) / len(chosen), 4),
        "match_rate_without_context": round(sum(hits[1]) / len(chosen), 4),
        "mcnemar_exact_p": mcnemar_exact(counts["only_with_context"], counts["only_without_context"]),
        "chrf_with_context": score(with_context, references, ("chrf",))["chrf"]["score"],
        "chrf_without_context": score(without_context, references, ("chrf",))["chrf"]["score"],
        "rows": [
            {**dataclasses.asdict(m), "with": w, "without": o}
            for m, w, o in zip(chosen, with_context, without_context)
        ],
    }


def whole_split(rows: list[Message], translate, samples: int = PAIRED_SAMPLES) -> dict:
    """Part 2 on the UI test split's `rows`: see the module; with no row holding a context, the BLEU without."""
    sources, references = [m.source for m in rows], [m.reference for m in rows]
    found = {"rows": len(rows), "rows_with_context": sum(bool(m.context) for m in rows)}
    hypotheses = {"without_context": translate(sources, [None] * len(rows))}
    if not found["rows_with_context"]:
        return {**found, "note": "no row has a context", **score(hypotheses["without_context"], references, ("bleu",))}
    hypotheses["with_context"] = translate(sources, [m.context or None for m in rows])
    return {**found, **paired_comparison("without_context", "with_context", hypotheses, references, samples)}


def formality(sets: dict[str, list[Message]], language: str, translate, limit: int | None = None) -> dict:
    """Part 3 on each named set of rows: see the module."""
    if not has_register_words(language):
        return {"note": f"{language} has no formal and informal address that text.formality tells apart"}
    results = {}
    for name, rows in sets.items():
        labelled = [(m, label) for m in rows if (label := register(m.source, m.reference, language))][:limit]
        chosen, wanted = [m for m, _ in labelled], [label for _, label in labelled]
        sources = [m.source for m in chosen]
        found = {"sentences": len(chosen), "references": {key: wanted.count(key) for key in (FORMAL, INFORMAL)}}
        for asked in ("more", "less", "default"):
            try:
                outputs = translate(sources, [None] * len(chosen), asked)
            except OptionError as error:
                if error.option != "formality":
                    raise
                found[asked] = {"refused": str(error)}
                found["note"] = "the model has no register tags: more and less refused, only default measured"
                continue
            asked_for = [ASKED[asked]] * len(chosen) if asked in ASKED else wanted
            found[asked] = register_shares(sources, outputs, language, asked_for)
        results[name] = found
    return results


def run_engine(model: str, engine_name: str, splits: dict, sets: dict, language: str, args) -> dict:
    """The three parts (and the baseline comparison, with `args.baseline`) on one engine: `splits` holds the UI
    "validation" and "test" rows, `sets` the rows part 3 reads (the UI test split, each --formality_data file)."""
    engine = load_engine(model, EngineSettings(engine=ENGINES[engine_name]), num_beams=NUM_BEAMS)
    translate, started, test = Translations(engine), time.perf_counter(), splits["test"][: args.limit]
    result = {
        "engine": engine_name,
        "engine_reason": engine.reason,
        "source_context": bool(getattr(engine.config, "source_context", False)),
        "formality_tags": bool(getattr(engine.config, "formality_tags", False)),
        "context_disambiguation": disambiguation(splits["validation"] + splits["test"], translate, args.limit),
        "test_split": whole_split(test, translate, args.paired_samples),
        "formality": formality(sets, language, translate, args.limit),
    }
    if args.baseline:
        baseline = Translations(load_engine(args.baseline, ENGINES[engine_name], num_beams=NUM_BEAMS))
        sources, none = [m.source for m in test], [None] * len(test)
        hypotheses = {"baseline": baseline(sources, none), "model": translate(sources, none)}
        compared = paired_comparison("baseline", "model", hypotheses, [m.reference for m in test], args.paired_samples)
        result["against_baseline"] = {"baseline": args.baseline, "formality": "default", "context": "none", **compared}
    result["minutes"] = round((time.perf_counter() - started) / 60, 2)
    return result


def summary(name: str, run: dict) -> str:
    """One engine's figures in a few lines, as the command prints them."""
    lines, found = [f"{name} ({run['engine_reason']}):"], run["context_disambiguation"]
    if "paired" in found:
        lines.append(
            f"  disambiguation: {found['texts']} texts, {found['measured']} messages, {found['paired']}, matches "
            f"{found['match_rate_without_context']:.1%} -> {found['match_rate_with_context']:.1%} with context, "
            f"McNemar p {found['mcnemar_exact_p']:.4f}"
        )
    for label, key, names in (
        ("test split, without -> with context", "test_split", ("without_context", "with_context")),
        ("baseline -> model", "against_baseline", ("baseline", "model")),
    ):
        if "verdict" in run.get(key, {}):
            bleu = run[key]["bleu"]
            lines.append(
                f"  {label}: BLEU {bleu[names[0]]} -> {bleu[names[1]]} (mean {bleu['mean_difference']:+}, 95% "
                f"{bleu['ci95']}, p {bleu['p_value']:.4f}): {run[key]['verdict']}"
            )
    for set_name, found in run["formality"].items():
        if isinstance(found, dict) and "sentences" in found:
            shares = {asked: found[asked].get("share_in_asked", "refused") for asked in ("more", "less", "default")}
            lines.append(f"  formality, {set_name}: {found['sentences']} sentences, in the asked register {shares}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="a saved model directory")
    parser.add_argument("--data", default="../shared/data/en-fr-ui", help="a UI corpus: {validation,test}.tsv")
    parser.add_argument("--engine", nargs="+", default=["generate"], choices=list(ENGINES))
    parser.add_argument("--formality_data", nargs="*", default=[], help="more test TSVs (en, target) for part 3")
    parser.add_argument("--baseline", help="a model without the register tags, compared at formality default")
    parser.add_argument("--target_lang", help="the data's target column (default: the model config's target_lang)")
    parser.add_argument("--limit", type=int, help="each part measures at most its first N messages (a quick look)")
    parser.add_argument("--paired_samples", type=int, default=PAIRED_SAMPLES, help="bootstrap resamples")
    parser.add_argument("--output", help="the results JSON (default: docs/results/context/<model's name>.json)")
    args = parser.parse_args(argv)
    output = Path(args.output or RESULTS / f"{Path(args.model).name}.json")
    if output.exists():
        parser.error(f"--output {str(output)!r} exists; results never replace a file")
    config = json.loads((Path(args.model) / "config.json").read_text())
    language, source_lang = args.target_lang or config["target_lang"], config.get("source_lang") or "en"
    splits = {
        split: read_messages(Path(args.data) / f"{split}.tsv", language, split, source_lang)
        for split in ("validation", "test")
    }
    sets = {"ui_test": splits["test"]}
    sets |= {path: read_messages(Path(path), language, source_lang=source_lang) for path in args.formality_data}
    gflops, started = matmul_gflops(), time.perf_counter()
    runs = {name: run_engine(args.model, name, splits, sets, language, args) for name in dict.fromkeys(args.engine)}
    result = {
        "command": " ".join(
            ["python -m transformer_mt.experiments.context_study", *(argv if argv is not None else sys.argv[1:])]
        ),
        "commit": git_commit(),
        "matmul_gflops": round(gflops, 1),
        "matmul_gflops_after": round(matmul_gflops(), 1),
        "minutes": round((time.perf_counter() - started) / 60, 2),
        "model": args.model,
        "data": args.data,
        "source_lang": source_lang,
        "target_lang": language,
        "limit": args.limit,
        "num_beams": NUM_BEAMS,
        "match_rule": MATCH_RULE,
        "verdict_rule": VERDICT_RULE,
        "engines": runs,
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    for name, run in runs.items():
        print(summary(name, run))


if __name__ == "__main__":
    main()
