"""The training data of a language pair's shipped model: help text and UI messages in one corpus (issue 52).

A pair's corpus joins ../shared/data's two corpora of its language (`en-X`: LibreOffice and GNOME help, Debian's
package descriptions; `en-X-ui`: the UI messages of Debian packages' gettext catalogues), for either direction
(columns are named by language, so `--source_lang X --target_lang en` reads the same files the other way):

- train: both train splits, the help text first, each in its own order (joined pairs join neighbours), without the
  dictionary entries (`ding`, en-de only: one-word glosses that cost steps and score 7 BLEU at best);
- validation: the two validation splits interleaved row by row, so that the run's first N validation pairs
  (`--max_eval_samples`) are half UI messages, half help text;
- test: the UI test split, then the help text's, each row keeping its `origin` (`score.py --by_column origin`).

A `context` column (the message's msgctxt; empty for help text and for en-de-ui, which has none) is kept where the UI
corpus has one.

    python -m transformer_mt.experiments.language_data --language de --output runs/data/en-de

`--formality_mix GENERAL` writes instead a train split for teaching an existing model the formality tags
(`formality_mix`): the pairs addressing the reader in a register, the informal ones `--informal_copies` times, and
GENERAL others (the en→de models' fine-tune, docs/results/languages/README.md). With `--informal_rewrites` (German
only) every formal pair whose target `experiments.informal_german` can rewrite to du is added again, its source
tagged `<informal>` and its target rewritten: the same content in both registers (every informal pair then
carries its tag, so that an untagged source stays formal).
"""

import argparse
import csv
import itertools
import random
from pathlib import Path

from transformer_mt.experiments.informal_german import informal
from transformer_mt.text.formality import TAGS, register


SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
LEFT_OUT_ORIGINS = frozenset({"ding"})
SPLITS = ("train", "validation", "test")


def read_rows(path: Path) -> list[dict[str, str]]:
    """The rows of a corpus TSV (header line, tab-separated, no quoting)."""
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


def interleave(*splits: list[dict]) -> list[dict]:
    """The rows of `splits` taken one from each in turn, then the rest of the longer ones."""
    rows = itertools.chain.from_iterable(itertools.zip_longest(*splits))
    return [row for row in rows if row is not None]


def pair_corpus(
    language: str, shared_data: Path = SHARED_DATA, left_out: frozenset[str] = LEFT_OUT_ORIGINS
) -> dict[str, list[dict[str, str]]]:
    """The en-`language` corpus's three splits (see the module docstring), rows keyed `en`, `language`, `origin`
    and `context`, without the origins `left_out`."""
    columns = ("en", language, "origin", "context")
    corpora = {}
    for name in ("help", "ui"):
        folder = shared_data / (f"en-{language}" if name == "help" else f"en-{language}-ui")
        if not folder.is_dir():
            raise FileNotFoundError(f"language {language!r}: no corpus folder {folder}")
        corpora[name] = {
            split: [
                {column: row.get(column) or "" for column in columns}
                for row in read_rows(folder / f"{split}.tsv")
                if row["origin"] not in left_out
            ]
            for split in SPLITS
        }
    help_text, ui = corpora["help"], corpora["ui"]
    return {
        "train": help_text["train"] + ui["train"],
        "validation": interleave(ui["validation"], help_text["validation"]),
        "test": ui["test"] + help_text["test"],
    }


def folder_corpus(folder: Path) -> dict[str, list[dict[str, str]]]:
    """The three splits of a corpus folder as they are (`data/en-de`: the help-text model's own data)."""
    return {
        split: [{column: value or "" for column, value in row.items()} for row in read_rows(folder / f"{split}.tsv")]
        for split in SPLITS
    }


def formality_mix(
    corpus: dict[str, list[dict]],
    language: str,
    general: int,
    informal_copies: int,
    seed: int = 0,
    informal_rewrites: bool = False,
) -> dict[str, list[dict]]:
    """The corpus with a train split for teaching an existing model the formality tags: every pair whose target
    addresses the reader in a register (`text.formality.register`), the informal ones `informal_copies` times (they
    are about one in ten), and `general` of the other pairs drawn at random (so the model keeps what it knew),
    shuffled; validation and test as they are. With `informal_rewrites` (German), each formal pair's du rewrite too,
    and every informal pair (rewrites and the corpus's own) has its source tagged `<informal>`, so that a source
    without a tag is translated formally, as the model did before."""
    if informal_rewrites and language != "de":
        raise ValueError(f"informal_rewrites: rewrites exist for German only, not for {language!r}")
    registers = {"formal": [], "informal": [], None: []}
    for row in corpus["train"]:
        registers[register(row["en"], row[language], language)].append(row)
    rng = random.Random(seed)
    informal_pairs = registers["informal"]
    if informal_rewrites:
        rewrites = ((row, informal(row["en"], row[language])) for row in registers["formal"])
        informal_pairs = [tagged(row, "informal") for row in informal_pairs] + [
            tagged({**row, language: rewrite}, "informal") for row, rewrite in rewrites if rewrite
        ]
    train = registers["formal"] + informal_pairs * informal_copies
    train += rng.sample(registers[None], min(general, len(registers[None])))
    rng.shuffle(train)
    return {**corpus, "train": train}


def tagged(row: dict[str, str], register_: str) -> dict[str, str]:
    """`row` with its English source tagged `register_` (`<informal> Save your file`)."""
    return {**row, "en": f"{TAGS[register_]} {row['en']}"}


def write_corpus(
    language: str,
    output: Path,
    shared_data: Path = SHARED_DATA,
    general: int | None = None,
    informal_copies: int = 1,
    informal_rewrites: bool = False,
    corpus_folder: Path | None = None,
    left_out: frozenset[str] = LEFT_OUT_ORIGINS,
) -> dict[str, int]:
    """Write the pair corpus's splits (`corpus_folder`'s instead where given; with `general`, its formality mix) to
    `output`/{train,validation,test}.tsv; returns each split's size."""
    output.mkdir(parents=True, exist_ok=True)
    sizes = {}
    corpus = folder_corpus(corpus_folder) if corpus_folder else pair_corpus(language, shared_data, left_out)
    if general is not None:
        corpus = formality_mix(corpus, language, general, informal_copies, informal_rewrites=informal_rewrites)
    for split, rows in corpus.items():
        with (output / f"{split}.tsv").open("w", encoding="utf-8", newline="") as f:
            f.writelines("\t".join(row) + "\n" for row in [list(rows[0]), *(row.values() for row in rows)])
        sizes[split] = len(rows)
    return sizes


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--language", required=True, help="the language paired with English: de, fr or es")
    parser.add_argument("--output", type=Path, required=True, help="the folder to write the three TSVs to")
    parser.add_argument("--shared_data", type=Path, default=SHARED_DATA, help="where the en-X corpora lie")
    parser.add_argument(
        "--keep_dictionary",
        action="store_true",
        help="keep the dictionary's entries (ding) of the pair corpus (a --corpus folder is read whole)",
    )
    parser.add_argument(
        "--corpus", type=Path, help="a corpus folder to read instead of the pair corpus (data/en-de: help text only)"
    )
    parser.add_argument(
        "--formality_mix",
        type=int,
        metavar="GENERAL",
        help="a train split for a formality fine-tune: the pairs with a register, and GENERAL others",
    )
    parser.add_argument("--informal_copies", type=int, default=1, help="with --formality_mix: informal pairs' copies")
    parser.add_argument(
        "--informal_rewrites",
        action="store_true",
        help="with --formality_mix (German): each formal pair again, rewritten to du and tagged <informal>",
    )
    args = parser.parse_args(argv)
    sizes = write_corpus(
        args.language,
        args.output,
        args.shared_data,
        args.formality_mix,
        args.informal_copies,
        args.informal_rewrites,
        args.corpus,
        frozenset() if args.keep_dictionary else LEFT_OUT_ORIGINS,
    )
    print(sizes)


if __name__ == "__main__":
    main()
