"""The model installer (transformer_mt.installer, `transformer-mt-models`): the shipped index is the generator's
output; repository, Hub and URL sources install and verify; a file that differs is refused by name and leaves
nothing; plain http goes to loopback hosts only; an Opus-MT repository id installs converted. The Hub is the local
one of tests/hub/, the URLs a loopback http.server: nothing leaves the machine."""

import http.server
import json
import shutil
import tarfile
import threading
import zipfile
from pathlib import Path

import pytest
import torch

from transformer_mt.commands.models import parse_args, run
from transformer_mt.installer import (
    RECEIPT,
    IntegrityError,
    add_hub_source,
    build_index,
    check_url,
    find,
    install,
    listing,
    load_index,
    manifest,
    model_entry,
    remove,
    save_index,
    sources,
    verify,
)
from transformer_mt.installer.index import model_license
from transformer_mt.scripts import push_to_hub

from .hub.server import local_hub
from .utils import REPO, marian_checkpoint, require, save_tiny


pytestmark = pytest.mark.usefixtures("local_hub_environment")  # online for 127.0.0.1 only


def test_the_shipped_index_is_what_the_generator_makes_from_models():
    """Hashes are never typed: the index equals build_index over the repository's models/ (every
    transformer-mt-* model there, with the Hub and URL sources of an unchanged version kept)."""
    shipped = load_index()
    assert build_index(REPO / "models", previous=shipped) == shipped, (
        "transformer_mt/installer/index.json is not what models/ holds: run "
        "`python scripts/models.py index --models models/` and commit the index"
    )
    assert set(shipped["models"]) == {path.name for path in (REPO / "models").glob("transformer-mt-*")}
    for entry in shipped["models"].values():
        assert entry["sources"][0]["kind"] == "repository" and (REPO / entry["sources"][0]["path"]).is_dir()


def test_a_pair_names_its_model():
    index = {"models": {name: {"source_lang": "en", "target_lang": "de"} for name in ("a-en-de", "b-en-de")}}
    with pytest.raises(ValueError, match="several models translate en-de: a-en-de, b-en-de"):
        find(index, "en-de")
    index["models"]["transformer-mt-en-de"] = {"source_lang": "en", "target_lang": "de"}
    assert find(index, "en-de") == "transformer-mt-en-de" and find(index, "b-en-de") == "b-en-de"
    assert find(index, "Helsinki-NLP/opus-mt-en-fr") is None  # a Hub repository id: converted, if Marian
    with pytest.raises(ValueError, match="no model of the index translates en-fr"):
        find(index, "en-fr")


@pytest.mark.parametrize(
    "header, licenses",
    [
        ("license: mit", ["mit"]),
        ('license:\n- mpl-2.0\n- other\nlicense_name: "a: b"', ["mpl-2.0", "other (a: b)"]),
        (
            "license:\n- mpl-2.0\n- other\nlicense_name: each origin's: see below\nlanguage:\n- de",
            ["mpl-2.0", "other (each origin's: see below)"],
        ),
    ],
)
def test_a_cards_license_is_read_even_where_yaml_cannot_read_its_header(tmp_path, header, licenses):
    (tmp_path / "README.md").write_text(f"---\n{header}\n---\n# A model\n", encoding="utf-8")
    assert model_license(tmp_path) == licenses


def cli(capsys, *argv) -> tuple[int, str]:
    status = run(parse_args([str(arg) for arg in argv]))
    return status, capsys.readouterr().out


def test_a_shipped_model_installs_from_the_checkout_verifies_and_is_removed(tmp_path, capsys):
    models = tmp_path / "models"
    done = install("en-de", models, repository=REPO)
    target = models / "transformer-mt-en-de"
    assert done["name"] == "transformer-mt-en-de" and done["path"] == target and done["notes"] == []
    shipped = REPO / "models" / "transformer-mt-en-de"
    assert manifest(target) == manifest(shipped) and sorted(p.name for p in models.iterdir()) == [target.name]
    assert json.loads((target / RECEIPT).read_text())["source"] == {
        "kind": "repository",
        "path": "models/transformer-mt-en-de",
    }
    assert verify("transformer-mt-en-de", models) == (target, [])
    status, out = cli(capsys, "list", "--models_dir", models)
    version = load_index()["models"]["transformer-mt-en-de"]["version"]
    assert status == 0 and f"transformer-mt-en-de  en-de  version {version}  installed ({version})" in out
    bleu = json.loads((shipped / "scores.json").read_text())["scores"]["bleu"]["score"]
    assert f"BLEU test {bleu:.2f}; calibrated" in out and "transformer-mt-en-de-broad  en-de" in out

    with pytest.raises(FileExistsError, match="--overwrite"):
        install("transformer-mt-en-de", models, repository=REPO)
    data = bytearray((target / "tokenizer.json").read_bytes())
    data[100] ^= 1  # one bit, the same size
    (target / "tokenizer.json").write_bytes(bytes(data))
    (target / "terms.tsv").unlink()
    status, out = cli(capsys, "verify", "--models_dir", models)
    sha = load_index()["models"]["transformer-mt-en-de"]["sources"][0]["files"]["tokenizer.json"]["sha256"]
    assert status == 1 and "2 problems" in out and "terms.tsv: missing" in out
    assert f"tokenizer.json: sha256 {manifest(target)['tokenizer.json']['sha256']}, expected {sha}" in out
    assert cli(capsys, "verify", shipped) == (0, f"{shipped}: ok\n")  # the checkout's own, against the index

    assert remove("transformer-mt-en-de", models) == target and list(models.iterdir()) == []
    with pytest.raises(FileNotFoundError, match="holds no installed model"):
        remove("transformer-mt-en-de", models)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("tiny") / "tiny"
    save_tiny(directory)
    return directory


class _Files(http.server.SimpleHTTPRequestHandler):
    """Serves the folder it is given; /redirect sends the client on to a plain-http address that is not loopback."""

    def log_message(self, format, *args):
        pass

    def do_GET(self):
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "http://example.com/tiny.tar.gz")
            self.end_headers()
        else:
            super().do_GET()


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    """(folder served, its http://127.0.0.1:PORT address)."""
    root = tmp_path_factory.mktemp("web")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), lambda *args: _Files(*args, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def archive(model: Path, path: Path, folder: str = "") -> Path:
    """`model`'s files in a .tar.gz or .zip (by `path`'s suffix), inside `folder` if given."""
    if path.suffix == ".zip":
        with zipfile.ZipFile(path, "w") as packed:
            for file in sorted(model.iterdir()):
                packed.write(file, folder + file.name)
    else:
        with tarfile.open(path, "w:gz") as packed:
            for file in sorted(model.iterdir()):
                packed.add(file, folder + file.name)
    return path


def url_index(tmp_path: Path, model: Path, url: str) -> Path:
    """An index with one entry, `tiny`: `model`'s files, found only at `url`."""
    entry = model_entry(model, "models/tiny")
    entry["sources"] = [{"kind": "url", "url": url, "files": manifest(model)}]
    return save_index({"format": 1, "models": {"tiny": entry}}, tmp_path / "index.json")


@pytest.mark.parametrize("name, folder", [("tiny.tar.gz", "tiny/"), ("tiny.zip", "")])
def test_a_url_source_installs_and_verifies(tmp_path, tiny, web, name, folder):
    root, address = web
    archive(tiny, root / name, folder)
    index = url_index(tmp_path, tiny, f"{address}/{name}")
    done = install("tiny", tmp_path / "models", index)
    assert done["source"] == f"{address}/{name}" and "no calibration" in done["notes"][0]
    assert manifest(done["path"]) == manifest(tiny) and verify(str(done["path"]), index_path=index)[1] == []
    assert [p.name for p in (tmp_path / "models").iterdir()] == ["tiny"]


@pytest.mark.parametrize(
    "change, problem",
    [
        ("flip", "tokenizer.json: sha256 {got}, expected {expected}"),
        ("grow", "config.json: {size1:,} bytes, expected {size:,}"),
    ],
)
def test_a_file_that_differs_is_refused_by_name_and_leaves_nothing(tmp_path, tiny, web, change, problem):
    root, address = web
    changed = tmp_path / "changed"
    shutil.copytree(tiny, changed)
    if change == "flip":
        data = bytearray((changed / "tokenizer.json").read_bytes())
        data[50] ^= 1
        (changed / "tokenizer.json").write_bytes(bytes(data))
    else:
        (changed / "config.json").write_text((changed / "config.json").read_text() + "\n" * 1000)
    archive(changed, root / f"{change}.tar.gz")
    index = url_index(tmp_path, tiny, f"{address}/{change}.tar.gz")
    with pytest.raises(IntegrityError, match="failed verification; nothing installed") as refused:
        install("tiny", tmp_path / "models", index)
    expected, size = manifest(tiny)["tokenizer.json"]["sha256"], manifest(tiny)["config.json"]["size"]
    got = manifest(changed)["tokenizer.json"]["sha256"]
    assert problem.format(got=got, expected=expected, size=size, size1=size + 1) in str(refused.value)  # cut there
    assert len(str(refused.value).splitlines()) == 2  # the one file named, nothing else
    assert not (tmp_path / "models").exists()


@pytest.mark.parametrize(
    "url, allowed",
    [
        ("https://example.com/m.tar.gz", True),
        ("http://127.0.0.1:8000/m.zip", True),
        ("http://[::1]:8000/m.zip", True),
        ("http://localhost/m.zip", True),
        ("http://example.com/m.tar.gz", False),
        ("http://127.0.0.1.example.com/m.tar.gz", False),
        ("http://10.0.0.1/m.tar.gz", False),
        ("ftp://example.com/m.zip", False),
        ("file:///etc/passwd", False),
    ],
)
def test_plain_http_goes_to_loopback_hosts_only(url, allowed):
    if allowed:
        assert check_url(url) == url
    else:
        with pytest.raises(ValueError, match="refused"):
            check_url(url)


@pytest.mark.parametrize("path", ["http://example.com/tiny.tar.gz", "{address}/redirect"])
def test_a_plain_http_source_elsewhere_is_refused_and_leaves_nothing(tmp_path, tiny, web, path):
    """Given in the index, or reached by a redirect from a loopback server: refused before any byte is fetched."""
    index = url_index(tmp_path, tiny, path.format(address=web[1]))
    with pytest.raises(
        ValueError, match=r"refused http://example.com/tiny.tar.gz: plain http is allowed only to a loopback"
    ):
        install("tiny", tmp_path / "models", index)
    assert not (tmp_path / "models").exists()


@pytest.fixture(scope="module")
def hub(local_hub_environment, tmp_path_factory):
    require("olah", "the local hub needs olah: pip install olah")
    with local_hub(tmp_path_factory.mktemp("hub")) as running:
        yield running


def test_a_pushed_model_enters_the_index_and_installs_from_the_hub(tmp_path, tiny, hub, monkeypatch, capsys):
    """push_to_hub.py --index_entry adds the repository at the commit the Hub serves, every file hashed from what
    it serves; the entry then installs from it. Weights of another version are refused for the entry."""
    hub.apply(monkeypatch, hf_home=hub.new_hf_home())
    index = save_index({"format": 1, "models": {"tiny": model_entry(tiny, "models/tiny")}}, tmp_path / "index.json")
    push_to_hub.main([str(tiny), "user/tiny-installer", "--index_entry", "tiny", "--index", str(index)])
    assert "Index entry tiny: user/tiny-installer at " in capsys.readouterr().out
    source = load_index(index)["models"]["tiny"]["sources"][-1]
    assert source["revision"] == hub.api().model_info("user/tiny-installer").sha
    assert {"model.safetensors", "config.json", "README.md", "modeling_transformer_mt.py"} <= set(source["files"])
    assert source["files"]["model.safetensors"] == manifest(tiny)["model.safetensors"]

    done = install("tiny", tmp_path / "models", index, kind="hub")
    assert done["source"] == f"the Hub repository user/tiny-installer at {source['revision']}"
    assert verify("tiny", tmp_path / "models")[1] == []
    assert listing(tmp_path / "models", index)[0]["installed"] == load_index(index)["models"]["tiny"]["version"]

    other = tmp_path / "other"
    save_tiny(other, "learned")
    hub.api().create_repo("user/other")
    hub.api().upload_folder(repo_id="user/other", folder_path=other)
    before = index.read_bytes()
    with pytest.raises(ValueError, match="holds weights of version .*, not tiny's"):
        add_hub_source("tiny", "user/other", path=index)
    assert index.read_bytes() == before


def test_an_opus_mt_repository_installs_converted(tmp_path, tiny, hub, monkeypatch):
    """A MarianMT checkpoint on the Hub, installed by its id: converted by the bridge (the same logits), with a
    receipt, and the note that it has no calibration and how to fit one."""
    require("sentencepiece", "the Marian tokenizer needs sentencepiece (the bridges extra)")
    from transformers import AutoModelForSeq2SeqLM

    marian = marian_checkpoint(tmp_path / "marian")
    hub.apply(monkeypatch, hf_home=hub.new_hf_home())
    hub.api().create_repo("Helsinki-NLP/opus-mt-en-de")
    hub.api().upload_folder(repo_id="Helsinki-NLP/opus-mt-en-de", folder_path=tmp_path / "marian")
    done = install("Helsinki-NLP/opus-mt-en-de", tmp_path / "models")
    target = tmp_path / "models" / "opus-mt-en-de"
    assert done["path"] == target and "converted from MarianMT" in done["source"]
    assert done["version"] == manifest(target)["model.safetensors"]["sha256"][:12]
    assert "no calibration" in done["notes"][0]
    assert f"python scripts/score.py --model {target} --data DATA --calibrate" in done["notes"][0]
    config = json.loads((target / "config.json").read_text())
    assert (config["model_type"], config["source_lang"], config["target_lang"]) == ("transformer_mt", "en", "de")
    assert verify("opus-mt-en-de", tmp_path / "models")[1] == []
    ids = torch.tensor([[5, 9, 12, 1]])
    with torch.no_grad():
        expected = marian(input_ids=ids, decoder_input_ids=ids).logits
        converted = AutoModelForSeq2SeqLM.from_pretrained(target).eval()(input_ids=ids, decoder_input_ids=ids).logits
    torch.testing.assert_close(converted, expected, rtol=0, atol=1e-5)

    hub.api().create_repo("user/not-marian")
    hub.api().upload_folder(repo_id="user/not-marian", folder_path=tiny)
    with pytest.raises(ValueError, match="not a Marian"):  # a repository of another kind: nothing converted
        install("user/not-marian", tmp_path / "other-models")
    assert not (tmp_path / "other-models").exists()


def test_an_archive_larger_than_its_files_is_refused(tmp_path, tiny, web, monkeypatch):
    """A download stops at the files' sizes plus ARCHIVE_SLACK: nothing unbounded is written."""
    monkeypatch.setattr(sources, "ARCHIVE_SLACK", 10 - sum(f["size"] for f in manifest(tiny).values()))
    root, address = web
    archive(tiny, root / "big.zip")
    with pytest.raises(IntegrityError, match=r"big.zip is larger than its files \(10 bytes with headers\)"):
        install("tiny", tmp_path / "models", url_index(tmp_path, tiny, f"{address}/big.zip"))
    assert not (tmp_path / "models").exists()
