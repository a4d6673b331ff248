"""/translate_file and /download_file in LibreTranslate's shape: a file in, its translation downloaded once from
any process serving the same folder, refusals named."""

import os
import time

import pytest

from .utils import require


require("fastapi", "the server needs the [serve] extra: pip install -e '.[serve]'")
require("polib", "the .po format needs the [files] extra: pip install -e '.[files]'")
from fastapi.testclient import TestClient  # noqa: E402

from transformer_mt.serving import Limits, ServedModel, create_app  # noqa: E402
from transformer_mt.serving.uploads import FileStore, safe_filename  # noqa: E402

from .test_serving import FakeEngine  # noqa: E402


PO = """msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\\n"

msgid "Open the file."
msgstr ""

msgid "<b>%s</b> saved. Close it."
msgstr ""
"""


def app_of(store, limits=None, models=None):
    models = models or [ServedModel(FakeEngine("en", "de"), "en", "de")]
    return create_app(models, limits, store)


@pytest.fixture
def store(tmp_path):
    return FileStore(str(tmp_path / "files"))


def upload(client, name, data, **fields):
    return client.post(
        "/translate_file", data={"source": "en", "target": "de", **fields}, files={"file": (name, data)}
    )


def test_a_po_file_is_translated_downloaded_once_and_settings_say_so(store):
    with TestClient(app_of(store)) as client:
        settings = client.get("/frontend/settings").json()
        assert settings["filesTranslation"] is True and ".po" in settings["supportedFilesFormat"]
        answer = upload(client, "app.po", PO.encode())
        assert answer.status_code == 200, answer.text
        url = answer.json()["translatedFileUrl"]
        assert url.startswith("http://testserver/download_file/") and url.endswith(".app.po")
        download = client.get(url)
        assert download.status_code == 200
        assert "attachment" in download.headers["content-disposition"]
        text = download.content.decode()
        assert 'msgstr "«Open the file.»"' in text
        assert 'msgstr "«<b>%s</b> saved.» «Close it.»"' in text  # the markup carried through its sentence
        assert text.count("#, fuzzy") == 2  # machine translated: for review
        assert client.get(url).status_code == 404  # a download deletes it
    assert not os.listdir(store.directory)


def test_another_process_serving_the_folder_answers_the_download(store, tmp_path):
    with TestClient(app_of(store)) as first, TestClient(app_of(FileStore(str(store.directory)))) as second:
        url = upload(first, "notes.html", b"<p>Open the <b>file</b>.</p>").json()["translatedFileUrl"]
        download = second.get(url)
        assert download.status_code == 200 and download.content == "<p>«Open the <b>file</b>.»</p>".encode()
        assert first.get(url).status_code == 404


def test_refusals_are_named(store):
    limits = Limits(file_size_limit=64, file_char_limit=30)
    with TestClient(app_of(store, limits)) as client:
        answer = upload(client, "slides.key", b"x")
        assert answer.status_code == 400 and "file format not supported: 'slides.key'" in answer.json()["error"]
        answer = upload(client, "app.xlf", b"<xliff><unclosed></xliff>")
        assert answer.status_code == 400 and "cannot read this file as xliff" in answer.json()["error"]
        answer = upload(client, "big.html", b"<p>" + b"a" * 100 + b"</p>")
        assert answer.status_code == 400 and "file size limit (64 bytes)" in answer.json()["error"]
        answer = upload(client, "long.html", b"<p>" + b"word " * 10 + b"</p>")
        assert answer.status_code == 400 and "file text limit (30 characters)" in answer.json()["error"]
        answer = client.post("/translate_file", data={"source": "en", "target": "de"})
        assert answer.status_code == 400 and answer.json()["error"] == "Invalid request: missing file parameter"
        answer = upload(client, "a.html", b"<p>x</p>", target="fr")
        assert answer.status_code == 400 and answer.json()["error"] == "fr is not supported"
        assert client.get("/download_file/nothing.txt").status_code == 404
    with TestClient(app_of(None)) as client:
        assert client.get("/frontend/settings").json()["filesTranslation"] is False
        answer = upload(client, "a.html", b"<p>x</p>")
        assert answer.status_code == 403 and "disabled" in answer.json()["error"]


def test_source_auto_takes_the_one_model_into_the_target(store):
    with TestClient(app_of(store)) as client:
        answer = upload(client, "a.html", b"<p>Hello.</p>", source="auto")
        assert client.get(answer.json()["translatedFileUrl"]).content == "<p>«Hello.»</p>".encode()


def test_a_file_never_downloaded_expires_and_names_are_safe(tmp_path):
    store = FileStore(str(tmp_path / "files"), expiry_minutes=1)
    name = store.put("../../etc/passwd", b"data")
    assert name.endswith(".passwd") and (store.directory / name).exists()
    old = time.time() - 120
    os.utime(store.directory / name, (old, old))
    store.sweep()
    assert store.take(name) is None and not os.listdir(store.directory)
    assert store.take("../x.po") is None and safe_filename("a\\b/c\x00.po") == "c_.po"
    with pytest.raises(ValueError, match="files_expiry_minutes must be > 0"):
        FileStore(str(tmp_path / "other"), expiry_minutes=0)
