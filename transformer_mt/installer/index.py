"""The model index: `index.json` beside this module, shipped in the wheel, written by `build_index` from the
repository's `models/` (`transformer-mt-models index --models models/`), never by hand.

One entry a model, by name: its pair (`source_lang`, `target_lang`), `version` (the first 12 hex digits of its
`model.safetensors`' SHA-256, what a calibration is bound to), `license` (its card's), `scores` (BLEU and chrF on
each test split of its `scores.json`), `calibration` (whether a calibration fitted on these weights lies beside
it), and `sources`, in the order an install tries them, each with the files it holds (`files`: name -> sha256 and
size): `repository` (`path`, a folder of a repository checkout), `hub` (`repo_id` at `revision`, a commit), `url`
(`url` of a .tar.gz or .zip). The generator keeps an entry's other sources while its version stays; `add_source`
adds one (`add_hub_source`: after a push, from what the Hub then serves).
"""

import json
import logging
import os
import re
import tempfile
from pathlib import Path

import yaml
from huggingface_hub.repocard import metadata_load

from ..quality import Calibration, weights_sha256
from .integrity import manifest
from .sources import KINDS, fetch_hub, hub_api


logger = logging.getLogger(__name__)

INDEX = Path(__file__).with_name("index.json")
FORMAT = 1
GENERATOR = "transformer-mt-models index --models models/"
VERSION_DIGITS = 12
_PAIR = re.compile(r"^[a-z]{2,3}-[a-z]{2,3}$")


def load_index(path: str | os.PathLike | None = None) -> dict:
    index = json.loads(Path(path or INDEX).read_text(encoding="utf-8"))
    if index.get("format") != FORMAT:
        raise ValueError(f"{path or INDEX} is a model index of format {index.get('format')!r}; this reads {FORMAT}")
    return index


def save_index(index: dict, path: str | os.PathLike | None = None) -> Path:
    """Write the index whole or not at all (a temporary file beside it, renamed)."""
    path = Path(path or INDEX)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(index, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(partial, path)
    return path


def version_of(model_dir: str | os.PathLike) -> str:
    return weights_sha256(str(model_dir))[:VERSION_DIGITS]


def files_version(files: dict[str, dict]) -> str | None:
    """The version of the model a manifest holds (None without a `model.safetensors`)."""
    weights = files.get("model.safetensors")
    return weights["sha256"][:VERSION_DIGITS] if weights else None


def model_scores(model_dir: Path) -> dict[str, dict]:
    """{set: {data, split, pairs, bleu, chrf}} of every test split `scores.json` scores: the one set of a score
    command's output (named by its split), or each of a shipped pair model's `sets` that names its data."""
    path = model_dir / "scores.json"
    if not path.is_file():
        return {}
    report = json.loads(path.read_text(encoding="utf-8"))
    sets = report.get("sets") or {report.get("split", "test"): report}
    return {
        name: {
            "data": found["data"],
            "split": found["split"],
            "pairs": found["pairs"],
            **{metric: found["scores"][metric]["score"] for metric in ("bleu", "chrf") if metric in found["scores"]},
        }
        for name, found in sets.items()
        if isinstance(found, dict) and {"data", "split", "pairs", "scores"} <= found.keys()
    }


def card_metadata(card: Path) -> dict:
    """The YAML header of a model card; one that YAML cannot read (an unquoted `: ` in a value) is read line by line
    for its `license` and `license_name`, with a warning naming the file."""
    if not card.is_file():
        return {}
    try:
        return metadata_load(card) or {}
    except yaml.YAMLError as error:
        logger.warning(f"{card}: its YAML header cannot be read ({error.problem}); its license read line by line")
    header = card.read_text(encoding="utf-8").split("---", 2)[1]
    found = re.search(r"^license:[ \t]*(\S[^\n]*)?((?:\n- [^\n]+)*)", header, re.M)
    name = re.search(r"^license_name:[ \t]*(\S[^\n]*)", header, re.M)
    if found is None:
        return {}
    licenses = [found[1]] if found[1] else re.findall(r"^- (.+)$", found[2], re.M)
    return {"license": [license.strip() for license in licenses], "license_name": name and name[1].strip()}


def model_license(model_dir: Path) -> list[str]:
    """The licenses the model's card states (its `license`, with `license_name` for "other"), else its training
    data's (`training_info.json`), else none."""
    card = card_metadata(model_dir / "README.md")
    if card and card.get("license"):
        licenses = card["license"] if isinstance(card["license"], list) else [card["license"]]
        return [
            f"other ({card['license_name']})" if name == "other" and card.get("license_name") else name
            for name in licenses
        ]
    info = model_dir / "training_info.json"
    return json.loads(info.read_text(encoding="utf-8")).get("data_licenses") or [] if info.is_file() else []


def model_entry(model_dir: str | os.PathLike, path: str) -> dict:
    """The index entry of the saved model in `model_dir`, with one source: `path` in the repository checkout."""
    model_dir = Path(model_dir)
    config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    return {
        "source_lang": config.get("source_lang"),
        "target_lang": config.get("target_lang"),
        "version": version_of(model_dir),
        "license": model_license(model_dir),
        "scores": model_scores(model_dir),
        "calibration": Calibration.load(str(model_dir)) is not None,
        "sources": [{"kind": "repository", "path": path, "files": manifest(model_dir)}],
    }


def build_index(models_dir: str | os.PathLike, previous: dict | None = None) -> dict:
    """The index of every `transformer-mt-*` model in `models_dir` (the repository's `models/`), each found at
    `models/NAME` of a checkout; from `previous`, each entry keeps its other sources while its version stays."""
    models_dir = Path(models_dir)
    old = (previous or {}).get("models", {})
    models = {}
    for model_dir in sorted(models_dir.glob("transformer-mt-*")):
        if (model_dir / "config.json").is_file():
            entry = model_entry(model_dir, f"{models_dir.resolve().name}/{model_dir.name}")
            if old.get(model_dir.name, {}).get("version") == entry["version"]:
                entry["sources"] += [s for s in old[model_dir.name]["sources"] if s["kind"] != "repository"]
            models[model_dir.name] = entry
    return {"format": FORMAT, "written_by": f"{GENERATOR} (never by hand)", "models": models}


def find(index: dict, wanted: str) -> str | None:
    """The entry `wanted` names: a model's name, or a pair (`en-de`: its one model, or `transformer-mt-en-de` among
    several); None when it names neither and looks like a Hub repository id (an Opus-MT one is converted)."""
    models = index["models"]
    if wanted in models:
        return wanted
    if _PAIR.match(wanted):
        names = [name for name, entry in models.items() if f"{entry['source_lang']}-{entry['target_lang']}" == wanted]
        if f"transformer-mt-{wanted}" in names or len(names) == 1:
            return f"transformer-mt-{wanted}" if f"transformer-mt-{wanted}" in names else names[0]
        if names:
            raise ValueError(f"several models translate {wanted}: {', '.join(names)}; name one")
        raise ValueError(f"no model of the index translates {wanted} (transformer-mt-models list)")
    if "/" in wanted:
        return None
    raise ValueError(f"{wanted!r} is neither a model nor a pair of the index (transformer-mt-models list)")


def add_source(name: str, source: dict, path: str | os.PathLike | None = None) -> dict:
    """Add `source` to entry `name` of the index at `path` (the shipped one by default), replacing one at the same
    place (the same kind and repository, URL or folder); returns the entry."""
    if source["kind"] not in KINDS:
        raise ValueError(f"unknown source kind {source['kind']!r}; the index knows {', '.join(KINDS)}")
    index = load_index(path)
    if name not in index["models"]:
        raise ValueError(f"{name!r} is not in the index {path or INDEX}: {', '.join(index['models'])}")
    where = {key: value for key, value in source.items() if key in ("kind", "repo_id", "url", "path")}
    entry = index["models"][name]
    entry["sources"] = [s for s in entry["sources"] if {k: s.get(k) for k in where} != where] + [source]
    save_index(index, path)
    return entry


def hub_source(repo_id: str, revision: str = "main") -> dict:
    """A Hub source for `repo_id` as the Hub serves it now: `revision` resolved to its commit, every file of that
    commit downloaded and hashed (so the entry names a repository that exists, at a commit that holds them)."""
    api = hub_api()
    commit = api.model_info(repo_id, revision=revision).sha
    names = [name for name in api.list_repo_files(repo_id, revision=commit) if name != ".gitattributes"]
    with tempfile.TemporaryDirectory(prefix="transformer-mt-hub-source-") as folder:
        fetch_hub(repo_id, commit, names, Path(folder))
        files = manifest(folder)
    return {"kind": "hub", "repo_id": repo_id, "revision": commit, "files": files, "version": files_version(files)}


def add_hub_source(name: str, repo_id: str, revision: str = "main", path: str | os.PathLike | None = None) -> dict:
    """Entry `name` of the index at `path` given the Hub source `repo_id` (`hub_source`), refused when the weights
    there are not the entry's version."""
    models = load_index(path)["models"]
    if name not in models:
        raise ValueError(f"{name!r} is not in the index {path or INDEX}: {', '.join(models)}")
    source = hub_source(repo_id, revision)
    version = source.pop("version")
    if version != models[name]["version"]:
        raise ValueError(
            f"{repo_id} holds weights of version {version}, not {name}'s {models[name]['version']}; nothing added"
        )
    return add_source(name, source, path)
