"""Fixtures shared by the tests; helpers are in tests/utils.py."""

import shutil
from pathlib import Path

import pytest

from transformer_mt.tokenization import tokenizer_fingerprint

from .utils import POSITION_TYPES, save_tiny


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


@pytest.fixture
def model_dir(saved_tiny_model, tmp_path) -> Path:
    """A copy of saved_tiny_model in the test's own tmp_path/model, free to damage or edit."""
    return Path(shutil.copytree(saved_tiny_model, tmp_path / "model"))


@pytest.fixture(scope="module")
def local_hub_environment():
    """What the local-Hub tests need whatever the caller's environment says: huggingface_hub online, for 127.0.0.1
    only (see tests.hub.server.allow_loopback_only). Module scope, for the modules' module-scoped hubs."""
    from .hub.server import allow_loopback_only

    with pytest.MonkeyPatch.context() as monkeypatch:
        allow_loopback_only(monkeypatch)
        yield
