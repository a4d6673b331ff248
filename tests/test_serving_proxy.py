"""The server behind a reverse proxy (transformer_mt.serving.proxy): a trusted proxy's X-Forwarded-For, -Proto and
-Host make the download link name the host and scheme the client asked (an untrusted client's do nothing); under
--url_prefix (which the proxy strips) the link and /spec name the prefix.
In-process and on a server process on loopback."""

import json
import urllib.request
import warnings

import pytest

from .utils import require, save_copy_model, serve_process


require("fastapi", "the server needs the [serve] extra: pip install -e '.[serve]'")
from fastapi.testclient import TestClient  # noqa: E402

from transformer_mt.commands import serve  # noqa: E402
from transformer_mt.serving import ServedModel, create_app  # noqa: E402
from transformer_mt.serving.proxy import Forwarded  # noqa: E402
from transformer_mt.serving.uploads import FileStore  # noqa: E402

from .test_serving import FakeEngine  # noqa: E402


PROXY = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "mt.example.org", "X-Forwarded-For": "203.0.113.7"}
FIELDS = {"source": "en", "target": "de"}


def link(client, headers=PROXY) -> str:
    files = {"file": ("a.txt", b"Open the file.")}
    return client.post("/translate_file", data=FIELDS, files=files, headers=headers).json()["translatedFileUrl"]


@pytest.mark.parametrize(
    "trusted, prefix, expected",
    [
        ("testclient", "", "https://mt.example.org/download_file/"),
        ("testclient", "/mt", "https://mt.example.org/mt/download_file/"),
        ("127.0.0.1", "", "http://testserver/download_file/"),  # the test client is no trusted proxy
    ],
)
def test_the_download_link_names_what_a_trusted_proxy_forwards(tmp_path, trusted, prefix, expected):
    app = create_app([ServedModel(FakeEngine(), "en", "de")], files=FileStore(str(tmp_path)))
    app.add_middleware(Forwarded, trusted=trusted)
    with TestClient(app, root_path=prefix) as client:
        found = link(client)
        assert found.startswith(expected)
        download = client.get(found.split("mt.example.org", 1)[-1].split("testserver", 1)[-1])
        assert download.status_code == 200 and download.content == "«Open the file.»".encode()
        with warnings.catch_warnings():  # every route has an operation id of its own (DeepL's GET and POST)
            warnings.simplefilter("error")
            assert client.get("/spec").json()["servers"] == [{"url": prefix or "/"}]


def test_a_url_prefix_must_be_a_path(capsys):
    for bad in ("mt", "/mt/"):
        with pytest.raises(SystemExit):
            serve.parse_args(["model", "--url_prefix", bad])
        assert "--url_prefix is a path such as /mt" in capsys.readouterr().err


@pytest.mark.slow  # a server process
def test_a_server_process_behind_a_prefix_and_a_proxy_on_loopback(tmp_path):
    save_copy_model(tmp_path / "model", dict(num_beams=1, max_length=24))
    flags = ["--engine", "transformers", "--url_prefix", "/mt", "--files_dir", str(tmp_path / "files"), "--access_log"]
    with serve_process(str(tmp_path / "model"), *flags) as (process, base):
        body = json.dumps({"q": "Open the file.", **FIELDS}).encode()
        request = urllib.request.Request(base + "/translate", body, {"Content-Type": "application/json", **PROXY})
        with urllib.request.urlopen(request, timeout=60) as answer:  # the proxy stripped /mt
            assert answer.status == 200
        boundary = "b0undary"
        form = "".join(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n' for k, v in FIELDS.items()
        )
        form += (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nOpen the file.\r\n'
        )
        form += f"--{boundary}--\r\n"
        headers = {"Content-Type": f"multipart/form-data; boundary={boundary}", **PROXY}
        request = urllib.request.Request(base + "/translate_file", form.encode(), headers)
        with urllib.request.urlopen(request, timeout=60) as answer:  # loopback is the trusted proxy by default
            assert json.loads(answer.read())["translatedFileUrl"].startswith(
                "https://mt.example.org/mt/download_file/"
            )
    logged = [line for line in process.stdout.read().splitlines() if '"POST /mt/translate' in line]
    assert len(logged) == 2 and all(line.split(" - ")[0].endswith(" 203.0.113.7:0") for line in logged), logged
