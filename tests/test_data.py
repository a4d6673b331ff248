"""The parallel-data loader (every format, every error at the boundary) and the vendored data/en-de subset."""

import json
from collections import Counter
from pathlib import Path

import datasets
import pytest

from transformer_mt.data import SPLITS, load_parallel_data


VENDORED = Path(__file__).resolve().parents[1] / "data" / "en-de"
VENDORED_ROWS = {  # split -> origin -> rows, as data/en-de/README.md states
    "train": {"lohelp": 41271, "gnomehelp": 5383},
    "validation": {"lohelp": 518, "gnomehelp": 69},
    "test": {"lohelp": 515, "gnomehelp": 87},
}
PAIRS = [
    ("Open the file.", 'Öffnen Sie die "Datei".'),
    ("Click OK, then close.", "Klicken Sie auf OK, dann schließen."),
]


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def tsv(pairs=PAIRS, header="en\tde") -> str:
    return header + "\n" + "".join(f"{en}\t{de}\n" for en, de in pairs)


def jsonl(objects) -> str:
    return "".join(json.dumps(obj, ensure_ascii=False) + "\n" for obj in objects)


def texts(dataset: datasets.Dataset, source="en", target="de"):
    return list(zip(dataset[source], dataset[target]))


FORMATS = {
    "train.tsv": tsv(),
    # CSV quoting protects commas and doubled quotes inside a field.
    "train.csv": "de,en\n" + "".join(f'"{de.replace(chr(34), 2 * chr(34))}","{en}"\n' for en, de in PAIRS),
    "train.jsonl": jsonl({"en": en, "de": de} for en, de in PAIRS),
    "train.json": jsonl({"id": i, "translation": {"de": de, "en": en}} for i, (en, de) in enumerate(PAIRS)),
}


@pytest.mark.parametrize("name", FORMATS)
def test_each_format_loads(tmp_path, name):
    path = write(tmp_path / name, FORMATS[name])
    corpus = load_parallel_data({"train": path})
    assert isinstance(corpus, datasets.DatasetDict)
    assert corpus["train"].column_names == ["en", "de"]
    assert texts(corpus["train"]) == PAIRS


def test_direction_and_extra_columns(tmp_path):
    path = write(tmp_path / "pairs.tsv", "origin\ten\tde\n" + "".join(f"x\t{en}\t{de}\n" for en, de in PAIRS))
    corpus = load_parallel_data({"validation": str(path)}, "de", "en", extra_columns=["origin"])
    assert corpus["validation"].column_names == ["de", "en", "origin"]
    assert corpus["validation"]["origin"] == ["x", "x"]
    assert texts(corpus["validation"], "de", "en") == [(de, en) for en, de in PAIRS]


def test_directory_form(tmp_path):
    write(tmp_path / "train.tsv", tsv())
    write(tmp_path / "validation.jsonl", jsonl([{"en": "Yes", "de": "Ja"}]))
    write(tmp_path / "test.csv", "en,de\nNo,Nein\n")
    write(tmp_path / "README.md", "not a split\n")
    corpus = load_parallel_data(tmp_path)
    assert list(corpus) == list(SPLITS)
    assert [corpus[split].num_rows for split in SPLITS] == [2, 1, 1]
    assert texts(corpus["test"]) == [("No", "Nein")]


def test_directory_with_two_files_for_a_split_is_ambiguous(tmp_path):
    write(tmp_path / "train.tsv", tsv())
    write(tmp_path / "train.csv", "en,de\nNo,Nein\n")
    with pytest.raises(ValueError, match=r"several files for split 'train': train.csv, train.tsv"):
        load_parallel_data(tmp_path)


@pytest.mark.parametrize(
    "name, text, line, problem",
    [
        ("bad.tsv", tsv() + "Only English\n", 4, "expected 2 fields (en, de), found 1"),
        ("bad.tsv", tsv() + "a\tb\tc\n", 4, "expected 2 fields (en, de), found 3"),
        ("bad.tsv", tsv() + "\n" + "a\tb\n", 4, "expected 2 fields (en, de), found 0"),
        ("bad.tsv", "en\tde\nHello\t \n", 2, "empty 'de' text"),
        ("bad.tsv", "en\tde\n\tHallo\n", 2, "empty 'en' text"),
        ("bad.csv", 'en,de\nOK,OK\n"unterminated,x\n', 3, "unexpected end of data"),
        ("bad.csv", "en,de\nOK,OK\nx\n", 3, "expected 2 fields (en, de), found 1"),
        ("bad.jsonl", jsonl([{"en": "a", "de": "b"}]) + '{"en": "a", "de": }\n', 2, "invalid JSON"),
        ("bad.jsonl", jsonl([{"en": "a", "de": "b"}]) + "\n", 2, "invalid JSON"),
        ("bad.jsonl", jsonl([{"en": "a", "de": "b"}, ["a", "b"]]), 2, "expected a JSON object, found list"),
        ("bad.jsonl", jsonl([{"en": "a", "de": "b"}, {"en": "a"}]), 2, "missing column 'de'; columns found: 'en'"),
        ("bad.json", jsonl([{"translation": {"en": "a", "de": ""}}]), 1, "empty 'de' text"),
        ("bad.json", jsonl([{"en": "a", "de": 3}]), 1, "'de' is not a string: 3"),
    ],
)
def test_malformed_line_names_file_and_line(tmp_path, name, text, line, problem):
    path = write(tmp_path / name, text)
    with pytest.raises(ValueError) as error:
        load_parallel_data({"train": path})
    assert str(error.value).startswith(f"{path}, line {line}: ")
    assert problem in str(error.value)


def test_invalid_utf8_names_line(tmp_path):
    path = tmp_path / "bad.tsv"
    path.write_bytes(b"en\tde\nok\tok\nbad\t\xff\n")
    with pytest.raises(ValueError, match=r"bad.tsv, line 3: not UTF-8"):
        load_parallel_data({"train": path})


def test_missing_header_column_lists_columns_found(tmp_path):
    path = write(tmp_path / "train.tsv", tsv(header="en\tfr"))
    with pytest.raises(ValueError) as error:
        load_parallel_data({"train": path})
    assert str(error.value) == f"{path}, line 1 (header): missing column 'de'; columns found: 'en', 'fr'"


def test_missing_extra_column(tmp_path):
    path = write(tmp_path / "train.csv", "en,de\na,b\n")
    with pytest.raises(ValueError, match=r"missing column 'origin'; columns found: 'en', 'de'"):
        load_parallel_data({"train": path}, extra_columns=["origin"])


@pytest.mark.parametrize("text", ["", "en\tde\n"])
def test_file_without_rows(tmp_path, text):
    path = write(tmp_path / "train.tsv", text)
    with pytest.raises(ValueError, match=str(path)):
        load_parallel_data({"train": path})


def test_missing_file_is_named(tmp_path):
    missing = tmp_path / "nowhere" / "train.tsv"
    with pytest.raises(FileNotFoundError, match=f"{missing}: no such file"):
        load_parallel_data({"train": missing})


def test_missing_directory_is_named(tmp_path):
    missing = tmp_path / "no-such-dir"
    with pytest.raises(FileNotFoundError, match=str(missing)):
        load_parallel_data(missing)
    with pytest.raises(FileNotFoundError, match=str(missing)):
        load_parallel_data(str(missing))


def test_single_file_asks_for_a_mapping(tmp_path):
    path = write(tmp_path / "train.tsv", tsv())
    with pytest.raises(ValueError, match=r"is a file; pass a mapping such as \{'train': "):
        load_parallel_data(path)


def test_directory_without_split_files(tmp_path):
    write(tmp_path / "train.txt", "en de\n")
    with pytest.raises(FileNotFoundError, match=r"holds none of train\.\*, validation\.\*, test\.\*"):
        load_parallel_data(tmp_path)


def test_unknown_extension_lists_supported(tmp_path):
    path = write(tmp_path / "train.txt", "en\tde\na\tb\n")
    with pytest.raises(ValueError, match=r"unsupported extension '\.txt'; supported: \.tsv, \.csv, \.jsonl, \.json"):
        load_parallel_data({"train": path})


def test_same_language_twice_is_rejected(tmp_path):
    with pytest.raises(ValueError, match="both 'en'"):
        load_parallel_data({"train": tmp_path / "train.tsv"}, "en", "en")


def test_hub_name_goes_to_load_dataset(monkeypatch):
    calls = []

    def fake_load_dataset(name, config_name):
        calls.append((name, config_name))
        translation = datasets.Features(
            {"id": datasets.Value("string"), "translation": datasets.Translation(["de", "en"])}
        )
        rows = {"id": ["0"], "translation": [{"de": "Hallo", "en": "Hello"}]}
        return datasets.DatasetDict({"train": datasets.Dataset.from_dict(rows, features=translation)})

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    corpus = load_parallel_data("someone/wmt-like", config_name="de-en")
    assert calls == [("someone/wmt-like", "de-en")]
    assert corpus["train"].column_names == ["en", "de"]
    assert texts(corpus["train"]) == [("Hello", "Hallo")]
    with pytest.raises(ValueError, match=r"someone/wmt-like, split 'train': missing column 'fr'"):
        load_parallel_data("someone/wmt-like", "en", "fr")


def test_missing_local_file_name_is_not_sent_to_the_hub(monkeypatch):
    monkeypatch.setattr(datasets, "load_dataset", lambda *args: pytest.fail("went to the Hub"))
    with pytest.raises(FileNotFoundError, match="no-such-corpus.tsv"):
        load_parallel_data("no-such-corpus.tsv")


@pytest.fixture(scope="module")
def vendored():
    return load_parallel_data(VENDORED, extra_columns=["origin"])


def test_vendored_rows_and_origins(vendored):
    assert list(vendored) == list(SPLITS)
    for split, expected in VENDORED_ROWS.items():
        assert Counter(vendored[split]["origin"]) == expected, split


def test_vendored_files_stay_small():
    for split in SPLITS:
        assert (VENDORED / f"{split}.tsv").stat().st_size < 7_000_000


@pytest.mark.parametrize("split", ["validation", "test"])
def test_vendored_held_out_sources_not_in_train(vendored, split):
    train_sources = {text.casefold() for text in vendored["train"]["en"]}
    assert not [text for text in vendored[split]["en"] if text.casefold() in train_sources]


def test_the_data_readme_example_runs(monkeypatch):
    import re

    readme = (VENDORED / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
    assert blocks
    monkeypatch.chdir(VENDORED.parents[1])  # the repository root, as the example's path assumes
    namespace = {}
    for block in blocks:
        exec(compile(block, "data/en-de/README.md", "exec"), namespace)
    assert set(namespace["corpus"]) == {"train", "validation", "test"}


def test_the_version_is_written_once():
    from importlib.metadata import version

    import transformer_mt

    assert version("transformer-mt") == transformer_mt.__version__
    project = (VENDORED.parents[1] / "pyproject.toml").read_text().split("[tool.setuptools.dynamic]")[0]
    assert "version =" not in project


def joined_fixture(rows: int = 40):
    sources = [f"Source {i}." for i in range(rows)]
    return datasets.Dataset.from_dict(
        {"en": sources, "de": [f"Ziel {i}." for i in range(rows)], "origin": ["lohelp"] * rows}
    )


def test_joined_pairs_are_consecutive_pairs_joined_alike_and_drawn_from_the_seed_alone():
    from transformer_mt.data import add_joined_pairs

    def fits(sources, targets):
        return [True] * len(sources)

    dataset = joined_fixture()
    joined, added = add_joined_pairs(dataset, "en", "de", 0.25, seed=3, fits=fits)
    again, _ = add_joined_pairs(joined_fixture(), "en", "de", 0.25, seed=3, fits=fits)
    other, _ = add_joined_pairs(joined_fixture(), "en", "de", 0.25, seed=4, fits=fits)
    assert added == 10 and len(joined) == 50 and joined.column_names == ["en", "de"]
    assert joined[:40]["en"] == dataset["en"] and joined[:40]["de"] == dataset["de"]  # the originals first, unchanged
    assert joined["en"] == again["en"] and joined["de"] == again["de"]  # the same seed adds the same pairs
    assert joined["en"][40:] != other["en"][40:]
    for source, target in zip(joined["en"][40:], joined["de"][40:]):
        numbers = [int(word.rstrip(".")) for word in source.split() if word != "Source"]
        assert 2 <= len(numbers) <= 3 and numbers == list(range(numbers[0], numbers[0] + len(numbers)))
        assert target == " ".join(f"Ziel {n}." for n in numbers)  # the target joins the same pairs


def test_joined_pairs_leave_out_those_over_the_length_limits():
    from transformer_mt.data import add_joined_pairs

    def fits(sources, targets):
        return [source.count("Source") == 2 for source in sources]  # a limit that only 2-pair joins meet

    joined, added = add_joined_pairs(joined_fixture(), "en", "de", 0.25, seed=0, fits=fits)
    assert added == 10 and all(source.count("Source") == 2 for source in joined["en"][40:])
    none, added = add_joined_pairs(joined_fixture(), "en", "de", 0.25, seed=0, fits=lambda s, t: [False] * len(s))
    assert added == 0 and len(none) == 40
