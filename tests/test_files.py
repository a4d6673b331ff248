"""Files translated in their own format: .po through polib, XLIFF 1.2 and 2.0 through lxml, HTML through the
server's markup handling; entries already translated kept, new ones marked for review, placeholders checked."""

import re

import pytest

from transformer_mt.documents.files import holds_markup, placeholders_kept, translate_document, translate_file
from transformer_mt.text.markup import HtmlDocuments

from .utils import require, save_copy_model


polib = require("polib", "the .po format needs polib: pip install -e '.[files]'")

PO = r"""# German translation of a small application.
msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\n"
"Plural-Forms: nplurals=2; plural=(n != 1);\n"

#: app.py:10
msgid "Open the file."
msgstr ""

#: app.py:11
msgid "Close the window."
msgstr "Schließen Sie das Fenster."

#: app.py:12
msgid "One file was deleted."
msgid_plural "%d files were deleted."
msgstr[0] ""
msgstr[1] ""

#: app.py:13
#, python-format
msgid "Hello %(name)s, you have %s messages."
msgstr ""

#~ msgid "Old message."
#~ msgstr "Alte Nachricht."
"""

XLIFF_12 = """<?xml version="1.0" encoding="UTF-8"?>
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2">
  <file source-language="en" target-language="de" datatype="plaintext" original="app">
    <body>
      <trans-unit id="1"><source>Open the file.</source></trans-unit>
      <trans-unit id="2"><source>Close the window.</source>
        <target state="final">Schließen Sie das Fenster.</target></trans-unit>
      <trans-unit id="3"><source>Click <g id="b">Save</g> now.</source><target/></trans-unit>
    </body>
  </file>
</xliff>
"""

XLIFF_20 = """<?xml version="1.0" encoding="UTF-8"?>
<xliff xmlns="urn:oasis:names:tc:xliff:document:2.0" version="2.0" srcLang="en" trgLang="de">
  <file id="f1">
    <unit id="u1"><segment><source>Open the file.</source></segment></unit>
    <unit id="u2"><segment state="final"><source>Close it.</source><target>Schließen.</target></segment></unit>
  </file>
</xliff>
"""


def mark(texts, format="text"):
    """A translation that shows what was translated: «text»; HTML's runs of text each marked whole, its words
    aligned one to one, as a model keeping the word order would."""
    if format == "text":
        return [f"«{text}»" for text in texts]
    documents = HtmlDocuments(texts)
    return documents.fill(
        [f"«{text}»" for text in documents.texts],
        [[(i, i) for i in range(len(text.split()))] for text in documents.texts],
    )


def test_po_entries_are_translated_plurals_filled_and_kept_ones_kept(tmp_path):
    (tmp_path / "app.po").write_text(PO, encoding="utf-8")
    report = translate_file(str(tmp_path / "app.po"), str(tmp_path / "out.po"), mark)
    assert (report.format, report.translated, report.kept) == ("po", 3, 1)
    catalogue = polib.pofile(str(tmp_path / "out.po"))
    entries = {entry.msgid: entry for entry in catalogue if not entry.obsolete}
    assert entries["Open the file."].msgstr == "«Open the file.»" and "fuzzy" in entries["Open the file."].flags
    assert entries["Close the window."].msgstr == "Schließen Sie das Fenster."  # kept
    assert "fuzzy" not in entries["Close the window."].flags
    plural = entries["One file was deleted."]
    assert plural.msgstr_plural == {0: "«One file was deleted.»", 1: "«%d files were deleted.»"}
    assert entries["Hello %(name)s, you have %s messages."].flags == ["python-format", "fuzzy"]
    assert [entry.msgstr for entry in catalogue.obsolete_entries()] == ["Alte Nachricht."]
    assert catalogue.metadata["Plural-Forms"] == "nplurals=2; plural=(n != 1);"
    overwritten = translate_file(str(tmp_path / "app.po"), str(tmp_path / "all.po"), mark, overwrite=True)
    assert overwritten.translated == 4 and overwritten.kept == 0


LINES = r"""msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\n"

msgid ""
"Line one of a long message\n"
"  Line two: click %s to continue.\n"
msgstr ""

msgid "\n"
msgstr ""

msgid " "
msgstr ""

msgid "Name:\t%s"
msgstr ""
"""


def po_through(tmp_path, po: str, translate) -> tuple[list[str], list[str]]:
    """The texts `translate` was given for the .po `po`, and the msgstrs it wrote."""
    (tmp_path / "in.po").write_text(po, encoding="utf-8")
    seen = []

    def recorded(texts, format="text"):
        seen.extend(texts)
        return translate(texts, format)

    translate_file(str(tmp_path / "in.po"), str(tmp_path / "out.po"), recorded)
    return seen, [entry.msgstr for entry in polib.pofile(str(tmp_path / "out.po"))]


def test_a_po_message_is_translated_line_by_line_column_by_column_and_a_blank_one_stays_blank(tmp_path):
    seen, written = po_through(tmp_path, LINES, mark)
    assert seen == ["Line one of a long message", "Line two: click %s to continue.", "Name:", "%s"]  # one by one
    assert written == [
        "«Line one of a long message»\n  «Line two: click %s to continue.»\n",
        "\n",  # not "\n\n": a blank message has nothing to translate
        " ",
        "«Name:»\t«%s»",  # a tab is a column, kept
    ]


ACCELERATORS = r"""msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\n"

msgid "&Save Changes"
msgstr ""

msgid "Save &As..."
msgstr ""

msgid "_Open File"
msgstr ""

msgid "Tom & Jerry and file_name"
msgstr ""

msgid "&File and &Edit"
msgstr ""
"""


def test_a_po_messages_keyboard_accelerator_is_taken_out_and_put_back(tmp_path):
    table = {"Save Changes": "Änderungen speichern", "Save As...": "Speichern unter...", "Open File": "Datei"}
    seen, written = po_through(tmp_path, ACCELERATORS, lambda texts, format: [table.get(t, t) for t in texts])
    assert seen == ["Save Changes", "Save As...", "Open File", "Tom & Jerry and file_name", "&File and &Edit"]
    assert written == [
        "Änderungen &speichern",  # before the same letter, where it begins a word
        "&Speichern unter...",  # no "a": the first letter
        "_Datei",
        "Tom & Jerry and file_name",  # no marker
        "&File and &Edit",  # two: left as they are
    ]


def test_lost_placeholders_are_named_and_marked(tmp_path):
    (tmp_path / "app.po").write_text(PO, encoding="utf-8")
    report = translate_file(
        str(tmp_path / "app.po"),
        str(tmp_path / "out.po"),
        lambda texts, format: [text.replace("%(name)s", "Name").replace("%d", "viele") for text in texts],
    )
    assert sorted(report.placeholders_differ) == ["Hello %(name)s, you have %s messages.", "One file was deleted."]
    entry = polib.pofile(str(tmp_path / "out.po")).find("Hello %(name)s, you have %s messages.")
    assert "placeholders or tags differ" in entry.tcomment and "fuzzy" in entry.flags
    assert placeholders_kept("Delete {0} of {count}?", "{count}: {0} löschen?")
    assert not placeholders_kept("Press <b>OK</b>.", "Drücken Sie OK.")


def test_xliff_1_2_and_2_0_get_targets_and_states(tmp_path):
    from lxml import etree

    (tmp_path / "app.xlf").write_text(XLIFF_12, encoding="utf-8")
    report = translate_file(str(tmp_path / "app.xlf"), str(tmp_path / "out.xlf"), mark)
    assert (report.translated, report.kept) == (2, 1)
    ns = {"x": "urn:oasis:names:tc:xliff:document:1.2"}
    root = etree.parse(str(tmp_path / "out.xlf")).getroot()
    targets = {unit.get("id"): unit.find("x:target", ns) for unit in root.iterfind(".//x:trans-unit", ns)}
    assert targets["1"].text == "«Open the file.»" and targets["1"].get("state") == "needs-review-translation"
    assert targets["2"].text == "Schließen Sie das Fenster." and targets["2"].get("state") == "final"
    assert etree.tostring(targets["3"], encoding="unicode").startswith(
        '<target xmlns="urn:oasis:names:tc:xliff:document:1.2" state="needs-review-translation">«Click <g id="b">'
        "Save</g> now.»</target>"
    )  # one sentence, the inline element around its word

    (tmp_path / "app2.xlf").write_text(XLIFF_20, encoding="utf-8")
    report = translate_file(str(tmp_path / "app2.xlf"), str(tmp_path / "out2.xlf"), mark)
    assert (report.translated, report.kept) == (1, 1)
    ns = {"x": "urn:oasis:names:tc:xliff:document:2.0"}
    segments = etree.parse(str(tmp_path / "out2.xlf")).getroot().findall(".//x:segment", ns)
    assert (segments[0].get("state"), segments[0].get("subState")) == ("initial", "transformer-mt:needs-review")
    assert segments[0].find("x:target", ns).text == "«Open the file.»"
    assert segments[1].find("x:target", ns).text == "Schließen."


def test_what_is_not_text_stays_untranslated(tmp_path):
    from lxml import etree

    xliff = XLIFF_12.replace(
        '<trans-unit id="1"><source>Open the file.</source></trans-unit>',
        '<trans-unit id="1"><source>Click <bpt id="1">&lt;b&gt;</bpt>here<ept id="1">&lt;/b&gt;'
        "</ept><!-- a note --></source></trans-unit>"
        '<trans-unit id="4" translate="no"><source>Mastodon</source></trans-unit>',
    )
    (tmp_path / "app.xlf").write_text(xliff, encoding="utf-8")
    translate_file(str(tmp_path / "app.xlf"), str(tmp_path / "out.xlf"), mark)
    ns = {"x": "urn:oasis:names:tc:xliff:document:1.2"}
    units = {unit.get("id"): unit for unit in etree.parse(str(tmp_path / "out.xlf")).iterfind(".//x:trans-unit", ns)}
    target = etree.tostring(units["1"].find("x:target", ns), encoding="unicode")
    assert '«Click <bpt id="1">&lt;b&gt;</bpt>here<ept id="1">&lt;/b&gt;</ept><!-- a note -->»' in target
    assert units["4"].find("x:target", ns) is None  # translate="no"
    (tmp_path / "app.po").write_text(PO.replace('msgid "Open the file."', 'msgid "Name: "'), encoding="utf-8")
    translate_file(str(tmp_path / "app.po"), str(tmp_path / "out.po"), mark)
    assert polib.pofile(str(tmp_path / "out.po")).find("Name: ").msgstr == "«Name:» "  # the program's space kept
    (tmp_path / "bom.html").write_bytes("\ufeff<p>Hello</p>".encode("utf-8"))
    translate_file(str(tmp_path / "bom.html"), str(tmp_path / "bom.out.html"), mark)
    assert (tmp_path / "bom.out.html").read_text(encoding="utf-8") == "<p>«Hello»</p>"


def test_html_keeps_its_markup(tmp_path):
    (tmp_path / "page.html").write_text(
        "<html><head><title>Help</title><style>p {color: red}</style></head>"
        '<body><p class="x">Open <b>the file</b>.</p><p translate="no">Name</p>'
        """<p>See <a title="Notes" href='/n?a=1&amp;b=2'>the notes</a>.</p>"""
        "</body></html>",
        encoding="utf-8",
    )
    report = translate_file(str(tmp_path / "page.html"), str(tmp_path / "out.html"), mark)
    assert report.translated == 3  # the title and the paragraphs, each one run of text
    assert (tmp_path / "out.html").read_text(encoding="utf-8") == (
        '<html><head><title>«Help»</title><style>p {color: red}</style></head><body><p class="x">«Open '
        '<b>the file</b>.»</p><p translate="no">Name</p>'
        """<p>«See <a title="Notes" href='/n?a=1&amp;b=2'>the notes</a>.»</p></body></html>"""
    )  # tags as written


def test_translate_py_and_python_translate_a_po_file_with_the_model(tmp_path, capsys):
    from transformer_mt.scripts import translate as translate_script

    model, tokenizer = save_copy_model(tmp_path / "model", generation={})  # the generation config as trained
    (tmp_path / "app.po").write_text(PO, encoding="utf-8")
    translate_script.main(
        [
            "--model",
            str(tmp_path / "model"),
            "--input",
            str(tmp_path / "app.po"),
            "--output",
            str(tmp_path / "out.po"),
            "--engine",
            "transformers",
            "--no_progress",
        ]
    )
    assert "app.po -> " in capsys.readouterr().err
    report = translate_document(model, tokenizer, str(tmp_path / "app.po"), str(tmp_path / "python.po"))
    assert report.translated == 3
    assert (tmp_path / "out.po").read_text(encoding="utf-8") == (tmp_path / "python.po").read_text(encoding="utf-8")
    opened = polib.pofile(str(tmp_path / "out.po")).find("Open the file.").msgstr
    assert opened and opened != "«Open the file.»"
    with pytest.raises(SystemExit):
        translate_script.main(["--model", str(tmp_path / "model"), "--input", str(tmp_path / "app.po")])
    assert "is a po file: give --output" in capsys.readouterr().err


def test_a_lost_url_or_number_marks_the_entry_too(tmp_path):
    source = "See https://example.org for 2.5 GB."
    (tmp_path / "app.po").write_text(PO.replace('msgid "Open the file."', f'msgid "{source}"'), encoding="utf-8")
    report = translate_file(
        str(tmp_path / "app.po"),
        str(tmp_path / "out.po"),
        lambda texts, format: [text.replace(" https://example.org", "").replace("2.5", "2,5") for text in texts],
    )
    assert report.placeholders_differ == ["See https://example.org for 2.5 GB."]  # 2,5: the same digits, kept
    entry = polib.pofile(str(tmp_path / "out.po")).find("See https://example.org for 2.5 GB.")
    assert "lost a URL, path or number" in entry.tcomment and "fuzzy" in entry.flags


WORDS = {
    "View": "Siehe",
    "release": "Versions",
    "notes": "hinweise",
    "for": "für",
    "target": "Ziel",
    "noopener": "Noopener",
}


def germanise(texts, format="text"):
    """A translation word by word through WORDS, as a model would make it: as text, the words of a tag's attributes
    too (`target="_blank"` -> `Ziel="_blank"`); as HTML, only the text's, its words aligned one to one."""

    def words(text):
        return " ".join(WORDS.get(word, word) for word in text.split(" "))

    if format == "text":
        return [re.sub(r"\w+", lambda match: WORDS.get(match[0], match[0]), text) for text in texts]
    documents = HtmlDocuments(texts)
    return documents.fill(
        [words(text) for text in documents.texts],
        [[(i, i) for i in range(len(text.split()))] for text in documents.texts],
    )


def test_a_po_message_with_attributes_is_html_and_its_tags_come_back_as_written(tmp_path):
    link = """<a href='https://example.org/?a=1&amp;b=2' target="_blank" rel="noopener">"""
    message = f"View {link}release notes</a> for Django %(version)s"
    (tmp_path / "app.po").write_text(
        PO.replace('msgid "Open the file."', "msgid " + polib.escape(message).join('""')), encoding="utf-8"
    )
    report = translate_file(str(tmp_path / "app.po"), str(tmp_path / "out.po"), germanise)
    entry = polib.pofile(str(tmp_path / "out.po")).find(message)
    assert entry.msgstr == f"Siehe {link}Versions hinweise</a> für Django %(version)s"
    assert report.placeholders_differ == [] and not entry.tcomment


@pytest.mark.parametrize(
    "text, markup",
    [
        ("""<a href='https://x/?a=1&amp;b=2' target="_blank" rel="noopener">notes</a> for %s""", True),
        ("<b>%s</b> saved, <i class=x>twice</i>", True),
        ("Usage: translate <file>", False),  # not an HTML element
        ("<b>Bold and never closed", False),
        ("Closed and never opened</b>", False),
        ("<b>crossed <i>over</b></i>", False),
        ("No markup at all", False),
    ],
)
def test_holds_markup_reads_the_structure_not_beautifulsoups_writing(text, markup):
    assert holds_markup(text) is markup
