"""Fixtures shared by the tests; helpers are in tests/utils.py."""

import os
import shutil
import tempfile
from pathlib import Path

import pytest
import torch

from transformer_mt.tokenization import tokenizer_fingerprint

from .utils import POSITION_TYPES, save_copy_model, save_tiny, train


def pytest_configure(config):
    """Under xdist, each worker gets its share of the cores: torch's default (every core in every worker) puts two
    spinning OpenMP pools on each core, which made the suite several times slower on 2 cores. Subprocesses the tests
    start inherit the same share (tests.utils.command_env pins them to one thread as well), and a CTranslate2 export
    cache of the session's own."""
    # CTranslate2 exports made by the engines go to a cache of the test session's own, never the user's
    os.environ.setdefault("TRANSFORMER_MT_CACHE", tempfile.mkdtemp(prefix="transformer-mt-test-cache-"))
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1:
        threads = max(1, (os.cpu_count() or 1) // workers)
        torch.set_num_threads(threads)
        os.environ.setdefault("OMP_NUM_THREADS", str(threads))
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(params=POSITION_TYPES)
def position_type(request) -> str:
    return request.param


@pytest.fixture(scope="session")
def saved_tiny_model(tmp_path_factory) -> Path:
    """utils.save_tiny's untrained model and tokenizer, saved once per session (per worker under xdist) with the
    tokenizer's fingerprint in the config, as training saves it. Read only: a test that changes it takes model_dir."""
    path = tmp_path_factory.mktemp("saved_tiny_model") / "model"
    model, tokenizer = save_tiny(path)
    model.config.tokenizer_fingerprint = tokenizer_fingerprint(tokenizer)
    model.config.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def trained_tiny_model(tmp_path_factory) -> Path:
    """The tiny recipe (utils.train) trained once for the whole session: 20 steps on DATA, checkpoints at 10 and
    20 beside the saved model. Under xdist the workers share it: the first to take the lock trains it into a staging
    folder and renames it into place. Read only: a test that resumes or edits it works on a copy."""
    from filelock import FileLock

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the session's temporary folder, above each worker's own
    path = root / "trained-tiny"
    with FileLock(str(root / "trained-tiny.lock")):
        if not path.is_dir():
            staging = Path(tempfile.mkdtemp(prefix="trained-tiny-", dir=root))
            train(staging / "run", "--do_train", "--max_steps", 20, "--save_steps", 10)
            os.replace(staging / "run", path)
            staging.rmdir()
    return path


@pytest.fixture
def model_dir(saved_tiny_model, tmp_path) -> Path:
    """A copy of saved_tiny_model in the test's own tmp_path/model, free to damage or edit."""
    return Path(shutil.copytree(saved_tiny_model, tmp_path / "model"))


@pytest.fixture(scope="session")
def short_translator(tmp_path_factory):
    """(path, model, tokenizer): utils.save_tiny's untrained model with beam 2 and at most 8 tokens in its saved
    generation config, for the translation API's and the pipeline's tests. Read only."""
    path = tmp_path_factory.mktemp("translator")
    model, tokenizer = save_tiny(path)
    model.generation_config.num_beams = 2
    model.generation_config.max_length = 8
    model.generation_config.save_pretrained(path)
    return path, model, tokenizer


@pytest.fixture(scope="session")
def beam4_copy_model(tmp_path_factory):
    """(path, model, tokenizer): utils.save_copy_model saved with beam 4, early stopping and at most 40 tokens, for
    the constraint and pair-scoring tests. Read only."""
    path = tmp_path_factory.mktemp("beam4_copy_model")
    return path, *save_copy_model(path, dict(num_beams=4, early_stopping=True, max_length=40))


@pytest.fixture(scope="module")
def local_hub_environment():
    """What the local-Hub tests need whatever the caller's environment says: huggingface_hub online, for 127.0.0.1
    only (see tests.hub.server.allow_loopback_only). Module scope, for the modules' module-scoped hubs."""
    from .hub.server import allow_loopback_only

    with pytest.MonkeyPatch.context() as monkeypatch:
        allow_loopback_only(monkeypatch)
        yield
