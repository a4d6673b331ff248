"""The pair corpus of a shipped model: both corpora joined, the dictionary left out, validation interleaved."""

import pytest

from transformer_mt.data import load_parallel_data
from transformer_mt.experiments.language_data import formality_mix, write_corpus


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
    # a model trained on the dictionary keeps it in its fine-tune's data
    kept = write_corpus("fr", tmp_path / "kept", shared, left_out=frozenset())
    assert kept == {"train": 7, "validation": 7, "test": 7}


def test_the_formality_mix_keeps_every_register_pair_copies_informal_ones_and_draws_the_rest():
    rows = [{"en": "Save your file", "de": "Speichern Sie Ihre Datei"}]  # formal
    rows += [{"en": "Save your file", "de": "Speichere deine Datei"}]  # informal
    rows += [{"en": f"File {i}", "de": f"Datei {i}"} for i in range(10)]  # nobody addressed
    corpus = {"train": rows, "validation": rows[:1], "test": rows[:2]}
    mixed = formality_mix(corpus, "de", general=4, informal_copies=3)
    targets = [row["de"] for row in mixed["train"]]
    assert len(targets) == 1 + 3 + 4
    assert targets.count("Speichern Sie Ihre Datei") == 1 and targets.count("Speichere deine Datei") == 3
    assert len({t for t in targets if t.startswith("Datei ")}) == 4
    assert mixed["validation"] == rows[:1] and mixed["test"] == rows[:2]
    assert formality_mix(corpus, "de", general=4, informal_copies=3) == mixed  # seeded


def test_informal_rewrites_add_each_formal_pair_again_in_du_tagged_informal():
    rows = [{"en": "Save your file", "de": "Speichern Sie Ihre Datei"}]  # formal
    rows += [{"en": "Do you want to quit?", "de": "Wollen Sie beenden?"}]  # formal
    rows += [{"en": "Your turn", "de": "Du bist dran"}]  # informal
    rows += [{"en": f"File {i}", "de": f"Datei {i}"} for i in range(3)]
    corpus = {"train": rows, "validation": [], "test": []}
    mixed = formality_mix(corpus, "de", general=0, informal_copies=2, informal_rewrites=True)
    pairs = sorted((row["en"], row["de"]) for row in mixed["train"])
    assert pairs == sorted(
        [
            ("Save your file", "Speichern Sie Ihre Datei"),
            ("Do you want to quit?", "Wollen Sie beenden?"),
            *[("<informal> Save your file", "Speichere deine Datei")] * 2,
            *[("<informal> Do you want to quit?", "Willst du beenden?")] * 2,
            *[("<informal> Your turn", "Du bist dran")] * 2,  # the corpus's own informal pairs tagged too
        ]
    )
    with pytest.raises(ValueError, match="informal_rewrites: rewrites exist for German only, not for 'fr'"):
        formality_mix(corpus, "fr", general=0, informal_copies=1, informal_rewrites=True)


def test_a_corpus_folder_is_read_as_it_is_for_a_models_own_data(tmp_path):
    rows = [["Save your file", "Speichern Sie Ihre Datei", "lohelp"], ["File", "Datei", "lohelp"]]
    for split in ("train", "validation", "test"):
        write_tsv(tmp_path / "help" / f"{split}.tsv", ["en", "de", "origin"], rows)
    sizes = write_corpus("de", tmp_path / "out", corpus_folder=tmp_path / "help", general=1, informal_rewrites=True)
    assert sizes == {"train": 3, "validation": 2, "test": 2}
    corpus = load_parallel_data(tmp_path / "out", "en", "de", extra_columns=["origin"])
    assert sorted(corpus["train"]["en"]) == ["<informal> Save your file", "File", "Save your file"]
    assert corpus["test"]["de"] == ["Speichern Sie Ihre Datei", "Datei"]
