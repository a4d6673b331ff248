"""An imported Opus-MT (Marian) model the whole way (issue 53): a tiny random MarianMT checkpoint built here and
converted once (bridges.marian, with the fast tokenizer of bridges.marian_tokenizer) translates a .po of placeholders
through translate.py, and an HTML post and the .po through the server, on both engines. Its vocabulary has no "%",
"{" or "$", so the model never writes a placeholder: each one comes back only by span repair, which reads the fast
tokenizer's character offsets and the engine's word alignments; kept on MarianTokenizer, the same model loses them."""

import json
import re

import pytest

from transformer_mt import TransformerMTTokenizerFast
from transformer_mt.bridges.marian import convert_marian
from transformer_mt.scripts import translate as translate_script

from .utils import marian_checkpoint, require


require("sentencepiece", "MarianTokenizer and the tiny Marian checkpoint need sentencepiece (in the test extra)")
require("ctranslate2", "the fast engine needs ctranslate2: pip install 'transformer-mt[fast]'")
require("fastapi", "the server needs the [serve] extra: pip install -e '.[serve]'")
polib = require("polib", "the .po format needs the [files] extra: pip install -e '.[files]'")
bs4 = require("bs4", "reading the HTML answer needs BeautifulSoup (the [files] extra)")

ENGINES = ["transformers", "ctranslate2"]
# An Opus-MT model's generation config bounds its translations (512 tokens); this one's short, since a random model
# writes until the bound.
MAX_LENGTH = 12
PO = """msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\\n"

#, c-format
msgid "Cannot rename %s"
msgstr ""

#, python-brace-format
msgid "Delete {count} files?"
msgstr ""

#, c-format
msgid "%1$s of %2$d"
msgstr ""
"""
HREF = "https://example.org/x?a=1&amp;b=2"  # as the post writes it: kept byte for byte
POST = f'<p>Cannot rename %s: open the <a href="{HREF}" rel="nofollow">link</a> and <b>delete the files</b> now.</p>'
PLACEHOLDER = re.compile(r"%\d+\$[sd]|%[sd]|\{\w+\}")


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """The converted tiny Marian checkpoint's directory, with PO beside it as app.po."""
    folder = tmp_path_factory.mktemp("opus-mt")
    marian_checkpoint(folder / "marian")
    generation = folder / "marian" / "generation_config.json"
    generation.write_text(json.dumps({**json.loads(generation.read_text()), "max_length": MAX_LENGTH}))
    convert_marian(str(folder / "marian"), str(folder / "model"), source_lang="en", target_lang="de")
    (folder / "app.po").write_text(PO, encoding="utf-8")
    return folder / "model"


def translate_po(model_dir, engine: str, output) -> str:
    """app.po beside `model_dir` translated by translate.py into `output`; returns the output's text."""
    translate_script.main(
        ["--model", str(model_dir), "--engine", engine, "--input", str(model_dir.parent / "app.po")]
        + ["--output", str(output), "--no_progress"]
    )
    return output.read_text(encoding="utf-8")


def check_placeholders_kept(text: str) -> None:
    """Every entry of PO translated, in its place, keeping its msgid's placeholders and flags, marked fuzzy (machine
    translated: for review), the placeholders put back named in its comment (the model can write none)."""
    translated, sources = polib.pofile(text), polib.pofile(PO)
    assert [entry.msgid for entry in translated] == [entry.msgid for entry in sources]
    for entry, source in zip(translated, sources, strict=True):
        placeholders = PLACEHOLDER.findall(entry.msgid)
        assert entry.msgstr and sorted(PLACEHOLDER.findall(entry.msgstr)) == sorted(placeholders), entry.msgstr
        assert entry.flags == [*source.flags, "fuzzy"]
        assert f"put back: {' '.join(placeholders)}" in entry.tcomment  # what else it says is the model's


def test_the_vocabulary_cannot_write_a_placeholder_and_the_tokenizer_gives_offsets(imported):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(imported)
    assert type(tokenizer) is TransformerMTTokenizerFast and tokenizer.is_fast
    assert not [token for token in tokenizer.get_vocab() if set(token) & set("%{$")]  # repair is the only way back
    offsets = tokenizer("Cannot rename %s", return_offsets_mapping=True)["offset_mapping"]
    assert offsets[-1] == (0, 0) and offsets[-2][1] == len("Cannot rename %s")


@pytest.mark.parametrize("engine", ENGINES)
def test_the_engine_reads_with_the_fast_tokenizer_and_aligns(imported, engine):
    from transformer_mt.engines import load_engine
    from transformer_mt.options import TranslationOptions

    loaded = load_engine(str(imported), engine)
    assert loaded.name == engine and type(loaded.tokenizer) is TransformerMTTokenizerFast
    (alignment,) = loaded.align_pairs(["Cannot rename %s"], ["Umbenennen von %s"], TranslationOptions())
    assert alignment and all(0 <= i < 3 and 0 <= j < 3 for i, j in alignment)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_po_of_placeholders_through_the_command(imported, engine, tmp_path, caplog):
    text = translate_po(imported, engine, tmp_path / "app.de.po")
    check_placeholders_kept(text)
    assert "did not write %1$s, %2$d; put back from the word alignment" in caplog.text


def test_kept_on_marian_tokenizer_the_same_model_loses_them(imported, tmp_path, monkeypatch):
    """What the test above would see without the fast tokenizer: no offsets, no alignment, nothing put back."""
    import transformer_mt.bridges.marian as bridge

    def no_fast_tokenizer(slow):
        raise ValueError("no fast tokenizer, for this test")

    monkeypatch.setattr(bridge, "fast_marian_tokenizer", no_fast_tokenizer)
    convert_marian(str(imported.parent / "marian"), str(tmp_path / "model"), source_lang="en", target_lang="de")
    (tmp_path / "app.po").write_text(PO, encoding="utf-8")
    for entry in polib.pofile(translate_po(tmp_path / "model", "transformers", tmp_path / "app.de.po")):
        assert not PLACEHOLDER.findall(entry.msgstr) and "transformer-mt: lost: " in entry.tcomment


def tags(html: str) -> list[tuple]:
    """Each element's name and attributes as parsed (sorted: a translation may reorder them)."""
    soup = bs4.BeautifulSoup(html, "html.parser")
    return sorted((tag.name, sorted(tag.attrs.items())) for tag in soup.find_all(True))


@pytest.mark.parametrize("engine", ENGINES)
def test_an_html_post_and_the_po_through_the_server(imported, engine, tmp_path):
    from fastapi.testclient import TestClient

    from transformer_mt.engines import load_engine
    from transformer_mt.serving import ServedModel, create_app
    from transformer_mt.serving.uploads import FileStore

    served = ServedModel(load_engine(str(imported), engine), "en", "de")
    assert type(served.engine.tokenizer) is TransformerMTTokenizerFast  # what the server reads with
    with TestClient(create_app([served], None, FileStore(str(tmp_path / "files")))) as client:
        answer = client.post("/translate", json={"q": POST, "source": "en", "target": "de", "format": "html"})
        assert answer.status_code == 200, answer.text
        html = answer.json()["translatedText"]
        assert tags(html) == tags(POST) and f'href="{HREF}"' in html, html
        assert html.count("%s") == 1 and answer.json()["flags"]["repaired"] == ["%s"]
        answer = client.post(
            "/translate_file",
            data={"source": "en", "target": "de"},
            files={"file": ("app.po", PO.encode("utf-8"))},
        )
        assert answer.status_code == 200, answer.text
        downloaded = client.get(answer.json()["translatedFileUrl"]).content.decode("utf-8")
    check_placeholders_kept(downloaded)
    assert downloaded == translate_po(imported, engine, tmp_path / "app.de.po")  # the server's bytes: the command's
