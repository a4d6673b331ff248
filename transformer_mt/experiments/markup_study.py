"""The markup study: how inline markup fares through translation, on real help paragraphs whose tags the human
translators placed (`../shared/data/en-de-markup/dev.tsv`).

Three ways to carry the tags, each through the shipped model's default engine with default options:
- `sentence`: the package's way (`format="html"`): each run of text translated whole, sentence by sentence, and
  every tag put back around the words the word alignment takes its words to (`transformer_mt.text.inline`);
- `per_node`: the way before it: every text node between tags translated on its own as if it were a sentence;
- `strawman`: every tag wrapped around the whole translated sentence that holds it (placement only).

Reported: outputs that parse as XML and hold every source tag (name, class, href) exactly once; tags placed by
the fallback rule; the markup's cost, BLEU/chrF of the output's text against `de_plain` beside the plain
translation of `en_plain` (sacreBLEU's paired bootstrap); and where the tags land: per tag kind, the mean chrF of
each tag's text against the text of the reference's same tag (the k-th tag of the same name, class and href).

    python -m transformer_mt.experiments.markup_study --output docs/results/markup/dev.json
"""

import argparse
import collections
import csv
import json
import sys
import time
from pathlib import Path

import sacrebleu
from bs4 import BeautifulSoup, NavigableString
from lxml import etree

from transformer_mt.engines import load_engine
from transformer_mt.evaluation import compare_systems
from transformer_mt.experiments.studies import git_commit
from transformer_mt.machine import matmul_gflops
from transformer_mt.options import TranslationOptions
from transformer_mt.text.inline import WRAP
from transformer_mt.text.markup import HtmlDocuments, verbatim
from transformer_mt.text.sentences import rewrap, split
from transformer_mt.translation import assemble, decode, segment, translate_texts


MODEL = "models/transformer-mt-en-de-broad"
DATA = "../shared/data/en-de-markup/dev.tsv"


def read_rows(path: str) -> list[dict]:
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


def tag_key(tag) -> tuple:
    return tag.name, " ".join(tag.get("class", [])), tag.get("href", "")


def kind(key: tuple) -> str:
    return f"{key[0]}.{key[1]}" if key[1] else key[0]


def tags(fragment: str) -> dict[tuple, list[str]]:
    """Each tag's (name, class, href) -> the texts of its occurrences, in document order."""
    found = collections.defaultdict(list)
    for tag in BeautifulSoup(fragment, "html.parser").find_all(True):
        found[tag_key(tag)].append(" ".join(tag.get_text().split()))
    return found


def text_of(fragment: str) -> str:
    return " ".join(BeautifulSoup(fragment, "html.parser").get_text().split())


def well_formed(fragment: str) -> bool:
    try:
        etree.fromstring(f"<r>{fragment}</r>".encode())
    except etree.XMLSyntaxError:
        return False
    return True


def sentence_way(engine, sources: list[str]) -> tuple[list[str], int]:
    """The package's html format, and the number of tags placed by the fallback rule."""
    options = TranslationOptions(format="html")
    segments = segment(sources, options, engine.config)
    hypotheses = decode(engine, segments.sentences, options, segments.names)
    outputs = [text for (text, _), *_ in assemble(segments, hypotheses)]
    return outputs, segments.documents.fallbacks


def per_node_way(engine, sources: list[str]) -> list[str]:
    """Every text node (outside verbatim elements) translated on its own, its whitespace kept."""
    soups = [BeautifulSoup(source, "html.parser") for source in sources]
    nodes = [
        node
        for soup in soups
        for node in soup.find_all(string=True)
        if node.strip()
        and not any(verbatim(parent) for parent in node.parents if parent.name not in (None, "[document]"))
    ]
    translations = translate_texts(engine, [node.strip() for node in nodes], TranslationOptions())
    for node, hypotheses in zip(nodes, translations):
        node.replace_with(NavigableString(rewrap(str(node), hypotheses[0][0] if hypotheses else "")))
    return [str(soup) for soup in soups]


def strawman_tags(engine, sources: list[str]) -> list[dict[tuple, list[str]]]:
    """Per source: every wrapping tag's text as the whole translated sentence that holds it."""
    documents = HtmlDocuments(sources)
    runs = [run for _, run in documents.runs]
    pieces = [split(run.text, "en")[0] for run in runs]
    flat = [piece for run_pieces in pieces for piece in run_pieces]
    translated = iter(translate_texts(engine, flat, TranslationOptions(split_sentences=False)))
    found = [collections.defaultdict(list) for _ in sources]
    owner = {id(run): k for k, soup in enumerate(documents.soups) for s, run in documents.runs if s is soup}
    for run, run_pieces in zip(runs, pieces):
        translations = [(next(translated) or [("", None)])[0][0] for _ in run_pieces]
        starts = [run.text.find(piece) for piece in run_pieces]
        for element, source in zip(run.elements, run.sources):
            if element.kind == WRAP:
                holder = max([k for k, start in enumerate(starts) if start <= element.start] or [0])
                found[owner[id(run)]][tag_key(source)].append(" ".join(translations[holder].split()))
    return found


def placement(outputs: list[dict], references: list[dict]) -> dict[str, dict]:
    """Per tag kind: the mean chrF of each reference tag's text against the output's same tag (0 when missing)."""
    scores = collections.defaultdict(list)
    for output, reference in zip(outputs, references):
        for key, texts in reference.items():
            for k, text in enumerate(texts):
                ours = output.get(key, [])
                scores[kind(key)].append(sacrebleu.sentence_chrf(ours[k], [text]).score if k < len(ours) else 0.0)
    return {
        name: {"tags": len(values), "chrf": round(sum(values) / len(values), 2)}
        for name, values in sorted(scores.items())
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=MODEL)
    parser.add_argument("--data", default=DATA)
    parser.add_argument("--engine", default="auto")
    parser.add_argument("--max_samples", type=int)
    parser.add_argument("--output", help="the results' JSON")
    args = parser.parse_args(argv)
    rows = read_rows(args.data)[: args.max_samples]
    engine = load_engine(args.model, args.engine)
    sources, references = [row["en"] for row in rows], [row["de"] for row in rows]
    started = time.time()
    ours, fallbacks = sentence_way(engine, sources)
    nodes = per_node_way(engine, sources)
    plain = [
        hypotheses[0][0] if hypotheses else ""
        for hypotheses in translate_texts(engine, [row["en_plain"] for row in rows], TranslationOptions())
    ]
    reference_tags = [tags(reference) for reference in references]
    source_tags = [tags(source) for source in sources]
    results = {
        "command": " ".join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])]),
        "commit": git_commit(),
        "matmul_gflops": round(matmul_gflops(), 1),
        "model": args.model,
        "engine": engine.name,
        "rows": len(rows),
        "tags": sum(sum(map(len, found.values())) for found in source_tags),
        "sentence": {"fallbacks": fallbacks},
        "per_node": {},
    }
    for name, outputs in (("sentence", ours), ("per_node", nodes)):
        results[name]["well_formed"] = sum(map(well_formed, outputs))
        results[name]["tags_kept"] = sum(
            {key: len(texts) for key, texts in tags(output).items()}
            == {key: len(texts) for key, texts in found.items()}
            for output, found in zip(outputs, source_tags)
        )
        results[name]["placement"] = placement([tags(output) for output in outputs], reference_tags)
    results["strawman"] = {"placement": placement(strawman_tags(engine, sources), reference_tags)}
    plain_references = [row["de_plain"] for row in rows]
    results["cost"] = compare_systems(
        {"plain": plain, "sentence": [text_of(o) for o in ours], "per_node": [text_of(o) for o in nodes]},
        plain_references,
    )
    results["minutes"] = round((time.time() - started) / 60, 1)
    text = json.dumps(results, indent=1, ensure_ascii=False)
    print(text)
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
