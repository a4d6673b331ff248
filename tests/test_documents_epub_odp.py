""".epub and .odp translated in place (transformer_mt.documents.epub and .odp over .packages): a book and a deck
built here with zipfile, translated by tests/test_documents_office.py's fake that marks what it translated, and
read back; every member the translation did not change byte-identical; broken packages and zip bombs refused; both
taken by /translate_file and listed in /frontend/settings. The command, Python and the server write the same bytes
for both: tests/test_documents_roundtrip.py."""

import io
import zipfile

import pytest
from lxml import etree

from transformer_mt.documents import FormatError, packages
from transformer_mt.documents import epub as epub_format
from transformer_mt.documents import odp as odp_format

from .test_documents_office import BROKEN, ENTITIES, Recorder, assert_kept, png, rezipped
from .utils import require


odfdo = require("odfdo", "the .odp tests read presentations back with odfdo: pip install -e '.[files]'")
require("fastapi", "the server needs the [serve] extra: pip install -e '.[serve]'")
from fastapi.testclient import TestClient  # noqa: E402

from transformer_mt.serving.uploads import FileStore  # noqa: E402

from .test_serving_files import app_of, upload  # noqa: E402


CONTAINER = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<container version="1.0" '
    b'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
    b'<rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>'
)
OPF = b"""<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">
<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:identifier id="id">urn:uuid:1</dc:identifier>\
<dc:title>The Red Door</dc:title><dc:creator>Ann Author</dc:creator><dc:language>en</dc:language>\
<dc:description>A short book.</dc:description></metadata>
<manifest><item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>\
<item id="c1" href="Text/chapter%201.xhtml" media-type="application/xhtml+xml"/>\
<item id="extra" href="Text/extra.xhtml" media-type="application/xhtml+xml"/>\
<item id="css" href="style.css" media-type="text/css"/><item id="cover" href="cover.png" media-type="image/png"/>\
<item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/></manifest>
<spine toc="ncx"><itemref idref="c1"/></spine></package>"""
CHAPTER = b"""<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE html>
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops" xml:lang="en">
<head><title>Chapter One</title><link rel="stylesheet" href="../style.css"/></head>
<body>
  <h1 id="c1">Chapter One</h1>
  <p>Open the <em>red</em> door.<span epub:type="pagebreak" id="p2"/> Then <a href="#n1">close it</a>.</p>
  <div>Loose text<p>Inner paragraph.</p>after it</div>
  <p>Line one<br/>line two</p>
  <pre>keep()</pre>
  <p translate="no">Kept as written.</p>
  <p>Run <code>make</code> first.<!-- a note to the editor --></p>
  <p><img src="../cover.png" alt="A door"/></p>
</body>
</html>
"""
NAV = b"""<?xml version="1.0" encoding="UTF-8"?>
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops"><head><title>Contents</title>\
</head><body><nav epub:type="toc"><ol><li><a href="Text/chapter%201.xhtml">Chapter One</a><ol><li>\
<a href="Text/chapter%201.xhtml#c1">The door</a></li></ol></li></ol></nav></body></html>"""
NCX = b"""<?xml version="1.0" encoding="UTF-8"?>
<ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1"><head/><docTitle><text>The Red Door</text>\
</docTitle><docAuthor><text>Ann Author</text></docAuthor><navMap><navPoint id="n1" playOrder="1"><navLabel>\
<text>Chapter One</text></navLabel><content src="Text/chapter%201.xhtml"/></navPoint></navMap></ncx>"""

TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
ODF = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
    'xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" '
    'xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" '
    'xmlns:xlink="http://www.w3.org/1999/xlink" '
    'xmlns:dc="http://purl.org/dc/elements/1.1/" office:version="1.3"'
)
SLIDES = f"""<?xml version="1.0" encoding="UTF-8"?>
<office:document-content {ODF}><office:body><office:presentation>\
<presentation:footer-decl presentation:name="ftr1">Company confidential</presentation:footer-decl>\
<draw:page draw:name="page1" draw:master-page-name="Default" presentation:use-footer-name="ftr1">\
<draw:frame presentation:class="title"><draw:text-box><text:p>Quarterly results</text:p></draw:text-box></draw:frame>\
<draw:frame><draw:text-box><text:list><text:list-item><text:p>Press <text:span text:style-name="T1">Enter</text:span> \
to go on.</text:p></text:list-item><text:list-item><text:p><text:a xlink:href="https://example.com">Open the site\
</text:a></text:p></text:list-item></text:list></draw:text-box></draw:frame>\
<draw:frame><draw:image xlink:href="Pictures/door.png"/></draw:frame>\
<office:annotation><dc:creator>Ann</dc:creator><text:p>Check the numbers.</text:p></office:annotation>\
<presentation:notes><draw:frame presentation:class="notes"><draw:text-box><text:p>Speak slowly.</text:p>\
</draw:text-box></draw:frame></presentation:notes></draw:page></office:presentation></office:body>\
</office:document-content>"""
MASTERS = f"""<?xml version="1.0" encoding="UTF-8"?>
<office:document-styles {ODF}><office:master-styles><style:master-page style:name="Default">\
<draw:frame presentation:class="title" presentation:placeholder="true"><draw:text-box><text:p>Click to add Title\
</text:p></draw:text-box></draw:frame><draw:frame><draw:text-box><text:p>Example Inc.</text:p></draw:text-box>\
</draw:frame><draw:frame presentation:class="page-number"><draw:text-box><text:p><text:page-number>&lt;number&gt;\
</text:page-number></text:p></draw:text-box></draw:frame></style:master-page></office:master-styles>\
</office:document-styles>"""
MANIFEST = b"""<?xml version="1.0" encoding="UTF-8"?>
<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.3">\
<manifest:file-entry manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.presentation"/>\
<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>\
<manifest:file-entry manifest:full-path="styles.xml" manifest:media-type="text/xml"/>\
<manifest:file-entry manifest:full-path="Pictures/door.png" manifest:media-type="image/png"/></manifest:manifest>"""


MIMETYPE = b"application/epub+zip"


def package(mimetype: bytes, members: dict[str, bytes]) -> bytes:
    """A zip as the format asks: `mimetype` first and stored, the members deflated."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as written:
        written.writestr(zipfile.ZipInfo("mimetype", (2026, 1, 1, 0, 0, 0)), mimetype, zipfile.ZIP_STORED)
        for name, data in members.items():
            written.writestr(name, data)
    return out.getvalue()


def build_epub() -> bytes:
    """An EPUB 3 book with an EPUB 2 NCX: one chapter in the spine, one XHTML document outside it, a nav, a
    stylesheet and a picture."""
    return package(
        MIMETYPE,
        {
            "META-INF/container.xml": CONTAINER,
            "OEBPS/content.opf": OPF,
            "OEBPS/nav.xhtml": NAV,
            "OEBPS/Text/chapter 1.xhtml": CHAPTER,
            "OEBPS/Text/extra.xhtml": CHAPTER,
            "OEBPS/toc.ncx": NCX,
            "OEBPS/style.css": b"p { text-indent: 1em }\n",
            "OEBPS/cover.png": png(),
        },
    )


def build_odp() -> bytes:
    """A slide with a title, a list with a styled span and a link, a picture, a comment, notes and a declared
    footer; a master page with a placeholder, a text box and a page-number field."""
    return package(
        b"application/vnd.oasis.opendocument.presentation",
        {
            "content.xml": SLIDES.encode(),
            "styles.xml": MASTERS.encode(),
            "Pictures/door.png": png(),
            "META-INF/manifest.xml": MANIFEST,
        },
    )


@pytest.fixture(scope="module")
def documents():
    return {"epub": build_epub(), "odp": build_odp()}


FORMATS = {"epub": epub_format, "odp": odp_format}
EPUB_CHANGED = ("OEBPS/content.opf", "OEBPS/nav.xhtml", "OEBPS/Text/chapter 1.xhtml", "OEBPS/toc.ncx")
MAIN = {"epub": "META-INF/container.xml", "odp": "content.xml"}


def member(data: bytes, name: str) -> bytes:
    return zipfile.ZipFile(io.BytesIO(data)).read(name)


def read_epub(data: bytes) -> dict:
    """The book opened again: a zip whose first member is `mimetype`, stored, and whose XML members are all
    well-formed (parsed, by name)."""
    book = zipfile.ZipFile(io.BytesIO(data))
    first = book.infolist()[0]
    assert (first.filename, first.compress_type, book.read(first)) == ("mimetype", zipfile.ZIP_STORED, MIMETYPE)
    return {
        name: etree.fromstring(book.read(name))
        for name in book.namelist()
        if name.endswith((".xhtml", ".opf", ".ncx", ".xml"))
    }


def test_epub_spine_nav_ncx_title_and_description_are_translated_with_their_markup_kept(documents):
    translate = Recorder()
    result = epub_format.translate(documents["epub"], translate)
    [(texts, format)] = translate.calls
    assert format == "html" and result.translated == len(texts) == 16
    assert texts == [
        "The Red Door",
        "A short book.",
        "Contents",
        '<span data-run="0">Chapter One</span>',
        '<span data-run="0">The door</span>',
        "Chapter One",
        "Chapter One",
        'Open the <span data-run="0">red</span> door.<code data-run="1"></code> Then <span data-run="2">close '
        "it</span>.",
        "Loose text",
        "Inner paragraph.",
        "after it",
        "Line one",
        "line two",
        'Run <code data-run="0"></code> first.<code data-run="1"></code>',
        "The Red Door",
        "Chapter One",
    ]
    # the CSS, the picture, the container, the document outside the spine: byte for byte
    assert_kept(documents["epub"], result.data, set(EPUB_CHANGED))
    assert set(read_epub(result.data)) == {"META-INF/container.xml", "OEBPS/Text/extra.xhtml", *EPUB_CHANGED}
    chapter = member(result.data, "OEBPS/Text/chapter 1.xhtml").decode()
    assert chapter == (
        CHAPTER.decode()
        .replace('<?xml version="1.0" encoding="UTF-8"?>', "<?xml version='1.0' encoding='UTF-8' standalone='no'?>")
        .replace("<title>Chapter One", "<title>«Chapter One»")
        .replace('"c1">Chapter One', '"c1">«Chapter One»')
        .replace("<p>Open", "<p>«Open")
        .replace("it</a>.</p>", "it</a>.»</p>")
        .replace("Loose text", "«Loose text»")
        .replace("Inner paragraph.", "«Inner paragraph.»")
        .replace("after it", "«after it»")
        .replace("Line one<br/>line two", "«Line one»<br/>«line two»")
        .replace(
            "Run <code>make</code> first.<!-- a note to the editor -->",
            "«Run <code>make</code> first.<!-- a note to the editor -->»",
        )
        .removesuffix("\n")
    )
    nav = member(result.data, "OEBPS/nav.xhtml").decode()
    assert nav == (
        NAV.decode()
        .replace('<?xml version="1.0" encoding="UTF-8"?>', "<?xml version='1.0' encoding='UTF-8' standalone='no'?>")
        .replace("<title>Contents", "<title>«Contents»")
        .replace(
            '<a href="Text/chapter%201.xhtml">Chapter One</a>', '«<a href="Text/chapter%201.xhtml">Chapter One</a>»'
        )
        .replace(
            '<a href="Text/chapter%201.xhtml#c1">The door</a>', '«<a href="Text/chapter%201.xhtml#c1">The door</a>»'
        )
    )
    ncx = etree.fromstring(member(result.data, "OEBPS/toc.ncx"))
    assert [text.text for text in ncx.iter("{http://www.daisy.org/z3986/2005/ncx/}text")] == [
        "«The Red Door»",
        "Ann Author",
        "«Chapter One»",
    ]
    metadata = etree.fromstring(member(result.data, "OEBPS/content.opf"))[0]
    assert [(etree.QName(element).localname, element.text) for element in metadata] == [
        ("identifier", "urn:uuid:1"),
        ("title", "«The Red Door»"),
        ("creator", "Ann Author"),
        ("language", "en"),  # translate_texts does not know the target language
        ("description", "«A short book.»"),
    ]


def test_an_xhtml_entity_no_dtd_defines_is_its_character_and_an_unknown_one_a_code():
    doctype = b'<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.1//EN" "http://www.w3.org/TR/xhtml11/DTD/xhtml11.dtd">'
    chapter = CHAPTER.replace(b"<!DOCTYPE html>", doctype).replace(b"the <em>red</em> door.", b"the&nbsp;door &x;.")
    translate = Recorder()
    result = epub_format.translate(rezipped(build_epub(), {"OEBPS/Text/chapter 1.xhtml": chapter}), translate)
    assert translate.calls[0][0][7] == (
        'Open the\xa0door <code data-run="0"></code>.<code data-run="1"></code> Then <span data-run="2">close '
        "it</span>."
    )
    written = member(result.data, "OEBPS/Text/chapter 1.xhtml")
    assert doctype in written and "<p>«Open the door &x;.".encode() in written


def test_odp_slides_notes_footer_and_master_text_are_translated_with_their_spans_carried(documents):
    translate = Recorder()
    result = odp_format.translate(documents["odp"], translate)
    [(texts, format)] = translate.calls
    assert format == "html" and result.translated == len(texts) == 6
    assert texts == [
        "Company confidential",
        "Quarterly results",
        'Press <span data-run="0">Enter</span> to go on.',
        '<span data-run="0">Open the site</span>',
        "Speak slowly.",
        "Example Inc.",
    ]
    assert_kept(documents["odp"], result.data, {"content.xml", "styles.xml"})
    first = zipfile.ZipFile(io.BytesIO(result.data)).infolist()[0]
    assert (first.filename, first.compress_type) == ("mimetype", zipfile.ZIP_STORED)

    document = odfdo.Document(io.BytesIO(result.data))  # it opens
    assert document.mimetype == "application/vnd.oasis.opendocument.presentation"
    [slide] = document.body.get_draw_pages()
    content = etree.fromstring(member(result.data, "content.xml"))
    assert ["".join(paragraph.itertext()) for paragraph in content.iter(f"{{{TEXT}}}p")] == [
        "«Quarterly results»",
        "«Press Enter to go on.»",
        "«Open the site»",
        "Check the numbers.",  # a comment
        "«Speak slowly.»",
    ]
    [span] = slide.get_spans()
    assert (span.text, span.style) == ("Enter", "T1")
    [link] = document.body.get_links()
    assert (link.text, link.url) == ("Open the site", "https://example.com")
    assert document.body.children[0].text == "«Company confidential»"
    master = etree.fromstring(member(result.data, "styles.xml"))
    assert ["".join(paragraph.itertext()) for paragraph in master.iter(f"{{{TEXT}}}p")] == [
        "Click to add Title",  # a placeholder's prompt
        "«Example Inc.»",
        "<number>",  # a field
    ]


@pytest.mark.parametrize("format", FORMATS)
@pytest.mark.parametrize("breakage", BROKEN)
def test_a_broken_file_is_refused_naming_its_format(documents, format, breakage):
    with pytest.raises(FormatError, match=f"as {format}:") as refused:
        FORMATS[format].translate(BROKEN[breakage](documents[format], MAIN[format]), Recorder())
    assert refused.value.format == format


@pytest.mark.parametrize("format", FORMATS)
@pytest.mark.parametrize(
    "limit, value, reason",
    [("MAX_MEMBERS", 3, "zip members, over the limit of 3"), ("MAX_UNCOMPRESSED", 1000, "bytes uncompressed, over")],
)
def test_a_package_over_a_limit_is_refused(documents, monkeypatch, format, limit, value, reason):
    monkeypatch.setattr(packages, limit, value)
    with pytest.raises(FormatError, match=f"as {format}: \\d+ {reason}"):
        FORMATS[format].translate(documents[format], Recorder())


@pytest.mark.parametrize(
    "format, replace, reason",
    [
        (
            "odp",
            {"mimetype": b"application/vnd.oasis.opendocument.text"},
            "of type 'application/vnd.oasis.opendocument.text', not a presentation",
        ),
        ("epub", {"mimetype": b"application/zip"}, "of type 'application/zip', not an EPUB"),
        ("epub", {"OEBPS/nav.xhtml": None}, "OEBPS/content.opf lists OEBPS/nav.xhtml, which is not in the package"),
        ("epub", {"OEBPS/content.opf": None}, "no package document OEBPS/content.opf in the package"),
        ("epub", {"OEBPS/content.opf": OPF.replace(b'idref="c1"', b'idref="c9"')}, "itemref 'c9' is in no manifest"),
        ("epub", {"META-INF/container.xml": CONTAINER.replace(b"rootfile ", b"other ")}, "names no package document"),
        ("epub", {"OEBPS/Text/chapter 1.xhtml": ENTITIES}, "OEBPS/Text/chapter 1.xhtml declares XML entities"),
    ],
)
def test_a_package_of_another_kind_or_with_a_broken_manifest_is_refused(documents, format, replace, reason):
    with pytest.raises(FormatError, match=f"as {format}: .*{reason}"):
        FORMATS[format].translate(rezipped(documents[format], replace), Recorder())


def test_the_server_takes_both_and_lists_them(documents, tmp_path):
    with TestClient(app_of(FileStore(str(tmp_path)))) as client:
        listed = client.get("/frontend/settings").json()["supportedFilesFormat"]
        assert {".epub", ".odp"} <= set(listed)
        downloads = {}
        for name, format in (("book.epub", "epub"), ("deck.odp", "odp")):
            answer = upload(client, name, documents[format])
            assert answer.status_code == 200, answer.text
            downloads[format] = client.get(answer.json()["translatedFileUrl"]).content
    assert_kept(documents["epub"], downloads["epub"], set(EPUB_CHANGED))
    assert_kept(documents["odp"], downloads["odp"], {"content.xml", "styles.xml"})
    assert b'<h1 id="c1">\xc2\xabChapter One\xc2\xbb</h1>' in member(downloads["epub"], "OEBPS/Text/chapter 1.xhtml")
    assert "<text:p>«Speak slowly.»</text:p>".encode() in member(downloads["odp"], "content.xml")
