"""The installer's verbs: `install` an index entry (by name or pair) from the first source that can be reached, or a
MarianMT repository of the Hub by its id (`opus`); `verify` an installed model (or a repository checkout's) against
its receipt or the index; `listing`: the index's entries and what is installed."""

import os
from pathlib import Path

from .index import find, load_index
from .integrity import RECEIPT, problems
from .opus import install_marian
from .sources import KINDS, describe, fetch, repository_root
from .store import CALIBRATION, calibration_note, check_files, installed, models_dir, receipt, staged, write_receipt


def choose_source(name: str, entry: dict, kind: str | None = None, repository=None) -> dict:
    """The first of the entry's sources of `kind` (any by default) that can be reached: a repository source only
    where a checkout holds its folder."""
    if kind is not None and kind not in KINDS:
        raise ValueError(f"unknown source kind {kind!r}; the index knows {', '.join(KINDS)}")
    sources = [source for source in entry["sources"] if kind in (None, source["kind"])]
    for source in sources:
        if source["kind"] != "repository" or repository_root(repository, source["path"]) is not None:
            return source
    listed = "; ".join(describe(source) for source in entry["sources"]) or "none"
    raise FileNotFoundError(
        f"{name} has no {kind + ' ' if kind else ''}source that can be reached from here (its sources: {listed}; "
        "a repository source needs a checkout of the repository, --repository DIR)"
    )


def install(
    wanted: str,
    folder: str | os.PathLike | None = None,
    index_path: str | os.PathLike | None = None,
    kind: str | None = None,
    repository: str | os.PathLike | None = None,
    overwrite: bool = False,
    revision: str = "main",
) -> dict:
    """Install the model `wanted` names (an entry's name, a pair, or a Hub repository id of a MarianMT checkpoint,
    at `revision`) into `folder` (`store.models_dir`): fetched into a staging folder beside its place, every file's
    size and SHA-256 checked against the index, then renamed into place. Returns name, path, source, version and
    notes (what the model lacks)."""
    folder = models_dir(folder)
    index = load_index(index_path)
    name = find(index, wanted)
    if name is None:
        return install_marian(wanted, folder, revision, overwrite)
    entry = index["models"][name]
    source = choose_source(name, entry, kind, repository)
    with staged(folder, name, overwrite) as staging:
        fetch(source, staging, repository)
        check_files(staging, source["files"], f"{name} from {describe(source)}")
        where = {key: value for key, value in source.items() if key != "files"}
        record = {key: entry[key] for key in ("version", "source_lang", "target_lang")}
        write_receipt(staging, {"name": name, **record, "source": where, "files": source["files"]})
    notes = [] if CALIBRATION in source["files"] else [calibration_note(folder / name)]
    return {
        "name": name,
        "path": folder / name,
        "source": describe(source),
        "version": entry["version"],
        "notes": notes,
    }


def verify(
    target: str, folder: str | os.PathLike | None = None, index_path: str | os.PathLike | None = None
) -> tuple[Path, list[str]]:
    """(the model's folder, every problem found): an installed model (by name, or its folder) checked against its
    receipt, or a folder without one (a repository checkout's `models/NAME`) against the index entry of its name."""
    path = (
        models_dir(folder) / target if "/" not in target and (models_dir(folder) / target).is_dir() else Path(target)
    )
    if not path.is_dir():
        raise FileNotFoundError(f"{target!r} is neither an installed model nor a folder")
    found = receipt(path)
    if found is not None:
        return path, problems(path, found["files"])
    entry = load_index(index_path)["models"].get(path.name)
    repository = [source for source in (entry or {}).get("sources", []) if source["kind"] == "repository"]
    if not repository:
        raise FileNotFoundError(f"{path} has no {RECEIPT} and is no model of the index: nothing to check it against")
    return path, problems(path, repository[0]["files"])


def listing(folder: str | os.PathLike | None = None, index_path: str | os.PathLike | None = None) -> list[dict]:
    """A row for each index entry (name, pair, version, license, scores, calibration, source kinds, `installed`:
    the installed version, or None) and for each installed model the index does not hold (`in_index` False)."""
    index, present = load_index(index_path), installed(models_dir(folder))
    rows = [
        {
            "name": name,
            "pair": f"{entry['source_lang']}-{entry['target_lang']}",
            **{key: entry[key] for key in ("version", "license", "scores", "calibration")},
            "sources": [source["kind"] for source in entry["sources"]],
            "installed": present[name].get("version") or "yes" if name in present else None,
            "in_index": True,
        }
        for name, entry in index["models"].items()
    ]
    return rows + [
        {
            "name": name,
            "pair": f"{found.get('source_lang')}-{found.get('target_lang')}",
            "version": found.get("version"),
            "license": [],
            "scores": {},
            "calibration": CALIBRATION in os.listdir(models_dir(folder) / name),
            "sources": [found["source"]["kind"]],
            "installed": found.get("version") or "yes",
            "in_index": False,
        }
        for name, found in present.items()
        if name not in index["models"]
    ]
