""".docx, .pptx and .odt translated in place (transformer_mt.documents.docx, .pptx, .odt over .packages and .runs):
documents built with each format's own library, translated by a fake that marks what it translated, and read back
with that library; every member the translation did not change byte-identical; broken files and zip bombs refused.
"""

import io
import struct
import zipfile
import zlib

import pytest

from transformer_mt.documents import FormatError, packages
from transformer_mt.documents import docx as docx_format
from transformer_mt.documents import odt as odt_format
from transformer_mt.documents import pptx as pptx_format
from transformer_mt.text.markup import HtmlDocuments

from .utils import require


docx = require("docx", "the .docx tests build and read documents with python-docx: pip install -e '.[files]'")
pptx = require("pptx", "the .pptx tests build and read presentations with python-pptx: pip install -e '.[files]'")
odfdo = require("odfdo", "the .odt tests build and read documents with odfdo: pip install -e '.[files]'")

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
WPS = "http://schemas.microsoft.com/office/word/2010/wordprocessingShape"


def mark(texts, format):
    """A translation that shows what was translated: each HTML run of text marked whole, «text», its words aligned
    one to one (tests/test_files.py's `mark`)."""
    assert format == "html"
    documents = HtmlDocuments(texts)
    return documents.fill(
        [f"«{text}»" for text in documents.texts],
        [[(i, i) for i in range(len(text.split()))] for text in documents.texts],
    )


class Recorder:
    """A translate_texts that keeps its calls and answers with `answer` (`mark` unless told)."""

    def __init__(self, answer=mark):
        self.calls, self.answer = [], answer

    def __call__(self, texts, format):
        self.calls.append((list(texts), format))
        return self.answer(texts, format)


def png() -> bytes:
    """A 1x1 PNG, for a picture in a document."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00"))
        + chunk(b"IEND", b"")
    )


def saved(document) -> bytes:
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def build_docx() -> bytes:
    """A body sentence with a bold run, a hyperlink and a footnote reference; a table; a header; a footer with a
    page number field; a text box; a picture alone in its paragraph; the footnote."""
    from docx.opc.constants import CONTENT_TYPE, RELATIONSHIP_TYPE
    from docx.opc.packuri import PackURI
    from docx.opc.part import Part
    from docx.oxml import parse_xml
    from docx.oxml.ns import nsdecls

    document = docx.Document()
    paragraph = document.add_paragraph("Click ")
    paragraph.add_run("Save").bold = True
    paragraph.add_run(" or read ")
    address = paragraph.part.relate_to("https://example.com/help", RELATIONSHIP_TYPE.HYPERLINK, is_external=True)
    link = parse_xml(f'<w:hyperlink {nsdecls("w", "r")} r:id="{address}"/>')
    linked = paragraph.add_run("the help page")
    linked.underline = True
    link.append(linked._r)
    paragraph._p.append(link)
    paragraph.add_run(" now.")
    paragraph._p.append(
        parse_xml(
            f'<w:r {nsdecls("w")}><w:rPr><w:vertAlign w:val="superscript"/></w:rPr>'
            '<w:footnoteReference w:id="1"/></w:r>'
        )
    )
    table = document.add_table(rows=1, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Name", "Size"
    document.sections[0].header.paragraphs[0].text = "Header text"
    document.sections[0].footer.paragraphs[0].text = "Footer text"
    page = document.sections[0].footer.add_paragraph("Page ")
    for char in (
        '<w:fldChar w:fldCharType="begin"/>',
        '<w:instrText xml:space="preserve"> PAGE </w:instrText>',
        '<w:fldChar w:fldCharType="separate"/>',
        "<w:t>1</w:t>",
        '<w:fldChar w:fldCharType="end"/>',
    ):
        page._p.append(parse_xml(f"<w:r {nsdecls('w')}>{char}</w:r>"))
    document.add_paragraph()._p.append(
        parse_xml(
            f'<w:r {nsdecls("w", "wp", "a")} xmlns:wps="{WPS}"><w:drawing><wp:inline><wp:extent cx="914400" '
            'cy="457200"/><wp:docPr id="10" name="Text Box 1"/><a:graphic><a:graphicData uri="' + WPS + '"><wps:wsp>'
            "<wps:spPr/><wps:txbx><w:txbxContent><w:p><w:r><w:t>Text in a box.</w:t></w:r></w:p></w:txbxContent>"
            "</wps:txbx><wps:bodyPr/></wps:wsp></a:graphicData></a:graphic></wp:inline></w:drawing></w:r>"
        )
    )
    document.add_paragraph().add_run().add_picture(io.BytesIO(png()))
    notes = (
        f'<w:footnotes xmlns:w="{W}"><w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/>'
        '</w:r></w:p></w:footnote><w:footnote w:id="1"><w:p><w:r><w:rPr><w:vertAlign w:val="superscript"/>'
        '</w:rPr><w:footnoteRef/></w:r><w:r><w:t xml:space="preserve"> A note below.</w:t></w:r></w:p>'
        "</w:footnote></w:footnotes>"
    )
    part = Part(PackURI("/word/footnotes.xml"), CONTENT_TYPE.WML_FOOTNOTES, notes.encode(), document.part.package)
    document.part.relate_to(part, RELATIONSHIP_TYPE.FOOTNOTES)
    return saved(document)


def build_pptx() -> bytes:
    """A slide with a title, a text box with a bold run inside a sentence and a linked run, a table, a grouped
    shape; its notes."""
    from pptx.util import Inches

    presentation = pptx.Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[5])  # "Title Only"
    slide.shapes.title.text = "Quarterly results"
    frame = slide.shapes.add_textbox(Inches(1), Inches(2), Inches(4), Inches(1)).text_frame
    for text, bold in (("Press ", None), ("Enter", True), (" to go on.", None)):
        run = frame.paragraphs[0].add_run()
        run.text, run.font.bold = text, bold
    link = frame.add_paragraph().add_run()
    link.text, link.hyperlink.address = "Open the site", "https://example.com"
    table = slide.shapes.add_table(2, 2, Inches(1), Inches(4), Inches(4), Inches(1)).table
    table.cell(0, 0).text, table.cell(1, 1).text = "Name", "Total"
    group = slide.shapes.add_group_shape()
    group.shapes.add_textbox(Inches(5), Inches(1), Inches(1), Inches(1)).text_frame.text = "In a group"
    slide.notes_slide.notes_text_frame.text = "Speak slowly."
    return saved(presentation)


def build_odt() -> bytes:
    """A heading; a paragraph with a styled span, a link and a footnote; a table; a page header and footer."""
    document = odfdo.Document("text")
    document.insert_style(odfdo.Style("text", name="Strong", bold=True), automatic=True)
    document.body.append(odfdo.Header(1, "A heading"))
    paragraph = odfdo.Paragraph("Choose Save to keep the file.")
    paragraph.set_span("Strong", regex="Save")
    paragraph.set_link("https://example.com", regex="the file")
    paragraph.insert_note(after="keep", note_class="footnote", note_id="ftn1", citation="1", body="A note here.")
    document.body.append(paragraph)
    table = odfdo.Table("T", width=2, height=1)
    table.set_value((0, 0), "Cell one")
    table.set_value((1, 0), "Cell two")
    document.body.append(table)
    master = document.get_styles("master-page")[0]
    master.set_page_header(odfdo.Paragraph("Page header"))
    master.set_page_footer(odfdo.Paragraph("Page footer"))
    return saved(document)


@pytest.fixture(scope="module")
def documents():
    return {"docx": build_docx(), "pptx": build_pptx(), "odt": build_odt()}


FORMATS = {"docx": docx_format, "pptx": pptx_format, "odt": odt_format}


def assert_kept(source: bytes, result: bytes, changed: set[str]) -> None:
    """The result holds the source's members in order, each compressed alike; those not in `changed` are
    byte-identical, those in it are not."""
    before, after = zipfile.ZipFile(io.BytesIO(source)), zipfile.ZipFile(io.BytesIO(result))
    assert [(m.filename, m.compress_type) for m in after.infolist()] == [
        (m.filename, m.compress_type) for m in before.infolist()
    ]
    assert {name for name in before.namelist() if before.read(name) != after.read(name)} == changed


def test_docx_paragraphs_are_translated_whole_in_one_call_with_their_runs_carried(documents):
    translate = Recorder()
    result = docx_format.translate(documents["docx"], translate)
    [(texts, format)] = translate.calls
    assert format == "html" and result.translated == len(texts) == 8  # the picture's paragraph is not sent
    assert texts[0] == (
        'Click <span data-run="0">Save</span> or read <span data-run="1"><span data-run="2">the '
        'help page</span></span> now.<code data-run="3"></code>'
    )
    assert_kept(
        documents["docx"],
        result.data,
        {"word/document.xml", "word/header1.xml", "word/footer1.xml", "word/footnotes.xml"},
    )

    document = docx.Document(io.BytesIO(result.data))
    sentence = document.paragraphs[0]
    assert sentence.text == "«Click Save or read the help page now.»"
    assert [run.text for run in sentence.runs if run.bold] == ["Save"]
    [link] = sentence.hyperlinks
    assert (link.text, link.url, link.runs[0].underline) == ("the help page", "https://example.com/help", True)
    assert sentence._p.xpath("./w:r/w:footnoteReference")  # the note's reference is where the sentence put it
    assert sentence.runs[0]._r.t_lst[0].get("{http://www.w3.org/XML/1998/namespace}space") == "preserve"
    assert [cell.text for cell in document.tables[0].rows[0].cells] == ["«Name»", "«Size»"]
    section = document.sections[0]
    assert (section.header.paragraphs[0].text, section.footer.paragraphs[0].text) == ("«Header text»", "«Footer text»")
    assert 'Page <code data-run="0"></code>' in texts  # the field whole, its result (the number) included
    fields = section.footer.paragraphs[1]._p.xpath("./w:r/w:fldChar/@w:fldCharType | ./w:r/w:instrText/text()")
    assert (section.footer.paragraphs[1].text.strip(), fields) == ("«Page 1»", ["begin", " PAGE ", "separate", "end"])
    [box] = document.element.body.iter(f"{{{W}}}txbxContent")
    assert [text.text for text in box.iter(f"{{{W}}}t")] == ["«Text in a box.»"]
    assert document.inline_shapes[0].type is not None  # the picture is still there
    notes = document.part.part_related_by(docx.opc.constants.RELATIONSHIP_TYPE.FOOTNOTES).blob
    [note] = docx.oxml.parse_xml(notes).xpath('./w:footnote[@w:id="1"]', namespaces={"w": W})
    text = "".join(note.xpath(".//w:t/text()", namespaces={"w": W}))
    assert "«" in text and text.endswith("A note below.»") and note.xpath(".//w:footnoteRef", namespaces={"w": W})


def test_pptx_slides_and_notes_are_translated_with_their_runs_carried(documents):
    translate = Recorder()
    result = pptx_format.translate(documents["pptx"], translate)
    [(texts, format)] = translate.calls
    assert format == "html" and result.translated == len(texts) == 7
    assert 'Press <span data-run="0">Enter</span> to go on.' in texts
    assert_kept(documents["pptx"], result.data, {"ppt/slides/slide1.xml", "ppt/notesSlides/notesSlide1.xml"})

    slide = pptx.Presentation(io.BytesIO(result.data)).slides[0]
    title, box, table, group = slide.shapes
    assert title.text_frame.text == "«Quarterly results»"
    sentence, linked = box.text_frame.paragraphs
    assert [(run.text, run.font.bold) for run in sentence.runs] == [
        ("«Press ", None),
        ("Enter", True),
        (" to go on.»", None),
    ]
    assert (linked.text, linked.runs[0].hyperlink.address) == ("«Open the site»", "https://example.com")
    assert (table.table.cell(0, 0).text, table.table.cell(1, 1).text) == ("«Name»", "«Total»")
    assert group.shapes[0].text_frame.text == "«In a group»"
    assert slide.notes_slide.notes_text_frame.text == "«Speak slowly.»"


def test_odt_paragraphs_headings_tables_notes_headers_and_footers_are_translated(documents):
    translate = Recorder()
    result = odt_format.translate(documents["odt"], translate)
    [(texts, format)] = translate.calls
    assert format == "html" and result.translated == len(texts) == 7
    assert (
        'Choose <span data-run="0">Save</span> to keep<code data-run="1"></code> <span data-run="2">the file</span>.'
    ) in texts
    assert_kept(documents["odt"], result.data, {"content.xml", "styles.xml"})
    assert zipfile.ZipFile(io.BytesIO(result.data)).infolist()[0].filename == "mimetype"  # first and stored

    document = odfdo.Document(io.BytesIO(result.data))
    assert document.body.get_header().text == "«A heading»"
    sentence = document.body.get_paragraphs()[1]
    assert [span.text for span in sentence.get_spans()] == ["Save"]
    assert sentence.get_spans()[0].style == "Strong"
    [link] = sentence.get_links()
    assert (link.text, link.url) == ("the file", "https://example.com")
    [note] = sentence.get_notes()
    assert note.note_body == "«A note here.»"
    assert sentence.text_recursive.startswith("«Choose Save to keep")
    table = document.body.get_table(0)
    assert (table.get_value((0, 0)), table.get_value((1, 0))) == ("«Cell one»", "«Cell two»")
    master = document.get_styles("master-page")[0]
    assert (master.get_page_header().text_recursive.strip(), master.get_page_footer().text_recursive.strip()) == (
        "«Page header»",
        "«Page footer»",
    )


def test_a_reordered_translation_keeps_each_format_on_the_words_its_span_holds():
    document = docx.Document()
    paragraph = document.add_paragraph("Click ")
    paragraph.add_run("Save").bold = True
    paragraph.add_run(" now, please.")

    def german(texts, format):
        assert texts == ['Click <span data-run="0">Save</span> now, please.']
        return ['Bitte jetzt auf <span data-run="0">Speichern</span> klicken.']

    result = docx.Document(io.BytesIO(docx_format.translate(saved(document), german).data)).paragraphs[0]
    assert [(run.text, run.bold) for run in result.runs] == [
        ("Bitte jetzt auf ", None),
        ("Speichern", True),
        (" klicken.", None),
    ]


def test_a_code_the_translation_lost_is_kept_at_the_end(documents):
    result = docx_format.translate(documents["docx"], lambda texts, format: ["Verloren."] * len(texts))
    sentence = docx.Document(io.BytesIO(result.data)).paragraphs[0]
    assert sentence.text == "Verloren."
    assert sentence._p.xpath("./w:r/w:footnoteReference")


def rezipped(data: bytes, replace: dict[str, bytes | None] = {}, add: dict[str, bytes] = {}) -> bytes:
    """`data`'s zip with members replaced (or removed: None) and added."""
    source, out = zipfile.ZipFile(io.BytesIO(data)), io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as written:
        for name in source.namelist():
            if replace.get(name, b"") is not None:
                written.writestr(name, replace.get(name) or source.read(name))
        for name, member in add.items():
            written.writestr(name, member)
    return out.getvalue()


MAIN = {"docx": "word/document.xml", "pptx": "ppt/presentation.xml", "odt": "content.xml"}
ENTITIES = (
    b'<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>\n'
    b"<document>&lol2;</document>"
)
BROKEN = {
    "not a zip": lambda data, main: b"Hello, this is plain text.",
    "truncated": lambda data, main: data[: len(data) // 2],
    "no main part": lambda data, main: rezipped(data, {main: None}),
    "zip bomb": lambda data, main: rezipped(data, add={"bomb.bin": bytes(4 * 2**20)}),
    "entity declaration": lambda data, main: rezipped(data, {main: ENTITIES}),
    "not XML": lambda data, main: rezipped(data, {main: b"<document><unclosed></document>"}),
}


@pytest.mark.parametrize("format", FORMATS)
@pytest.mark.parametrize("breakage", BROKEN)
def test_a_broken_file_is_refused_naming_its_format(documents, format, breakage):
    main = (
        "ppt/slides/slide1.xml" if format == "pptx" and breakage in ("entity declaration", "not XML") else MAIN[format]
    )  # pptx's main part is not one it parses: break a slide
    broken = BROKEN[breakage](documents[format], main)
    with pytest.raises(FormatError, match=f"as {format}:") as refused:
        FORMATS[format].translate(broken, Recorder())
    assert refused.value.format == format


@pytest.mark.parametrize(
    "limit, value, reason", [("MAX_MEMBERS", 3, "zip members"), ("MAX_UNCOMPRESSED", 1000, "bytes uncompressed")]
)
def test_a_package_over_a_limit_is_refused(documents, monkeypatch, limit, value, reason):
    monkeypatch.setattr(packages, limit, value)
    with pytest.raises(FormatError, match=reason):
        docx_format.translate(documents["docx"], Recorder())


def test_another_opendocument_kind_is_refused_as_odt(documents):
    spreadsheet = rezipped(documents["odt"], {"mimetype": b"application/vnd.oasis.opendocument.spreadsheet"})
    with pytest.raises(FormatError, match="not a text document"):
        odt_format.translate(spreadsheet, Recorder())


def test_a_document_without_text_is_written_back_unchanged_without_a_call():
    document = docx.Document()
    document.add_paragraph()
    data = saved(document)
    translate = Recorder()
    result = docx_format.translate(data, translate)
    assert (translate.calls, result.translated) == ([], 0)
    assert_kept(data, result.data, set())
