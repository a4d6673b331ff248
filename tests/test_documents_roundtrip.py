"""Every file format round-trips through the three ways in: the translate command, Python (`translate_document`)
and the server's /translate_file give the same bytes with the same model, and the format's own parser reads them.
The formats' own rules (what is translated, what is kept byte for byte) are tested in tests/test_documents_*.py
and tests/test_files.py."""

import io
import json

import pytest

from .test_documents_epub_odp import build_epub, build_odp, read_epub
from .utils import require, save_copy_model


require("fastapi", "the server needs the [serve] extra: pip install -e '.[serve]'")
docx = require("docx", "the .docx format needs the [files] extra: pip install -e '.[files]'")
pptx = require("pptx", "the .pptx format needs the [files] extra")
odfdo = require("odfdo", "the .odt format needs the [files] extra")
srt = require("srt", "the .srt format needs the [files] extra")
webvtt = require("webvtt", "the .vtt format needs the [files] extra")
polib = require("polib", "the .po format needs the [files] extra")
markdown_it = require("markdown_it", "the .md format needs the [files] extra")
ruamel_yaml = require("ruamel.yaml", "the .yaml format needs the [files] extra")
from fastapi.testclient import TestClient  # noqa: E402

from transformer_mt.documents.files import translate_document  # noqa: E402
from transformer_mt.engines import load_engine  # noqa: E402
from transformer_mt.serving import ServedModel, create_app  # noqa: E402
from transformer_mt.serving.uploads import FileStore  # noqa: E402


def office_docx() -> bytes:
    document = docx.Document()
    paragraph = document.add_paragraph("Open the ")
    paragraph.add_run("file").bold = True
    paragraph.add_run(" now.")
    document.add_table(rows=1, cols=1).cell(0, 0).text = "Close it."
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def office_pptx() -> bytes:
    presentation = pptx.Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[1])
    slide.shapes.title.text = "Open the file."
    slide.notes_slide.notes_text_frame.text = "Close it."
    out = io.BytesIO()
    presentation.save(out)
    return out.getvalue()


def office_odt(tmp_path) -> bytes:
    document = odfdo.Document("text")
    document.body.append(odfdo.Paragraph("Open the file."))
    document.body.append(odfdo.Header(1, "Close it."))
    document.save(tmp_path / "sample.odt")
    return (tmp_path / "sample.odt").read_bytes()


SAMPLES = {
    "notes.txt": b"Open the file.\n\nClose it.\n",
    "page.html": b"<p>Open the <b>file</b> now.</p>",
    "app.po": b'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
    b'msgid "Open the file."\nmsgstr ""\n',
    "app.xlf": b'<?xml version="1.0" encoding="UTF-8"?>\n<xliff xmlns="urn:oasis:names:tc:xliff:document:1.2" '
    b'version="1.2"><file source-language="en" target-language="de" datatype="plaintext" original="a">'
    b'<body><trans-unit id="1"><source>Open the <g id="1">file</g>.</source></trans-unit></body></file>'
    b"</xliff>\n",
    "help.md": b"# Open the file\n\nClose it **now**, then see [the page](https://example.org).\n\n```\nkeep()\n```\n",
    "film.srt": b"1\n00:00:01,000 --> 00:00:02,000\nOpen the\n\n2\n00:00:02,500 --> 00:00:04,000\nfile now.\n",
    "film.vtt": b"WEBVTT\n\n00:00:01.000 --> 00:00:02.000\nOpen the file.\n",
    "strings.json": b'{\n  "open": "Open the file.",\n  "count": 3\n}\n',
    "strings.yaml": b"# the app's strings\nopen: 'Open the file.'\nclose: Close it.\n",
}


def read_back(name: str, data: bytes):
    """The format's own library reads what was written (each raises on a broken file)."""
    kind = name.rsplit(".", 1)[1]
    readers = {
        "docx": lambda: docx.Document(io.BytesIO(data)),
        "pptx": lambda: pptx.Presentation(io.BytesIO(data)),
        "odt": lambda: odfdo.Document(io.BytesIO(data)),
        "odp": lambda: odfdo.Document(io.BytesIO(data)),
        "epub": lambda: read_epub(data),
        "srt": lambda: list(srt.parse(data.decode())),
        "vtt": lambda: webvtt.from_buffer(io.StringIO(data.decode())),
        "po": lambda: polib.pofile(data.decode()),
        "json": lambda: json.loads(data),
        "yaml": lambda: ruamel_yaml.YAML().load(data),
        "md": lambda: markdown_it.MarkdownIt().parse(data.decode()),
    }
    if kind in readers:
        readers[kind]()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    directory = tmp_path_factory.mktemp("model")
    model, tokenizer = save_copy_model(directory, generation={"num_beams": 1, "max_length": 64})
    engine = load_engine(str(directory), "transformers")
    store = FileStore(str(tmp_path_factory.mktemp("files")))
    with TestClient(create_app([ServedModel(engine, "en", "de")], files=store)) as client:
        yield directory, model, tokenizer, client


@pytest.mark.parametrize("name", [*SAMPLES, "report.docx", "slides.pptx", "letter.odt", "deck.odp", "book.epub"])
def test_the_command_python_and_the_server_write_the_same_file(name, served, tmp_path, capsys):
    from transformer_mt.scripts import translate as translate_script

    directory, model, tokenizer, client = served
    builders = {"report.docx": office_docx, "slides.pptx": office_pptx, "letter.odt": lambda: office_odt(tmp_path)}
    builders.update({"deck.odp": build_odp, "book.epub": build_epub})
    source = builders[name]() if name in builders else SAMPLES[name]
    (tmp_path / name).write_bytes(source)
    python_out = tmp_path / f"python.{name}"
    translate_document(model, tokenizer, str(tmp_path / name), str(python_out), guards=False)
    by_python = python_out.read_bytes()
    assert by_python != source
    read_back(name, by_python)
    answer = client.post(
        "/translate_file", data={"source": "en", "target": "de", "guards": "false"}, files={"file": (name, source)}
    )
    assert answer.status_code == 200, answer.text
    assert client.get(answer.json()["translatedFileUrl"]).content == by_python
    if name.endswith(".txt"):
        return  # the command reads a text file line by line, with its own columns (tests/test_translate_command.py)
    translate_script.main(
        [
            "--model",
            str(directory),
            "--input",
            str(tmp_path / name),
            "--output",
            str(tmp_path / f"command.{name}"),
            "--engine",
            "transformers",
            "--no_progress",
            "--no_guards",
        ]
    )
    assert f"{name} -> " in capsys.readouterr().err
    assert (tmp_path / f"command.{name}").read_bytes() == by_python
