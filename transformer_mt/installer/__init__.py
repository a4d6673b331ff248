"""Models installed from an index (`transformer-mt-models list | install | remove | verify | index`).

By concern: `index` (the index shipped beside it, `index.json`: its format, its generator from the repository's
`models/`, a source added to an entry, a Hub source from what the Hub serves), `integrity` (files as the index states
them: SHA-256 and size, and every way a folder differs), `sources` (fetching an entry's files: the Hub at a commit, a
.tar.gz or .zip by https, a repository checkout's folder), `store` (the models folder, staging and the atomic rename,
receipts, removal), `opus` (an Opus-MT repository of the Hub converted by the Marian bridge) and `install` (the verbs).
"""

from .index import INDEX, add_hub_source, add_source, build_index, find, load_index, model_entry, save_index
from .install import install, listing, verify
from .integrity import RECEIPT, IntegrityError, manifest
from .sources import check_url
from .store import MODELS_ENV, models_dir, remove


__all__ = [
    "INDEX",
    "MODELS_ENV",
    "RECEIPT",
    "IntegrityError",
    "add_hub_source",
    "add_source",
    "build_index",
    "check_url",
    "find",
    "install",
    "listing",
    "load_index",
    "manifest",
    "model_entry",
    "models_dir",
    "remove",
    "save_index",
    "verify",
]
