"""An Opus-MT (MarianMT) repository of the Hub installed by its id: its checkpoint downloaded at a commit, converted
by the Marian bridge (`bridges.convert_marian`: the same logits, the checkpoint's tokenizer and card kept), and the
converted model installed with a receipt of its files. It has no calibration, and the install says how to fit one."""

import re
import tempfile
from pathlib import Path

from ..bridges import convert_marian
from ..hub import NetworkError
from .index import files_version
from .integrity import manifest
from .sources import describe, fetch_hub, hub_api
from .store import calibration_note, staged, write_receipt


# What the conversion reads: the config, one weights file (safetensors first), the tokenizer's files, and the card
# (an Opus-MT card states the licence and the attribution it asks for). TF, Flax and Rust weights stay behind.
MARIAN_FILES = (
    "config.json",
    "generation_config.json",
    "source.spm",
    "target.spm",
    "vocab.json",
    "target_vocab.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "README.md",
)
MARIAN_WEIGHTS = ("model.safetensors", "pytorch_model.bin")
_OPUS_PAIR = re.compile(r"opus-mt-([a-z]{2,3})-([a-z]{2,3})$")


def install_marian(repo_id: str, folder: Path, revision: str = "main", overwrite: bool = False) -> dict:
    """Install the MarianMT checkpoint of Hub repository `repo_id` at `revision`, converted, as `folder/NAME` (NAME:
    the repository's name); its languages from an Opus-MT name (`opus-mt-en-de`), else the checkpoint's own.
    Returns what the install reports: name, path, source, version, notes."""
    api = hub_api()
    try:
        commit = api.model_info(repo_id, revision=revision).sha
        names = set(api.list_repo_files(repo_id, revision=commit))
    except NetworkError as error:  # not an OSError in huggingface_hub's HTTP client
        raise ConnectionError(f"cannot reach the Hub at {api.endpoint}: {error}") from None
    weights = next((name for name in MARIAN_WEIGHTS if name in names), None)
    if "config.json" not in names or weights is None:
        raise ValueError(
            f"{repo_id} is not in the index, and holds no MarianMT checkpoint to convert (config.json and "
            f"{' or '.join(MARIAN_WEIGHTS)}); transformer-mt-models list shows the index"
        )
    name = repo_id.rsplit("/", 1)[-1]
    pair = _OPUS_PAIR.search(name)
    source = {"kind": "hub", "repo_id": repo_id, "revision": commit}
    with (
        staged(folder, name, overwrite) as staging,
        tempfile.TemporaryDirectory(prefix=f".{name}.download-", dir=folder) as download,
    ):
        fetch_hub(repo_id, commit, sorted(names & {*MARIAN_FILES, weights}), Path(download))
        model = convert_marian(download, str(staging), False, *(pair.groups() if pair else (None, None)))
        files = manifest(staging)
        write_receipt(
            staging,
            {
                "name": name,
                "version": files_version(files),
                "source_lang": model.config.source_lang,
                "target_lang": model.config.target_lang,
                "source": {**source, "converted": "MarianMT -> TransformerMT (transformer_mt.bridges.marian)"},
                "files": files,
            },
        )
    return {
        "name": name,
        "path": folder / name,
        "source": f"{describe(source)}, converted from MarianMT",
        "version": files_version(files),
        "notes": [calibration_note(folder / name)],
    }
