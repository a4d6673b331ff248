"""Load parallel text (local TSV/CSV/JSON Lines files or a Hub dataset) into a `datasets.DatasetDict`.

Local files are parsed here instead of by `load_dataset("csv"/"json")` so that every malformed line fails with
its file and 1-based line number, rather than being skipped, mis-split by quoting, or reported as a parser
error without a location.
"""

import csv
import functools
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import datasets
import numpy as np


SPLITS = ("train", "validation", "test")
# Hub translation datasets (wmt16, opus_books, ...) nest the texts as {"translation": {"en": ..., "de": ...}}.
TRANSLATION_KEY = "translation"
_HUB_ID = re.compile(r"[\w-][\w.-]*(/[\w.-]+)?")


def load_parallel_data(
    data_files_or_name: Mapping[str, str | os.PathLike] | str | os.PathLike,
    source_lang: str = "en",
    target_lang: str = "de",
    *,
    extra_columns: Sequence[str] = (),
    config_name: str | None = None,
) -> datasets.DatasetDict:
    """Return one Dataset per split with `source_lang` and `target_lang` text columns (plus `extra_columns`).

    Args:
        data_files_or_name: a mapping split -> file (`.tsv`, `.csv`, `.jsonl`, `.json`), a directory holding
            `train.*`, `validation.*` and/or `test.*`, or a Hub dataset id passed to `datasets.load_dataset`.
            A `str` that names no existing path, has no supported extension and reads as `name` or
            `owner/name` is taken as a Hub id; every other argument is local.
        source_lang, target_lang: the column (or `translation` key) names of the two texts.
        extra_columns: further columns to keep, e.g. `["origin"]`.
        config_name: the Hub dataset's configuration, e.g. "de-en" for wmt16.

    Raises:
        FileNotFoundError: a file or directory does not exist (the message names it).
        ValueError: an unsupported extension, a missing column, or a malformed line (named by file and line).
    """
    if source_lang == target_lang:
        raise ValueError(f"source_lang and target_lang are both {source_lang!r}")
    columns = list(dict.fromkeys([source_lang, target_lang, *extra_columns]))
    if isinstance(data_files_or_name, Mapping):
        files = {split: Path(path).expanduser() for split, path in data_files_or_name.items()}
    elif _is_hub_id(data_files_or_name):
        return _load_hub_dataset(data_files_or_name, config_name, columns)
    else:
        files = _split_files(Path(data_files_or_name).expanduser())
    return datasets.DatasetDict(
        {split: _load_file(path, columns, (source_lang, target_lang)) for split, path in files.items()}
    )


def _is_hub_id(name) -> bool:
    """True when `name` is a str that can only mean a Hub dataset id (see `load_parallel_data`)."""
    return (
        isinstance(name, str)
        and _HUB_ID.fullmatch(name) is not None
        and Path(name).suffix.lower() not in _READERS
        and not os.path.exists(name)
    )


def _split_files(directory: Path) -> dict[str, Path]:
    """Return split -> file for the `train.*`, `validation.*`, `test.*` files of a directory."""
    if not directory.exists():
        raise FileNotFoundError(f"{directory}: no such file or directory")
    if not directory.is_dir():
        raise ValueError(f"{directory} is a file; pass a mapping such as {{'train': {str(directory)!r}}}")
    files = {}
    for split in SPLITS:
        found = sorted(path for path in directory.iterdir() if path.stem == split and path.suffix.lower() in _READERS)
        if len(found) > 1:
            raise ValueError(f"{directory}: several files for split {split!r}: {', '.join(p.name for p in found)}")
        if found:
            files[split] = found[0]
    if not files:
        raise FileNotFoundError(
            f"{directory} holds none of {', '.join(s + '.*' for s in SPLITS)} with a supported extension "
            f"({', '.join(_READERS)})"
        )
    return files


def _load_file(path: Path, columns: list[str], texts: Sequence[str]) -> datasets.Dataset:
    """Parse one local file into a Dataset of `columns`; the `texts` columns must be non-empty strings."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    reader = _READERS.get(path.suffix.lower())
    if reader is None:
        raise ValueError(f"{path}: unsupported extension {path.suffix!r}; supported: {', '.join(_READERS)}")
    table = {column: [] for column in columns}
    for line_number, record in reader(path, _read_lines(path), columns):
        for column in texts:
            if not isinstance(record[column], str):
                raise ValueError(f"{path}, line {line_number}: {column!r} is not a string: {record[column]!r}")
            if not record[column].strip():
                raise ValueError(f"{path}, line {line_number}: empty {column!r} text")
        for column in columns:
            table[column].append(record[column])
    if not table[columns[0]]:
        raise ValueError(f"{path}: no rows")
    return datasets.Dataset.from_dict(table)


def _read_lines(path: Path) -> list[str]:
    """Return the lines of a UTF-8 file with their line ends (a leading BOM dropped); bad bytes name their line."""
    lines = []
    with open(path, "rb") as file:
        # Binary iteration splits on b"\n" only; str.splitlines would also split inside a text at U+2028 etc.
        for line_number, raw in enumerate(file, 1):
            try:
                lines.append(raw.decode("utf-8-sig" if line_number == 1 else "utf-8"))
            except UnicodeDecodeError as error:
                raise ValueError(f"{path}, line {line_number}: not UTF-8 ({error.reason})") from None
    return lines


def _tabular_records(path: Path, lines: list[str], columns: list[str], **dialect) -> Iterator[tuple[int, dict]]:
    """Yield (line number, record) for a header-first delimited file; the header must name every column."""
    reader = csv.reader(lines, strict=True, **dialect)
    try:
        header = next(reader, None)
        if header is None:
            raise ValueError(f"{path}: empty file; expected a header row naming the columns")
        _check_columns(f"{path}, line 1 (header)", columns, header)
        line_number = reader.line_num + 1
        for fields in reader:
            if len(fields) != len(header):
                raise ValueError(
                    f"{path}, line {line_number}: expected {len(header)} fields ({', '.join(header)}), "
                    f"found {len(fields)}"
                )
            yield line_number, dict(zip(header, fields))
            # A quoted CSV field may span lines; a record's number is the line it starts on.
            line_number = reader.line_num + 1
    except csv.Error as error:
        raise ValueError(f"{path}, line {reader.line_num}: {error}") from None


def _jsonl_records(path: Path, lines: list[str], columns: list[str]) -> Iterator[tuple[int, dict]]:
    """Yield (line number, record) for a file with one JSON object per line, flat or Hub `translation` style."""
    for line_number, line in enumerate(lines, 1):
        where = f"{path}, line {line_number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"{where}: invalid JSON ({error.msg}); expected one JSON object per line") from None
        if not isinstance(record, dict):
            raise ValueError(f"{where}: expected a JSON object, found {type(record).__name__}")
        if isinstance(record.get(TRANSLATION_KEY), dict):
            record.update(record.pop(TRANSLATION_KEY))
        _check_columns(where, columns, record)
        yield line_number, record


_READERS = {
    # TSV is split on tabs only: the corpora hold literal quotes, which csv's default quoting would eat.
    ".tsv": functools.partial(_tabular_records, delimiter="\t", quoting=csv.QUOTE_NONE),
    ".csv": _tabular_records,
    ".jsonl": _jsonl_records,
    ".json": _jsonl_records,
}


class MissingColumnError(ValueError):
    """A data file lacks a column it was asked for (a ValueError, as every other data error here)."""


def _check_columns(where: str, columns: Sequence[str], found: Sequence[str]) -> None:
    """Raise MissingColumnError naming the missing columns and the columns found when `found` lacks any of
    `columns`."""
    missing = [column for column in columns if column not in found]
    if missing:
        raise MissingColumnError(
            f"{where}: missing column {', '.join(map(repr, missing))}; columns found: {', '.join(map(repr, found))}"
        )


def _load_hub_dataset(name: str, config_name: str | None, columns: list[str]) -> datasets.DatasetDict:
    """Load a Hub dataset and keep `columns`, lifting them out of a `translation` column where needed."""
    loaded = datasets.load_dataset(name, config_name)
    splits = {}
    for split, dataset in loaded.items():
        if TRANSLATION_KEY in dataset.column_names:
            # flatten() turns the translation struct into "translation.en", "translation.de" columns.
            dataset = dataset.flatten()
            prefix = TRANSLATION_KEY + "."
            dataset = dataset.rename_columns(
                {
                    column: column.removeprefix(prefix)
                    for column in dataset.column_names
                    if column.startswith(prefix) and column.removeprefix(prefix) not in dataset.column_names
                }
            )
        _check_columns(f"{name}, split {split!r}", columns, dataset.column_names)
        splits[split] = dataset.select_columns(columns)
    return datasets.DatasetDict(splits)


def join_consecutive(sources: list[str], targets: list[str], k: int) -> tuple[list[str], list[str]]:
    """Texts of k consecutive pairs each, sources and targets joined alike (a trailing remainder is dropped)."""
    count = len(sources) // k * k
    return (
        [" ".join(sources[i : i + k]) for i in range(0, count, k)],
        [" ".join(targets[i : i + k]) for i in range(0, count, k)],
    )


def joined_pair_groups(
    num_pairs: int, count: int, generator: np.random.Generator, sizes: Sequence[int] = (2, 3)
) -> list[range]:
    """`count` runs of consecutive pair indices, each of a size drawn from `sizes`; the runs may overlap."""
    if count <= 0 or num_pairs < max(sizes):
        return []
    lengths = generator.choice(sizes, size=count)
    starts = generator.integers(0, num_pairs - lengths + 1)
    return [range(start, start + length) for start, length in zip(starts.tolist(), lengths.tolist())]


def add_joined_pairs(
    dataset: datasets.Dataset,
    source_lang: str,
    target_lang: str,
    share: float,
    seed: int,
    fits: Callable[[list[str], list[str]], list[bool]],
    sizes: Sequence[int] = (2, 3),
    rounds: int = 8,
    same: Sequence[str] = (),
    blank: Sequence[str] = (),
) -> tuple[datasets.Dataset, int]:
    """`dataset` followed by multi-sentence pairs: `share` x its size of 2-3 consecutive pairs joined (sources and
    targets alike), each one for which `fits(sources, targets)` holds (the run's length limits); returns the dataset
    and the number added (fewer when `rounds` of candidates hold too few that fit). Drawn from `seed` alone: the
    same seed adds the same pairs, in the same order. `same`: columns whose values the pairs joined must share
    (a target language, a register the data gives), kept for the pairs added. `blank`: columns kept, empty for the
    pairs added (a message's context belongs to one message)."""
    wanted = round(share * len(dataset))
    generator = np.random.default_rng(seed)
    sources, targets = dataset[source_lang], dataset[target_lang]
    values = list(zip(*(dataset[column] for column in same))) if same else None
    joined_sources, joined_targets, joined_values = [], [], []
    for _ in range(rounds):
        missing = wanted - len(joined_sources)
        if missing <= 0:
            break
        # a few more candidates than missing, so that those over the length limits can be left out
        groups = joined_pair_groups(len(dataset), missing + missing // 4 + 8, generator, sizes)
        if values is not None:
            groups = [group for group in groups if len({values[i] for i in group}) == 1]
            if not groups:
                continue
        candidates = (
            [" ".join(sources[i] for i in group) for group in groups],
            [" ".join(targets[i] for i in group) for group in groups],
        )
        for group, source, target, ok in zip(groups, *candidates, fits(*candidates)):
            if ok and len(joined_sources) < wanted:
                joined_sources.append(source)
                joined_targets.append(target)
                joined_values.append(values[group[0]] if values is not None else ())
    if not joined_sources:
        return dataset, 0
    columns = {
        source_lang: joined_sources,
        target_lang: joined_targets,
        **{column: [value[k] for value in joined_values] for k, column in enumerate(same)},
        **{name: [""] * len(joined_sources) for name in blank},
    }
    joined = datasets.Dataset.from_dict(columns)
    other = [name for name in dataset.column_names if name not in columns]
    return datasets.concatenate_datasets([dataset.remove_columns(other), joined]), len(joined_sources)


def dataset_card_data(data: str) -> dict:
    """The YAML metadata of a dataset card (`license`, `language`, `attribution`, ...): the README.md of a local
    data directory, or the Hub dataset's card when reachable; {} when there is none."""
    from huggingface_hub import DatasetCard

    path = Path(str(data)).expanduser()
    try:
        if path.is_dir():
            readme = path / "README.md"
            return DatasetCard.load(readme).data.to_dict() if readme.is_file() else {}
        return DatasetCard.load(str(data)).data.to_dict() if _is_hub_id(str(data)) else {}
    except (OSError, ValueError):  # no card, no network, malformed metadata: the model card then says so
        return {}


def data_sources(data: str, column: str = "origin", limit: int | None = None) -> list[dict]:
    """Where a local data directory's training pairs come from: one entry per value of its train split's `column`
    (`origin`, ...), in order of first appearance, with its pairs counted (the first `limit` only, as
    --max_train_samples), and the `license` and `what` of its row in the dataset card's sources table: a Markdown
    table with `origin` and `license` columns in README.md, or in the README.md above it that describes a corpus of
    several directories (../shared/data's card), or for `gettext:<domain>` origins the package licence of a
    `licenses.tsv` beside the data. None where neither says; [] for a Hub dataset or data without the column."""
    path = Path(str(data)).expanduser()
    train = _split_files(path).get("train") if path.is_dir() else None
    if train is None:
        return []
    lines = _read_lines(train)
    try:
        values = [record[column] for _, record in _READERS[train.suffix.lower()](train, lines, [column])]
    except MissingColumnError:
        return []
    counts: dict[str, int] = {}
    for value in values[:limit]:
        counts[value] = counts.get(value, 0) + 1
    described = _card_sources(path / "README.md", column) or _card_sources(path.parent / "README.md", column)
    described = {**_package_licenses(path / "licenses.tsv"), **described}
    return [
        {
            column: value,
            "pairs": pairs,
            "license": described.get(value, {}).get("license"),
            "what": described.get(value, {}).get("what"),
        }
        for value, pairs in counts.items()
    ]


def _package_licenses(path: Path) -> dict[str, dict]:
    """A corpus's licences per catalogue (`licenses.tsv`: domain, package, license; ../shared/data/en-de-ui's): by
    the origin its pairs name, `gettext:<domain>`."""
    if not path.is_file():
        return {}
    rows = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()[1:] if line.strip()]
    return {
        f"gettext:{domain}": {"license": license, "what": f"the Debian package {package}'s catalogue"}
        for domain, package, license in (row[:3] for row in rows if len(row) >= 3)
    }


def _card_sources(readme: Path, column: str) -> dict[str, dict]:
    """The rows of a dataset card's Markdown table that has `column` and `license` (or `licence`) columns, by
    `column`, the licence always under `license`."""
    if not readme.is_file():
        return {}
    header, found = None, {}
    for line in readme.read_text(encoding="utf-8").splitlines():
        cells = (
            [cell.strip().strip("`") for cell in line.strip().strip("|").split("|")]
            if line.lstrip().startswith("|")
            else None
        )
        if cells is None:
            header = None
        elif header is None:
            names = [cell.lower().replace("licence", "license") for cell in cells]
            header = names if {column, "license"} <= set(names) else []
        elif header and not set(line) <= set("|-: "):
            row = dict(zip(header, cells))
            found[row[column]] = row
    return found
