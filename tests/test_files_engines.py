"""A .po with markup, XLIFF with inline elements and an HTML page translated by the shipped broader model on both
engines through each way in (Python's `translate_document`, `translate.py`, the server's `/translate_file`): the
three give the same bytes, and the markup comes back as it was sent (issue 51: these formats were tested through
the command on the default engine only)."""

import re

import pytest

from .utils import REPO, require


require("fastapi", "the server needs the [serve] extra: pip install -e '.[serve]'")
polib = require("polib", "the .po format needs the [files] extra: pip install -e '.[files]'")

MODEL = REPO / "models" / "transformer-mt-en-de-broad"
PO = """msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\\n"

msgid "Open the file."
msgstr ""

#, c-format
msgid "<b>%s</b> was saved."
msgstr ""

#, python-format
msgid "View <a href='https://example.org/?a=1&amp;b=2' target=\\"_blank\\">release notes</a> for %(version)s"
msgstr ""
"""
XLIFF = """<?xml version="1.0" encoding="UTF-8"?>
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2">
  <file source-language="en" target-language="de" datatype="plaintext" original="app">
    <body>
      <trans-unit id="1"><source>Close the window.</source></trans-unit>
      <trans-unit id="2"><source>Click <g id="b">Save</g> to keep your changes.</source><target/></trans-unit>
    </body>
  </file>
</xliff>
"""
HTML = (
    '<html><head><title>Printing</title></head><body><p class="x">Choose <b>File - Print</b> and click '
    "<kbd>OK</kbd>.</p><p>See <a title=\"Notes\" href='/n?a=1&amp;b=2'>the notes</a>.</p></body></html>"
)
FILES = {"app.po": PO, "app.xlf": XLIFF, "page.html": HTML}


def tags(text: str) -> list[str]:
    """Every tag as written, attributes and quotes included, in order."""
    return re.findall(r"</?[a-z][^>]*>", text.split("<body>", 1)[-1] if "<body>" in text else text)


def sources_and_targets(name: str, text: str) -> list[tuple[str, str]]:
    if name.endswith(".po"):
        return [(entry.msgid, entry.msgstr) for entry in polib.pofile(text)]
    if name.endswith(".xlf"):
        units = re.findall(r"<source>(.*?)</source>.*?<target[^>]*>(.*?)</target>", text, flags=re.S)
        return list(units)
    return [(HTML, text)]


@pytest.fixture(scope="module")
def server_files(tmp_path_factory):
    """{engine: {name: bytes}}: each file translated through /translate_file by the shipped broader model."""
    from fastapi.testclient import TestClient

    from transformer_mt.engines import load_engine
    from transformer_mt.serving import ServedModel, create_app
    from transformer_mt.serving.uploads import FileStore

    translated = {}
    for engine in ("transformers", "ctranslate2"):
        store = FileStore(str(tmp_path_factory.mktemp(f"files-{engine}")))
        app = create_app([ServedModel(load_engine(str(MODEL), engine), "en", "de")], None, store)
        with TestClient(app) as client:
            translated[engine] = {}
            for name, text in FILES.items():
                answer = client.post(
                    "/translate_file",
                    data={"source": "en", "target": "de"},
                    files={"file": (name, text.encode("utf-8"))},
                )
                assert answer.status_code == 200, answer.text
                translated[engine][name] = client.get(answer.json()["translatedFileUrl"]).content
    return translated


@pytest.mark.slow  # the shipped model on both engines, three ways each
@pytest.mark.parametrize("engine", ["transformers", "ctranslate2"])
@pytest.mark.parametrize("name", sorted(FILES))
def test_files_with_markup_through_python_the_command_and_the_server(tmp_path, engine, name, server_files):
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    from transformer_mt.documents.files import translate_document
    from transformer_mt.scripts import translate as translate_script

    (tmp_path / name).write_text(FILES[name], encoding="utf-8")
    model, tokenizer = AutoModelForSeq2SeqLM.from_pretrained(MODEL), AutoTokenizer.from_pretrained(MODEL)
    translate_document(
        model, tokenizer, str(tmp_path / name), str(tmp_path / f"python-{name}"), engine=engine, confidence=True
    )  # as the command and the server do for a calibrated model
    translate_script.main(
        [
            "--model",
            str(MODEL),
            "--engine",
            engine,
            "--input",
            str(tmp_path / name),
            "--output",
            str(tmp_path / f"command-{name}"),
            "--no_progress",
        ]
    )
    python = (tmp_path / f"python-{name}").read_bytes()
    assert (tmp_path / f"command-{name}").read_bytes() == python
    assert server_files[engine][name] == python
    for source, target in sources_and_targets(name, python.decode("utf-8")):
        assert target and target != source
        assert tags(target) == tags(source), (source, target)
