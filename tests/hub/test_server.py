"""The local Hub of tests/hub/server.py: what huggingface_hub and transformers see through it, on 127.0.0.1 only
(under HF_HUB_OFFLINE=1 too: the module sets its own environment)."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
from huggingface_hub import HfApi, hf_hub_download
from huggingface_hub.errors import (
    EntryNotFoundError,
    HfHubHTTPError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from tests.hub.server import local_hub
from tests.utils import require


require("olah", "the local hub needs olah: pip install olah")
pytestmark = pytest.mark.usefixtures("local_hub_environment")


@pytest.fixture(scope="module")
def hub(local_hub_environment, tmp_path_factory):
    with local_hub(tmp_path_factory.mktemp("hub")) as running:
        yield running


@pytest.fixture
def api(hub) -> HfApi:
    return HfApi(endpoint=hub.endpoint, token=hub.token)


def _download(hub, repo_id, filename, cache_dir, **kwargs) -> bytes:
    path = hf_hub_download(repo_id, filename, endpoint=hub.endpoint, token=hub.token, cache_dir=cache_dir, **kwargs)
    with open(path, "rb") as file:
        return file.read()


@pytest.fixture(scope="module")
def tiny_repo(hub, tmp_path_factory):
    """user/tiny with a text file, a JSON file and a few KB of random bytes, as the local files' contents."""
    folder = tmp_path_factory.mktemp("upload")
    files = {
        "notes.txt": b"first version\n",
        "config.json": json.dumps({"hidden_size": 8}).encode(),
        "model.safetensors": os.urandom(5000),
    }
    for name, content in files.items():
        (folder / name).write_bytes(content)
    api = HfApi(endpoint=hub.endpoint, token=hub.token)
    url = api.create_repo("user/tiny")
    assert url.repo_id == "user/tiny" and url.startswith(hub.endpoint)
    api.upload_folder(repo_id="user/tiny", folder_path=folder, commit_message="first upload")
    return files


def test_upload_folder_then_list_and_download_identical_bytes(hub, api, tiny_repo):
    assert sorted(api.list_repo_files("user/tiny")) == [
        ".gitattributes",
        "config.json",
        "model.safetensors",
        "notes.txt",
    ]
    assert api.repo_exists("user/tiny")
    assert api.file_exists("user/tiny", "model.safetensors")
    assert not api.file_exists("user/tiny", "missing.bin")
    cache = hub.new_hf_home() / "hub"
    for name, content in tiny_repo.items():
        assert _download(hub, "user/tiny", name, cache) == content
    commits = api.list_repo_commits("user/tiny")
    assert [c.title for c in commits] == ["first upload", "initial commit"]
    assert api.repo_info("user/tiny").sha == commits[0].commit_id


def test_second_commit_is_seen_by_next_download(hub, api):
    api.create_repo("user/updated")
    api.upload_file(path_or_fileobj=b"first version\n", path_in_repo="notes.txt", repo_id="user/updated")
    cache = hub.new_hf_home() / "hub"
    assert _download(hub, "user/updated", "notes.txt", cache) == b"first version\n"
    first_sha = api.repo_info("user/updated").sha

    commit = api.upload_file(path_or_fileobj=b"second version\n", path_in_repo="notes.txt", repo_id="user/updated")
    assert commit.oid != first_sha and api.repo_info("user/updated").sha == commit.oid
    # Same cache as before (no stale answer from olah or the cache) and a fresh one.
    assert _download(hub, "user/updated", "notes.txt", cache) == b"second version\n"
    assert _download(hub, "user/updated", "notes.txt", hub.new_hf_home() / "hub") == b"second version\n"
    # The old revision is still there, by sha.
    assert _download(hub, "user/updated", "notes.txt", cache, revision=first_sha) == b"first version\n"
    # Uploading unchanged content makes no commit (preupload reports the remote blob ids).
    again = api.upload_file(path_or_fileobj=b"second version\n", path_in_repo="notes.txt", repo_id="user/updated")
    assert again.oid == commit.oid


def test_folder_upload_and_deletions(hub, api):
    api.create_repo("user/deletions")
    api.upload_file(path_or_fileobj=b"a", path_in_repo="sub/dir/a.txt", repo_id="user/deletions")
    api.upload_file(path_or_fileobj=b"b", path_in_repo="sub/b.txt", repo_id="user/deletions")
    api.upload_file(path_or_fileobj=b"c", path_in_repo="c.txt", repo_id="user/deletions")
    assert _download(hub, "user/deletions", "sub/dir/a.txt", hub.new_hf_home()) == b"a"
    api.delete_file("c.txt", repo_id="user/deletions")
    api.delete_folder("sub/dir", repo_id="user/deletions")
    assert sorted(api.list_repo_files("user/deletions")) == [".gitattributes", "sub/b.txt"]
    with pytest.raises(EntryNotFoundError):
        api.delete_file("c.txt", repo_id="user/deletions")


def test_missing_repo_file_and_revision(hub, api, tiny_repo):
    cache = hub.new_hf_home()
    assert not api.repo_exists("user/nope")
    with pytest.raises(RepositoryNotFoundError) as missing_repo:
        api.repo_info("user/nope")
    assert missing_repo.value.response.status_code == 404
    with pytest.raises(RepositoryNotFoundError):
        api.list_repo_files("user/nope")
    with pytest.raises(RepositoryNotFoundError):
        _download(hub, "user/nope", "config.json", cache)

    with pytest.raises(EntryNotFoundError) as missing_file:
        _download(hub, "user/tiny", "missing.json", cache)
    assert missing_file.value.response.status_code == 404
    assert not isinstance(missing_file.value, RepositoryNotFoundError)

    with pytest.raises(RevisionNotFoundError):
        _download(hub, "user/tiny", "config.json", cache, revision="no-such-branch")
    assert not api.revision_exists("user/tiny", "no-such-branch")


def test_create_existing_repo(api, tiny_repo):
    with pytest.raises(HfHubHTTPError) as exists:
        api.create_repo("user/tiny")
    assert exists.value.response.status_code == 409
    assert api.create_repo("user/tiny", exist_ok=True).repo_id == "user/tiny"


@pytest.mark.parametrize("token", ["hf_wrong_token", False], ids=["wrong-token", "no-token"])
def test_bad_token_is_401(hub, tmp_path, tiny_repo, token, monkeypatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    bad = HfApi(endpoint=hub.endpoint, token=token)
    with pytest.raises(HfHubHTTPError) as create:
        bad.create_repo("user/never")
    assert create.value.response.status_code == 401
    assert "Invalid credentials" in str(create.value)
    with pytest.raises(HfHubHTTPError) as upload:
        bad.upload_file(path_or_fileobj=b"x", path_in_repo="x.txt", repo_id="user/tiny")
    assert upload.value.response.status_code == 401
    good = HfApi(endpoint=hub.endpoint, token=hub.token)
    assert not good.repo_exists("user/never")
    assert "x.txt" not in good.list_repo_files("user/tiny")


@pytest.mark.slow
def test_apply_in_process_then_load_in_fresh_process(hub, monkeypatch):
    """The two documented ways: hub.apply() for this process, hub.subprocess_env() for a fresh one."""
    import huggingface_hub
    import transformers

    hub.apply(monkeypatch, hf_home=hub.new_hf_home())
    # Module-level huggingface_hub functions and transformers' push_to_hub, with no endpoint or token passed.
    huggingface_hub.create_repo("user/tiny2")
    config = transformers.BertConfig(hidden_size=24, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8)
    config.push_to_hub("user/tiny2")
    path = huggingface_hub.hf_hub_download("user/tiny2", "config.json")
    with open(path) as file:
        assert json.load(file)["hidden_size"] == 24
    monkeypatch.undo()

    code = textwrap.dedent(
        """
        import os
        from transformers import AutoConfig

        assert "HF_HUB_OFFLINE" not in os.environ
        repo_id = "user/tiny2"  # on the local Hub (HF_ENDPOINT), never the real one
        config = AutoConfig.from_pretrained(repo_id)
        print(config.model_type, config.hidden_size)
        """
    )
    env = hub.subprocess_env(hf_home=hub.new_hf_home(), base={**os.environ, "HF_HUB_OFFLINE": "1"})
    result = subprocess.run(
        [sys.executable, "-c", code], check=False, env=env, capture_output=True, text=True, timeout=180
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["bert", "24"]


def test_the_module_is_online_for_loopback_addresses_only():
    import socket

    from huggingface_hub import constants

    assert not constants.is_offline_mode() and "HF_HUB_OFFLINE" not in os.environ
    with pytest.raises(ConnectionRefusedError, match="loopback addresses only"):
        socket.create_connection(("192.0.2.1", 443), timeout=1)  # TEST-NET-1: refused before any packet is sent


def test_olah_that_does_not_start_gives_a_clear_error(tmp_path, monkeypatch):
    from tests.hub import server as hub_server

    monkeypatch.setattr(hub_server, "_write_olah_config", lambda path, *args: path.write_text("[basic\nbroken"))
    with pytest.raises(RuntimeError, match="olah did not start"), local_hub(tmp_path, startup_timeout=30):
        pass
