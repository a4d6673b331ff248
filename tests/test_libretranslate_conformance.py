"""LibreTranslate's own API tests, run against transformer-mt-serve over HTTP: the conformance suite.

LibreTranslate's wheel ships them (`libretranslate/tests/test_api/test_api_*.py`, 14 tests in 1.9.6). The wheel is
downloaded from PyPI once into a cache folder (`pip download libretranslate==1.9.6 --no-deps`) and only those files
are taken out of it: they are AGPL-3.0, so never committed, and their conftest.py, which imports LibreTranslate's
Flask app, is never collected. Each test function gets a `client` that turns its Flask test-client calls into HTTP
requests, exactly as they wrote them, to a server process on loopback serving a tiny English→Spanish model (their
tests translate en→es), given by itself and in a folder of models loaded on demand (`--models`), the way
tests/test_transformers_common.py runs transformers' own tests. Offline and not cached, the module skips with a
one-line reason (under CI=true it fails instead: CI has PyPI).
"""

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import httpx
import pytest

from .test_serving import server_process
from .utils import save_copy_model


VERSION = "1.9.6"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "transformer-mt"


def api_tests() -> Path:
    """The folder holding LibreTranslate's test_api_*.py of VERSION, taken out of its wheel once."""
    root = CACHE / f"libretranslate-{VERSION}-api-tests"
    if len(list(root.glob("test_api_*.py"))) >= 6:
        return root
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE) as staging:
        try:
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    f"libretranslate=={VERSION}",
                    "--no-deps",
                    "--quiet",
                    "-d",
                    staging,
                ],
                check=True,
                capture_output=True,
                timeout=600,
            )
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
            if os.environ.get("CI"):
                raise
            pytest.skip(
                f"LibreTranslate's API tests need its {VERSION} wheel from PyPI (not in {CACHE}, and pip "
                f"download failed: {type(error).__name__})",
                allow_module_level=True,
            )
        [wheel] = Path(staging).glob("libretranslate-*.whl")
        extracted = Path(staging) / "tests"
        extracted.mkdir()
        with zipfile.ZipFile(wheel) as archive:
            for name in archive.namelist():
                if name.startswith("libretranslate/tests/test_api/test_api_") and name.endswith(".py"):
                    (extracted / Path(name).name).write_bytes(archive.read(name))
        root.parent.mkdir(parents=True, exist_ok=True)
        if not root.is_dir():
            os.replace(extracted, root)
    return root


def collected() -> list[tuple[str, object]]:
    """(file::name, function) of every test function in LibreTranslate's API test files."""
    found = []
    for path in sorted(api_tests().glob("test_api_*.py")):
        spec = importlib.util.spec_from_file_location(f"libretranslate_api_tests.{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        found += [
            (f"{path.name}::{name}", getattr(module, name))
            for name in sorted(vars(module))
            if name.startswith("test_") and callable(getattr(module, name))
        ]
    return found


TESTS = collected()


class FlaskResponse:
    """What their tests read of a Flask test-client response: status_code, data, json."""

    def __init__(self, answer: httpx.Response):
        self.status_code, self.data = answer.status_code, answer.content
        self.json = answer.json() if answer.headers.get("content-type", "").startswith("application/json") else None


class HttpClient:
    """Flask's test client, as their tests call it, over HTTP to `url`."""

    def __init__(self, url: str):
        self.url = url

    def post(self, path: str, data: dict | None = None, json: dict | None = None) -> FlaskResponse:
        return FlaskResponse(httpx.post(self.url + path, data=data, json=json, timeout=60))

    def get(self, path: str) -> FlaskResponse:
        return FlaskResponse(httpx.get(self.url + path, timeout=60))


@pytest.fixture(scope="module", params=["model", "folder"])
def client(request, tmp_path_factory):
    """A server of one tiny en->es model given by itself, or of a folder of models (en->es and de->en) each loaded on
    its first request (`--models`, issue 53)."""
    folder = tmp_path_factory.mktemp("conformance")
    generation = dict(num_beams=2, early_stopping=True, max_length=40)
    save_copy_model(folder / "tiny-en-es", generation, languages=("en", "es"))
    if request.param == "model":
        served = [str(folder / "tiny-en-es")]
    else:
        save_copy_model(folder / "tiny-de-en", generation, languages=("de", "en"))
        served = ["--models", str(folder)]
    with server_process(*served, "--engine", "transformers") as url:
        yield HttpClient(url)


def test_all_fourteen_are_collected():
    assert len(TESTS) == 14, [name for name, _ in TESTS]


@pytest.mark.slow  # a server process
@pytest.mark.parametrize("test", [function for _, function in TESTS], ids=[name for name, _ in TESTS])
def test_libretranslate_api(test, client):
    test(client)


def test_unknown_routes_and_methods_answer_an_error_field():
    from fastapi.testclient import TestClient

    from .test_serving import fake_app

    with TestClient(fake_app()) as local:
        missing, wrong = local.get("/nowhere"), local.post("/languages")
        spec = local.get("/spec")
    assert (missing.status_code, missing.json()) == (404, {"error": "Not Found"})
    assert (wrong.status_code, wrong.json()) == (405, {"error": "Method Not Allowed"})
    assert spec.status_code == 200 and "/translate" in json.loads(spec.text)["paths"]
