"""The term study (issue 41): does a model trained on term annotations write the terms a glossary asks for?

The term test is built from a test split and the terms the model was trained with (its terms.tsv, mined from its own
training data): a test pair enters it for each term whose source occurs in the pair's source (on word boundaries,
any case, the longest of overlapping terms as the glossary takes it) and whose target the reference uses
(`glossary.term_used`), and which the model's translation without a glossary does not use: a required translation
that differs from what the model writes. Each such pair is translated again with its own terms as the glossary
(case-insensitive). Reported: the use rate of the required terms without and with the glossary, and BLEU/chrF of
those pairs without and with it (sacreBLEU's paired bootstrap); every pair whose translation with the glossary still
misses a term is listed, and each used term by the step that brought it in (`quality.Flags`): the
annotation (the first decode), another beam (a sentence decoded again with more beams), placed (in the model's own
word's place), forced (a decode with the term at the end of its forced beginning).

    python -m transformer_mt.experiments.term_study --model models/transformer-mt-en-de-broad
"""

import argparse
import collections
import json
import re
import sys
import time
from pathlib import Path

from transformer_mt.calibration import pairs_of
from transformer_mt.engines import load_engine
from transformer_mt.evaluation import compare_systems
from transformer_mt.experiments.studies import git_commit
from transformer_mt.machine import matmul_gflops
from transformer_mt.options import TranslationOptions
from transformer_mt.text.glossary import annotate, read_glossary, term_index, term_used
from transformer_mt.text.languages import DE
from transformer_mt.text.spans import mask
from transformer_mt.translation import translate_texts


SPLITS = {"en-de": "data/en-de", "en-de-ui": "../shared/data/en-de-ui"}


def required_terms(source: str, reference: str, output: str, index: dict) -> tuple[tuple[str, str], ...]:
    """The terms of `index` the pair requires and the model's plain translation does not use, outside protected
    spans (a URL's "table.html" asks for no term)."""
    source, reference, output = (mask(text)[0] for text in (source, reference, output))
    words = {word.casefold() for word in re.findall(r"\w+", source)}
    candidates = {(term, target) for word in words for term, target in index.get(word, ())}
    # the longest of overlapping terms, as the glossary takes them (`annotate` gives each as found in the source)
    taken = {(found.casefold(), target) for found, target in annotate(source, tuple(sorted(candidates)), True)[1]}
    return tuple(
        sorted(
            (term, target)
            for term, target in candidates
            if (term.casefold(), target) in taken
            and term_used(reference, target, DE)
            and not term_used(output, target, DE)
        )
    )


def study(model: str, data: str) -> dict:
    engine = load_engine(model, "auto")
    index = term_index(read_glossary(str(Path(model) / "terms.tsv")))
    sources, references = pairs_of(data, "test")
    plain = [
        text[0][0] if text else ""
        for text in translate_texts(engine, sources, TranslationOptions(split_sentences=False))
    ]
    tests = [(i, required_terms(sources[i], references[i], plain[i], index)) for i in range(len(sources))]
    tests = [(i, terms) for i, terms in tests if terms]
    decoded = [
        translate_texts(
            engine, [sources[i]], TranslationOptions(split_sentences=False, glossary=terms, glossary_ignore_case=True)
        )[0]
        for i, terms in tests
    ]
    with_glossary = [text[0][0] for text in decoded]
    required = sum(len(terms) for _, terms in tests)
    used = sum(
        term_used(output, target, DE) for (_, terms), output in zip(tests, with_glossary) for _, target in terms
    )
    steps = collections.Counter(
        "forced"
        if target in text.flags.terms_forced
        else "placed"
        if target in text.flags.terms_placed
        else "another beam"
        if text.flags.terms_redecoded
        else "annotation"
        for (_, terms), text in zip(tests, decoded)
        for _, target in terms
        if term_used(text[0][0], target, DE)
    )
    compared = (
        compare_systems(
            {"without glossary": [plain[i] for i, _ in tests], "with glossary": with_glossary},
            [references[i] for i, _ in tests],
            ("bleu", "chrf"),
            "bs",
            1000,
        )
        if tests
        else {}
    )
    return {
        "engine": engine.name,
        "pairs": len(sources),
        "term_pairs": len(tests),
        "terms_required": required,
        "used_without": 0,
        "used_with": used,
        "use_rate_with": round(used / required, 4) if required else None,
        "used_by_step": {step: steps[step] for step in ("annotation", "another beam", "placed", "forced")},
        "paired": compared,
        "examples": [
            {"source": sources[i], "terms": terms, "without": plain[i], "with": output}
            for (i, terms), output in list(zip(tests, with_glossary))[:10]
        ],
        "missed": [
            {"source": sources[i], "reference": references[i], "terms": terms, "with": output}
            for (i, terms), output in zip(tests, with_glossary)
            if not all(term_used(output, target, DE) for _, target in terms)
        ],
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--output", required=True)
    args = parser.parse_args(argv)
    results = {"commit": git_commit(), "model": args.model, "gflops_before": round(matmul_gflops(), 1)}
    start = time.monotonic()
    results["splits"] = {split: study(args.model, data) for split, data in SPLITS.items()}
    results["seconds"], results["gflops_after"] = round(time.monotonic() - start), round(matmul_gflops(), 1)
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    for split, found in results["splits"].items():
        print(split, found["term_pairs"], found["terms_required"], found["use_rate_with"], file=sys.stderr)


if __name__ == "__main__":
    main()
