"""The pair corpus of a shipped model: both corpora joined, the dictionary left out, validation interleaved."""

from transformer_mt.data import load_parallel_data
from transformer_mt.experiments.language_data import write_corpus


def write_tsv(path, header, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join("\t".join(row) + "\n" for row in [header, *rows]), encoding="utf-8")


def test_pair_corpus_joins_help_and_ui_and_reads_both_ways(tmp_path):
    shared = tmp_path / "shared"
    for split in ("train", "validation", "test"):
        write_tsv(
            shared / "en-fr" / f"{split}.tsv",
            ["en", "fr", "origin"],
            [
                [f"help {split} {i}", f"aide {split} {i}", origin]
                for i, origin in enumerate(["lohelp", "ding", "ddtp"])
            ],
        )
        write_tsv(
            shared / "en-fr-ui" / f"{split}.tsv",
            ["en", "fr", "origin", "context"],
            [[f"ui {split} {i}", f"iu {split} {i}", "gettext:x", "menu" if i else ""] for i in range(4)],
        )
    sizes = write_corpus("fr", tmp_path / "out", shared)
    assert sizes == {"train": 6, "validation": 6, "test": 6}
    corpus = load_parallel_data(tmp_path / "out", "fr", "en", extra_columns=["origin", "context"])
    assert corpus["train"]["fr"] == ["aide train 0", "aide train 2"] + [f"iu train {i}" for i in range(4)]
    assert corpus["validation"]["en"] == [
        "ui validation 0",
        "help validation 0",
        "ui validation 1",
        "help validation 2",
        "ui validation 2",
        "ui validation 3",
    ]
    assert corpus["test"]["context"] == ["", "menu", "menu", "menu", "", ""]
    assert "ding" not in corpus["train"]["origin"]
