"""A folder of models, offered by language pair and loaded on demand (the serve command's `--models DIR`).

Every subfolder whose config.json names a `source_lang` and a `target_lang` offers that pair (`offered_pairs`);
of several subfolders of one pair, the first by name (sorted) wins, unless `--prefer` names another, and the others
are listed as passed over. A pair is loaded on its first request (`ModelFolder.hold`), or at the start when
`--preload` names it; with `max_loaded` set, loading one more unloads the least recently used, never one that a
request holds (`hold` counts the requests in flight per model). Nothing here imports the server: the translate
command's `--models` picks its pair with `pick`.
"""

import argparse
import asyncio
import contextlib
import gc
import json
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Callable

from ..steps.pivot import PIVOT


logger = logging.getLogger(__name__)


def languages_of(directory: str) -> tuple[str, str] | None:
    """The (source, target) a model directory's config.json names, or None when it is not a model of one pair."""
    try:
        with open(os.path.join(directory, "config.json"), encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, ValueError):
        return None
    source, target = config.get("source_lang"), config.get("target_lang")
    return (source, target) if isinstance(source, str) and isinstance(target, str) and source and target else None


def offered_pairs(
    folder: str, prefer: list[str] = (), only: list[str] | None = None
) -> tuple[dict[tuple[str, str], str], list[str]]:
    """`{(source, target): directory}` of every model in `folder` (of both languages in `only`, when given) and the
    directories passed over: of several models of one pair the one named in `prefer` wins, else the first by name.
    A ValueError when `folder` holds none."""
    if not os.path.isdir(folder):
        raise ValueError(f"--models {folder!r} is not a folder")
    pairs: dict[tuple[str, str], str] = {}
    passed_over = []
    for name in sorted(os.listdir(folder)):
        directory = os.path.join(folder, name)
        pair = languages_of(directory) if os.path.isdir(directory) else None
        if pair is None or (only is not None and not set(pair) <= set(only)):
            continue
        if pair in pairs and name not in prefer:
            passed_over.append(directory)
            continue
        if pair in pairs:
            passed_over.append(pairs[pair])
        pairs[pair] = directory
    if not pairs:
        raise ValueError(
            f"--models {folder!r} holds no model{' of --load_only ' + ','.join(only) if only else ''}: each "
            "model is a subfolder whose config.json names its "
            "source_lang and target_lang"
        )
    return pairs, passed_over


def codes(text: str | None) -> list[str] | None:
    """`en,de` -> ["en", "de"]; None for None (--load_only not given)."""
    return None if text is None else [code.strip() for code in text.split(",") if code.strip()]


def pair_names(pairs) -> str:
    return ", ".join(f"{source}-{target}" for source, target in sorted(pairs))


def parse_pairs(text: str | None) -> list[tuple[str, str]]:
    """`en-de,de-en` -> [("en", "de"), ("de", "en")]; a ValueError naming a malformed one."""
    pairs = []
    for item in (text or "").split(","):
        source, dash, target = item.strip().partition("-")
        if not item.strip():
            continue
        if not dash or not source or not target:
            raise ValueError(f"{item.strip()!r} is not a language pair: write SOURCE-TARGET, e.g. en-de")
        pairs.append((source, target))
    return pairs


def pick(folder: str, source: str | None, target: str | None, prefer: list[str] = ()) -> str:
    """The directory of `folder`'s model translating `source` into `target` (translate.py --models); a ValueError
    naming the pair and those the folder has when it has none."""
    pairs, _ = offered_pairs(folder, prefer)
    if not source or not target:
        raise ValueError(f"--models needs --source_lang and --target_lang to choose a model ({pair_names(pairs)})")
    if (source, target) not in pairs:
        raise ValueError(f"{source}-{target} is not in --models {folder!r}, which holds {pair_names(pairs)}")
    return pairs[(source, target)]


def route(folder: str, source: str | None, target: str | None, prefer: list[str] = ()) -> list[str]:
    """The directories of `folder`'s models that translate `source` into `target` (translate.py --models): the
    pair's own model, else a model into English and one out of it (`steps.pivot`); a ValueError naming the pair
    and those the folder has when neither exists."""
    try:
        return [pick(folder, source, target, prefer)]
    except ValueError:
        pairs, _ = offered_pairs(folder, prefer)
        if source != PIVOT and target != PIVOT and {(source, PIVOT), (PIVOT, target)} <= set(pairs):
            return [pairs[(source, PIVOT)], pairs[(PIVOT, target)]]
        raise


def add_folder_arguments(parser: argparse.ArgumentParser) -> None:
    """A folder of models offered by pair and loaded on demand (`serving.folder`)."""
    parser.add_argument(
        "--models",
        dest="models_dir",
        metavar="DIR",
        help="A folder of models (each subfolder whose config.json names source_lang and "
        "target_lang): every pair is offered, each loaded on its first request (a MODEL given "
        "by itself wins its pair).",
    )
    parser.add_argument(
        "--prefer",
        default="",
        metavar="NAMES",
        help="Of several models of one pair in --models, the subfolder named here (comma-separated) "
        "wins (default: the first by name).",
    )
    parser.add_argument(
        "--preload", metavar="PAIRS", help="Pairs of --models loaded at the start, e.g. en-de,de-en (default: none)."
    )
    parser.add_argument(
        "--load_only",
        metavar="CODES",
        help="Offer only the pairs of these languages, e.g. en,de (LibreTranslate's --load_only; "
        "default: every pair of the MODELs and of --models).",
    )
    parser.add_argument(
        "--max_loaded_models",
        type=int,
        metavar="N",
        help="Models of --models loaded at once per process at most: one more unloads the least "
        "recently used not serving a request (default: no limit).",
    )


def check_folder_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """A parser error (exit 2) for folder flags that cannot work: a folder without models, a --preload pair it does
    not hold, more preloaded pairs than --max_loaded_models."""
    if not args.models and not args.models_dir:
        parser.error("give MODEL directories, --models DIR (a folder of them), or both")
    if (args.preload or args.max_loaded_models is not None or args.prefer) and not args.models_dir:
        parser.error("--preload, --prefer and --max_loaded_models apply to --models DIR")
    if args.load_only is not None and not codes(args.load_only):
        parser.error(f"--load_only takes language codes, e.g. en,de; got {args.load_only!r}")
    if args.max_loaded_models is not None and args.max_loaded_models < 1:
        parser.error(f"--max_loaded_models must be >= 1, got {args.max_loaded_models}")
    if args.models_dir:
        try:
            pairs, _ = offered_pairs(args.models_dir, only=codes(args.load_only))
            preload = parse_pairs(args.preload)
        except ValueError as error:
            parser.error(str(error))
        if missing := [pair for pair in preload if pair not in pairs]:
            parser.error(f"--preload {pair_names(missing)}: not in --models {args.models_dir!r} ({pair_names(pairs)})")
        if args.max_loaded_models is not None and len(preload) > args.max_loaded_models:
            parser.error(
                f"--preload names {len(preload)} pairs, more than --max_loaded_models {args.max_loaded_models}"
            )


class ModelFolder:
    """The served models of a folder (`groups`: directory -> its ServedModels, their engine None until loaded),
    loaded with `load(directory)` -> (engine, weights identity), at most `max_loaded` at once (None: no limit)."""

    def __init__(
        self, groups: dict[str, list], load: Callable[[str], tuple], max_loaded: int | None = None, workers: int = 1
    ):
        self.groups, self.load, self.max_loaded = groups, load, max_loaded
        self.workers = workers  # the engine calls one model runs at once: the server's batcher is sized by it
        self.directory_of = {id(model): directory for directory, models in groups.items() for model in models}
        self.loaded: OrderedDict[str, float] = OrderedDict()  # directory -> last used (monotonic), oldest first
        self.in_use = dict.fromkeys(groups, 0)  # requests in flight per directory
        self.locks: dict[str, asyncio.Lock] = {}  # made on the server's loop, on first use
        self.loads = self.evictions = 0
        self.changed: Callable[[list, bool], None] | None = None  # the server's: told of each load and unload

    def manages(self, model) -> bool:
        return id(model) in self.directory_of

    def load_now(self, directory: str) -> None:
        """Load `directory`'s model (blocking): the start's --preload."""
        self.serve(directory, *self.load(directory))

    def serve(self, directory: str, engine, weights: str | None) -> None:
        """`directory`'s models serve the loaded `engine` from now on (on the server's loop: the bookkeeping is never
        touched from two threads)."""
        for model in self.groups[directory]:
            model.engine, model.weights = engine, weights
        self.loaded[directory] = time.monotonic()
        self.loads += 1
        if self.changed is not None:
            self.changed(self.groups[directory], True)
        logger.warning("%s: loaded (%d of %s)", directory, len(self.loaded), self.max_loaded or "any number")

    @contextlib.asynccontextmanager
    async def hold(self, model):
        """`model` loaded and kept loaded while the block runs (a request in flight); a model not of this folder
        is held as it is."""
        directory = self.directory_of.get(id(model))
        if directory is None:
            yield model
            return
        self.in_use[directory] += 1
        try:
            if directory not in self.loaded:
                async with self.locks.setdefault(directory, asyncio.Lock()):
                    if directory not in self.loaded:
                        self.serve(directory, *await asyncio.to_thread(self.load, directory))
            self.loaded[directory] = time.monotonic()
            self.loaded.move_to_end(directory)
            self.evict()
            yield model
        finally:
            self.in_use[directory] -= 1
            self.evict()

    def evict(self) -> None:
        """Unload the least recently used models not in use until at most `max_loaded` are loaded."""
        while self.max_loaded is not None and len(self.loaded) > self.max_loaded:
            idle = next((directory for directory in self.loaded if not self.in_use[directory]), None)
            if idle is None:  # every loaded model serves a request: the limit waits for one to finish
                return
            del self.loaded[idle]
            if self.changed is not None:
                self.changed(self.groups[idle], False)
            for model in self.groups[idle]:
                model.engine, model.weights = None, None
            self.evictions += 1
            gc.collect()
            logger.warning("%s: unloaded, the least recently used (--max_loaded_models %d)", idle, self.max_loaded)

    def is_loaded(self, model) -> bool:
        directory = self.directory_of.get(id(model))
        return directory is None or directory in self.loaded

    def status(self) -> dict:
        """What /ready adds for a folder: the limit, and the loads and unloads since the start."""
        return {
            "max_loaded_models": self.max_loaded,
            "loads": self.loads,
            "evictions": self.evictions,
        }


__all__ = [
    "ModelFolder",
    "add_folder_arguments",
    "check_folder_args",
    "codes",
    "languages_of",
    "offered_pairs",
    "pair_names",
    "parse_pairs",
    "pick",
    "route",
]
