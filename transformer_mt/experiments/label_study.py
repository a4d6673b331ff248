"""The label study (issue 51, item 6): what trying a copied short label in its other forms (`trust.labels`) fixes,
and what it changes that should have stayed.

Each shipped model translates, on its default engine (CTranslate2 where it can) with default options, before (the
label retry switched off) and after:
- the short labels of en-de-ui's validation split that read like a web application's (Django admin's "Summary",
  "Lookup", "Breadcrumbs", language names): one to three words of letters, the first capitalised, at most a colon
  after them, whose German differs; of those the model copied before, how many are no copy after, how many are then
  the reference (case-insensitive), and their chrF before and after;
- `identical.tsv` (3,000 messages the catalogues' translators left unchanged: names, "Linux", "URL"): the share
  whose output changes away from the source (not `quality.same_text`), before and after;
and "after" twice: as shipped, and without the retry's confidence floor (`trust.labels`: any form's translation that
is no copy and sets off no guard wins), which is how that floor was chosen.

    python -m transformer_mt.experiments.label_study --data ../shared/data/en-de-ui --split validation
"""

import argparse
import contextlib
import json
import re
import sys
import time
from pathlib import Path
from unittest import mock

import sacrebleu

from transformer_mt.engines import load_engine
from transformer_mt.experiments.studies import git_commit
from transformer_mt.machine import matmul_gflops
from transformer_mt.options import TranslationOptions
from transformer_mt.quality import same_text
from transformer_mt.translation import translate_texts


MODELS = ("models/transformer-mt-en-de", "models/transformer-mt-en-de-broad")
RESULTS = Path("docs/results/labels")
LABEL = re.compile(r"^[A-Z][A-Za-z'-]*(?: [A-Za-z][A-Za-z'-]*){0,2}:?$")  # "Summary", "Add another", "Latvian:"
EXAMPLES = 15


def read_tsv(path: Path) -> list[tuple[str, str]]:
    """(en, de) of a corpus TSV (header `en<TAB>de<TAB>origin`, no quoting)."""
    lines = path.read_text(encoding="utf-8").splitlines()[1:]
    return [tuple(line.split("\t")[:2]) for line in lines if line]


def short_labels(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The pairs whose English reads as a short UI label (`LABEL`) and whose German differs from it."""
    return [(en, de) for en, de in pairs if LABEL.match(en) and en.casefold() != de.casefold()]


# each run: the patches it decodes under (none: the label retry as shipped)
RUNS = {
    "before": {"transformer_mt.trust.judge.retry_copied_labels": lambda *args: 0},  # no label retry
    "after": {},
    "after_without_floor": {"transformer_mt.trust.labels.COPY_CONFIDENCE": 0.0},
}  # any rated form wins


def outputs(engine, sources: list[str], run: str) -> list[tuple[str, tuple[str, ...]]]:
    """Each source's translation and the guards still flagged, decoded as `RUNS[run]` says."""
    with contextlib.ExitStack() as stack:
        for target, value in RUNS[run].items():
            stack.enter_context(mock.patch(target, value))
        found = translate_texts(engine, sources, TranslationOptions())
    return [(text[0][0] if text else "", text.flags.guards) for text in found]


def label_figures(sources: list[str], references: list[str], before: list, after: list) -> dict:
    """Of the labels copied `before`, how many are no copy `after`, how many the reference, their chrF."""
    copied = [i for i, (text, _) in enumerate(before) if same_text(sources[i], text)]
    fixed = [i for i in copied if not same_text(sources[i], after[i][0])]
    exact = [i for i in fixed if after[i][0].casefold() == references[i].casefold()]

    def chrf(found) -> float | None:
        texts = [found[i][0] for i in copied]
        return round(sacrebleu.corpus_chrf(texts, [[references[i] for i in copied]]).score, 2) if copied else None

    return {
        "labels": len(sources),
        "copied_before": len(copied),
        "flagged_copies_before": sum("copy" in before[i][1] for i in copied),
        "no_copy_after": len(fixed),
        "share_fixed": round(len(fixed) / max(1, len(copied)), 4),
        "reference_after": len(exact),
        "chrf_of_copied_before": chrf(before),
        "chrf_of_copied_after": chrf(after),
        "changed_outside_copies": sum(before[i][0] != after[i][0] for i in range(len(sources)) if i not in copied),
        "examples": [
            {"source": sources[i], "reference": references[i], "after": after[i][0]} for i in fixed[:EXAMPLES]
        ],
    }


def identical_figures(sources: list[str], before: list, after: list) -> dict:
    """How many outputs are not their source again, before and after, and which the retry changed."""
    changed_before = {i for i, (text, _) in enumerate(before) if not same_text(sources[i], text)}
    changed_after = [i for i, (text, _) in enumerate(after) if not same_text(sources[i], text)]
    by_retry = [i for i in changed_after if i not in changed_before]
    return {
        "entries": len(sources),
        "changed_before": len(changed_before),
        "share_changed_before": round(len(changed_before) / len(sources), 4),
        "changed_after": len(changed_after),
        "share_changed_after": round(len(changed_after) / len(sources), 4),
        "changed_by_the_retry": len(by_retry),
        "examples": [{"source": sources[i], "after": after[i][0]} for i in by_retry[:EXAMPLES]],
    }


def run_study(data: Path, split: str, model: str) -> dict:
    """One model's figures: the short labels of `split` and identical.tsv, the label retry as shipped and without
    its confidence floor, each against no retry."""
    start = time.perf_counter()
    engine = load_engine(model)
    labels = short_labels(read_tsv(data / f"{split}.tsv"))
    identical = [en for en, _ in read_tsv(data / "identical.tsv")]
    sources, references = [en for en, _ in labels], [de for _, de in labels]
    found = {run: (outputs(engine, sources, run), outputs(engine, identical, run)) for run in RUNS}
    before = found.pop("before")
    return {
        "model": model,
        "engine": type(engine).__name__,
        "split": split,
        **{
            run: {
                "short_labels": label_figures(sources, references, before[0], labels_after),
                "identical": identical_figures(identical, before[1], identical_after),
            }
            for run, (labels_after, identical_after) in found.items()
        },
        "minutes": round((time.perf_counter() - start) / 60, 2),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="../shared/data/en-de-ui")
    parser.add_argument("--split", default="validation", help="never tune on test")
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--output", help="The results JSON (default: docs/results/labels/<split>.json).")
    args = parser.parse_args(argv)
    output = Path(args.output or RESULTS / f"{args.split}.json")
    if output.exists():
        parser.error(f"--output {str(output)!r} exists; results never replace a file")
    gflops = matmul_gflops()
    studies = [run_study(Path(args.data), args.split, model) for model in args.models]
    result = {
        "commit": git_commit(),
        "command": " ".join(
            ["python -m transformer_mt.experiments.label_study", *(argv if argv is not None else sys.argv[1:])]
        ),
        "matmul_gflops": round(gflops, 1),
        "studies": studies,
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    for study, run in ((study, run) for study in studies for run in ("after", "after_without_floor")):
        labels, identical = study[run]["short_labels"], study[run]["identical"]
        print(
            f"{study['model']} ({study['engine']}, {run}): {labels['no_copy_after']}/{labels['copied_before']} "
            f"copied labels no copy after ({labels['reference_after']} the reference), chrF "
            f"{labels['chrf_of_copied_before']} -> {labels['chrf_of_copied_after']}; identical.tsv changed "
            f"{identical['share_changed_before']:.2%} -> {identical['share_changed_after']:.2%}"
        )


if __name__ == "__main__":
    main()
