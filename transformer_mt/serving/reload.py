"""A server switching to a promoted model without dropping a request (the serve command's --watch_seconds).

Each server process polls the model directories it was started with every `--watch_seconds` (default
POLL_SECONDS): where one now resolves to another directory (the symlink `transformer-mt-promote` switched) or its
weights file changed, the new model is loaded in full, beside the old one, and only then swapped in: each
`ServedModel` of that directory gets the new engine, then its new `weights` identity (`shared.model_identity`: the
translation cache's key, so answers of the old weights are never given for the new). A batch already running holds
the old engine and finishes on it; the next batch takes the new one. The CTranslate2 export follows by itself: its
cache key is a hash of the weights (`engines.export_key`). A model that fails to load is logged and the old one kept
(tried again when its files change again). Several processes each poll, so a promotion reaches all of them within
one interval.
"""

import logging
import os
import threading
from collections.abc import Callable


logger = logging.getLogger(__name__)

POLL_SECONDS = 5.0  # how often each process looks at its model directories (a stat and a readlink: cheap)
WEIGHT_FILES = ("model.safetensors", "model.bin")  # a saved model's or a CTranslate2 export's weights


def stamp(directory: str) -> tuple:
    """What says that `directory` holds other weights than before: where it resolves to, and its weights file's
    modification time and size."""
    resolved = os.path.realpath(directory)
    for name in WEIGHT_FILES:
        try:
            status = os.stat(os.path.join(resolved, name))
        except OSError:
            continue
        return resolved, name, status.st_mtime_ns, status.st_size
    return resolved, None, None, None


def swap(models: list, engine, weights: str | None, service=None) -> None:
    """Serve `engine` (loaded in full) for `models`: the engine first, then the cache's key, so that an answer made
    by either engine while the two change is never cached under the new key (`Service.translated` caches an answer
    only when the key did not change while it was made). The suggestions' record of the weights they were judged
    against is forgotten, to be taken again from the new engine."""
    for model in models:
        model.engine = engine
        model.weights = weights
    forget_weights(models, service)


def forget_weights(models: list, service) -> None:
    """The suggestions' record of the weights `models` were judged against, forgotten: taken again from the engine
    they serve next (a swap, or a --models folder's load)."""
    remembered = getattr(getattr(service, "suggestions", None), "weights", None)
    for model in models:
        if isinstance(remembered, dict):
            remembered.pop(id(model), None)


class ModelWatcher:
    """Polls `directories` (the serve command's MODEL arguments; `groups[i]`: the ServedModels that directory
    serves) and swaps in what `load(directory)` returns, (engine, weights identity), when one changes."""

    def __init__(
        self,
        directories: list[str],
        groups: list[list],
        load: Callable[[str], tuple],
        every: float = POLL_SECONDS,
        service=None,
    ):
        if len(directories) != len(groups):
            raise ValueError(f"{len(directories)} directories for {len(groups)} groups of served models")
        self.directories, self.groups, self.load, self.every, self.service = directories, groups, load, every, service
        self.stamps = [stamp(directory) for directory in directories]
        self.stopped = threading.Event()
        self.thread: threading.Thread | None = None
        self.swaps = 0  # models swapped in since the start

    def check(self) -> list[str]:
        """One poll: load and swap in every directory that changed; returns those swapped."""
        swapped = []
        for index, directory in enumerate(self.directories):
            now = stamp(directory)
            if now == self.stamps[index]:
                continue
            self.stamps[index] = now
            if self.groups[index][0].engine is None:  # a --models folder's model not loaded: it loads what is there
                continue
            try:
                engine, weights = self.load(now[0])  # the resolved directory: a later switch cannot split the load
            except Exception:  # a damaged or half-copied model: keep serving the old one
                logger.exception(
                    "%s changed (now %s) but does not load: still serving the model loaded before", directory, now[0]
                )
                continue
            if self.groups[index][0].engine is None or (
                weights is not None and weights == self.groups[index][0].weights
            ):
                continue  # unloaded meanwhile (--max_loaded_models), or the same weights: no swap
            swap(self.groups[index], engine, weights, self.service)
            self.swaps += 1
            swapped.append(directory)
            logger.warning("%s: now serving %s (%s)", directory, now[0], weights)
        return swapped

    def run(self) -> None:
        while not self.stopped.wait(self.every):
            try:
                self.check()
            except Exception:  # never let the watcher die: the next poll tries again
                logger.exception("watching the model directories failed")

    def start(self) -> "ModelWatcher":
        self.thread = threading.Thread(target=self.run, name="model-watcher", daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopped.set()
        if self.thread is not None:
            self.thread.join()


def groups_of(directories: list[str], models: list) -> list[list]:
    """The ServedModels of each directory, in the serve command's order: those of one directory share its engine
    (`command.served_models` makes one per target language of each directory, in order)."""
    groups: list[list] = []
    for model in models:
        if groups and groups[-1][0].engine is model.engine:
            groups[-1].append(model)
        else:
            groups.append([model])
    if len(groups) != len(directories):
        raise ValueError(f"{len(directories)} model directories but {len(groups)} engines served")
    return groups


def watch(app, directories: list[str], load: Callable[[str], tuple], every: float = POLL_SECONDS) -> ModelWatcher:
    """Start polling `directories` for the models `app` serves (its state's models and service), and each model of
    its --models folder (`serving.folder`), which is swapped only while it is loaded."""
    folder = app.state.service.folder
    groups = folder.groups if folder is not None else {}
    models = [model for model in app.state.models if folder is None or not folder.manages(model)]
    return ModelWatcher(
        [*directories, *groups],
        [*groups_of(directories, models), *groups.values()],
        load,
        every,
        app.state.service,
    ).start()


__all__ = ["ModelWatcher", "POLL_SECONDS", "forget_weights", "groups_of", "stamp", "swap", "watch"]
