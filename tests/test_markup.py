"""Inline markup carried through whole sentences (text.inline, text.markup): each tag put back
exactly once around the translation of its words, by a given word alignment, in the order the translation gives;
verbatim elements kept as they are; the fallbacks counted. Through a real model, on both engines: the server's
html format, an .html file, an XLIFF unit with inline codes and a .po message with markup."""

import os

import pytest
from lxml import etree

from transformer_mt.text.inline import POINT, VERBATIM, WRAP, Inline, place

from .utils import REPO, require


bs4 = require("bs4", "HTML needs BeautifulSoup: pip install -e '.[serve]'")
from transformer_mt.text.markup import HtmlDocuments, nest  # noqa: E402


def fill(html: str, translation: str, alignment: list[tuple[int, int]], own: dict | None = None) -> str:
    documents = HtmlDocuments([html])
    assert len(documents.texts) == 1
    return documents.fill([translation], [alignment], own)[0]


def test_each_tag_goes_around_its_words_translation_in_the_order_the_translation_gives():
    html = "<p>Click <b>Save</b> to <i>keep</i> it.</p>"
    assert HtmlDocuments([html]).texts == ["Click Save to keep it."]
    # "Um es zu behalten, klicken Sie Speichern.": the two tags change places, the comma stays outside
    alignment = [(0, 4), (1, 6), (2, 2), (3, 3), (4, 1)]
    assert fill(html, "Um es zu behalten, klicken Sie Speichern.", alignment) == (
        "<p>Um es zu <i>behalten</i>, klicken Sie <b>Speichern</b>.</p>"
    )


def test_punctuation_at_a_tags_edge_stays_outside_unless_the_tag_held_it():
    assert fill('<p>All <a href="x">partitions</a>.</p>', "Alle Partitionen.", [(0, 0), (1, 1)]) == (
        '<p>Alle <a href="x">Partitionen</a>.</p>'
    )
    assert fill('<p>See <a href="x">(this)</a> now</p>', "Siehe (dies) jetzt", [(0, 0), (1, 1), (2, 2)]) == (
        '<p>Siehe <a href="x">(dies)</a> jetzt</p>'
    )


def test_tags_inside_one_word_take_the_same_parts_of_its_translation():
    assert fill("<p>Press <kbd>Ctrl</kbd>+<kbd>C</kbd>.</p>", "Drücken Sie Strg+C.", [(0, 0), (0, 1), (1, 2)]) == (
        "<p>Drücken Sie <kbd>Strg</kbd>+<kbd>C</kbd>.</p>"
    )
    assert fill("<p>Water is H<sub>2</sub>O.</p>", "Wasser ist H2O.", [(0, 0), (1, 1), (2, 2)]) == (
        "<p>Wasser ist H<sub>2</sub>O.</p>"
    )
    # part of a run of letters: the same characters of the word kept as it was, never a whole rewritten word
    assert fill("<p>where [x<sub>i</sub>] is</p>", "wobei [xi] ist", [(0, 0), (1, 1), (2, 2)]) == (
        "<p>wobei [x<sub>i</sub>] ist</p>"
    )
    assert fill("<p>where x<sub>i</sub> is</p>", "wobei speihen ist", [(0, 0), (1, 1), (2, 2)], {"i": "i"}) == (
        "<p>wobei <sub>i</sub> ist</p>"
    )


def test_a_tag_around_one_tag_takes_the_same_words_and_siblings_never_cross():
    html = '<p>Open the <a href="x"><em>Copy List</em></a> dialog.</p>'
    # "Copy" and "List" both align to "Liste kopieren"; the link and its emphasis go around the same words
    alignment = [(0, 0), (0, 1), (1, 2), (2, 5), (3, 4), (4, 3)]
    assert fill(html, "Öffnen Sie den Dialog Liste kopieren.", alignment) == (
        '<p>Öffnen Sie den Dialog <a href="x"><em>Liste kopieren</em></a>.</p>'
    )
    # two siblings aligned to overlapping words: the first keeps them, the second takes the rest of its own
    placed = fill("<p><b>A B</b> <i>C</i></p>", "x y z", [(0, 0), (1, 1), (2, 1), (2, 2)])
    assert placed == "<p><b>x y</b> <i>z</i></p>"


def test_verbatim_elements_keep_their_content_and_go_where_the_translation_puts_their_token():
    html = (
        '<p>Type <code>ls -l</code> in <span translate="no">Bash</span>. '
        '<a class="mention hashtag" href="/tags/linux">#<span>linux</span></a></p>'
    )
    documents = HtmlDocuments([html])
    assert documents.texts == ["Type {0} in {1}. {2}"]
    assert documents.own_texts == []  # nothing of it is translated as words
    assert documents.fill(["Geben Sie {0} in {1} ein. {2}"], [[(0, 0), (1, 2), (2, 3), (3, 4)]])[0] == (
        '<p>Geben Sie <code>ls -l</code> in <span translate="no">Bash</span> ein. '
        '<a class="mention hashtag" href="/tags/linux">#<span>linux</span></a></p>'
    )
    assert documents.fallbacks == 0


def test_a_token_the_model_lost_is_a_counted_fallback_and_one_it_wrote_twice_is_placed_once():
    documents = HtmlDocuments(["<p>Type <code>ls</code> now.</p>"])
    assert documents.fill(["Tippe jetzt."], [[(0, 0), (2, 1)]])[0] == "<p>Tippe <code>ls</code> jetzt.</p>"
    assert documents.fallbacks == 1  # after the translation of "Type", the word before it
    documents = HtmlDocuments(["<p>Type <code>ls</code> now.</p>"])
    assert documents.fill(["Tippe {0} jetzt {0}."], [[(0, 0), (1, 1), (2, 2)]])[0] == (
        "<p>Tippe <code>ls</code> jetzt.</p>"
    )
    assert documents.fallbacks == 0


def test_a_tag_without_aligned_words_is_a_counted_fallback_holding_its_own_translation_or_its_source():
    documents = HtmlDocuments(['<p>Press <span class="gui">Add</span> to save.</p>'])
    assert documents.fill(["Zum Speichern drücken."], [[(0, 2), (2, 0), (3, 1)]], {"Add": "Hinzufügen"})[0] == (
        '<p>Zum Speichern drücken. <span class="gui">Hinzufügen</span></p>'
    )
    assert documents.fallbacks == 1
    documents = HtmlDocuments(['<p>Press <span class="gui">Add</span> to save.</p>'])
    assert documents.fill(["Zum Speichern drücken."], [[(0, 2), (2, 0), (3, 1)]])[0] == (
        '<p>Zum Speichern drücken. <span class="gui">Add</span></p>'  # parted as the source parts it
    )


def test_a_fallback_never_lands_inside_a_word_or_a_sibling_that_an_alignment_run_took():
    html = '<p>Press <span class="gui">Edit</span>, then <span class="gui">Add</span> now.</p>'
    # "Edit" aligned to "Vorlagen" and "Datei" takes the run between; "Add" has no word and "then" lies in that run
    translation, alignment = "Drücken Sie die Vorlagen dann Datei jetzt.", [(0, 0), (1, 3), (1, 5), (2, 4), (4, 6)]
    assert fill(html, translation, alignment) == (
        '<p>Drücken Sie die <span class="gui">Vorlagen dann Datei</span> <span class="gui">Add</span> jetzt.</p>'
    )
    # the label's run replaced by its own, shorter translation: the fallback follows it, whole
    assert fill(html, translation, alignment, {"Edit": "Bearbeiten", "Add": "Hinzufügen"}) == (
        '<p>Drücken Sie die <span class="gui">Bearbeiten</span> <span class="gui">Hinzufügen</span> jetzt.</p>'
    )


def test_a_fallback_never_goes_past_a_sibling_that_follows_it_and_never_into_one_where_it_begins():
    html = '<p>Click <span class="gui">Pair</span> or <span class="gui">Confirm</span> now.</p>'
    # "Pair" has no word; the word before it, "Click", went last: the guess would put it after "Confirm"
    translation, alignment = "Bestätigen oder jetzt klicken.", [(0, 3), (2, 1), (3, 0), (4, 2)]
    assert fill(html, translation, alignment, {"Pair": "Koppeln", "Confirm": "Bestätigen"}) == (
        '<p><span class="gui">Koppeln</span> <span class="gui">Bestätigen</span> oder jetzt klicken.</p>'
    )
    assert fill(html, translation, alignment) == (
        '<p><span class="gui">Pair</span> <span class="gui">Bestätigen</span> oder jetzt klicken.</p>'
    )
    # fallbacks meeting at one point keep the source's order and its spaces, a void element after them too
    assert fill("<p>Save <b>A</b> <b>B</b></p>", "Speichern", [(0, 0)]) == "<p>Speichern <b>A</b> <b>B</b></p>"
    assert fill("<p><b>A</b> <i>B</i> <u>C</u> now</p>", "jetzt", [(3, 0)]) == (
        "<p><b>A</b> <i>B</i> <u>C</u> jetzt</p>"
    )
    assert fill('<p>Press <b>Add</b> <img src="a"> to save.</p>', "Drücken.", [(0, 0), (3, 0)]) == (
        '<p>Drücken. <b>Add</b> <img src="a"/></p>'
    )
    # glued where the source glues it
    assert fill("<p>Go <b>now</b><i>Add</i> here</p>", "Geh jetzt hier", [(0, 0), (1, 1), (2, 2)]) == (
        "<p>Geh <b>jetzt</b><i>Add</i> hier</p>"
    )
    # a void element the source parts by spaces is parted in the translation; glued on one side, it stays glued
    alignment = [(0, 0), (1, 3), (3, 4), (4, 5)]
    assert fill('<p>Click the <img src="g.png"> icon now.</p>', "Klicken Sie auf das Symbol jetzt.", alignment) == (
        '<p>Klicken Sie auf das <img src="g.png"/> Symbol jetzt.</p>'
    )
    assert fill('<p>One <img src="a.png">two</p>', "Eins zwei", [(0, 0), (1, 1)]) == (
        '<p>Eins <img src="a.png"/>zwei</p>'
    )
    # a fallback at the end of the element holding it stays inside, parted from its last word
    assert fill("<p>Go <b>now <i>here</i></b> then</p>", "Geh jetzt dann", [(0, 0), (1, 1), (3, 2)]) == (
        "<p>Geh <b>jetzt <i>here</i></b> dann</p>"
    )
    # a void element at the start of the element it lies in stays in it
    assert fill('<p>Go <b><img src="a">now</b></p>', "Geh jetzt", [(0, 0), (1, 1)]) == (
        '<p>Geh <b><img src="a"/>jetzt</b></p>'
    )


def test_a_label_the_sentence_left_untranslated_takes_its_own_translation_and_running_text_does_not():
    html = '<p>Open the <span class="gui">Activities</span> overview.</p>'
    alignment = [(0, 0), (1, 2), (2, 3), (3, 4)]
    assert fill(html, "Öffnen Sie die Activities Übersicht.", alignment, {"Activities": "Aktivitäten"}) == (
        '<p>Öffnen Sie die <span class="gui">Aktivitäten</span> Übersicht.</p>'
    )
    # a label found in the translation as its own translation is placed there, whatever the alignment says
    assert fill(
        html, "Öffnen Sie die Aktivitäten-Übersicht.", [(0, 0), (1, 2), (2, 0), (3, 3)], {"Activities": "Aktivitäten"}
    ) == ('<p>Öffnen Sie die <span class="gui">Aktivitäten</span>-Übersicht.</p>')
    link = '<p>All <a href="x">partitions are</a> in use.</p>'
    assert (
        fill(
            link,
            "Alle Teile sind belegt.",
            [(0, 0), (1, 1), (2, 2), (3, 3), (4, 3)],
            {"partitions are": "Partitionen sind"},
        )
        == '<p>Alle <a href="x">Teile sind</a> belegt.</p>'
    )


def test_a_name_or_number_the_model_keeps_alone_is_written_back_where_the_sentence_rewrote_it():
    name = '<p>Restart <span class="app">dbus-daemon</span> now.</p>'
    assert (
        fill(name, "Starten Sie Dbus-daemon jetzt neu.", [(0, 0), (1, 2), (2, 3)], {"dbus-daemon": "dbus-daemon"})
        == '<p>Starten Sie <span class="app">dbus-daemon</span> jetzt neu.</p>'
    )
    number = "<p>Choose option <b>2</b> now.</p>"
    assert fill(number, "Wählen Sie Option 3 jetzt.", [(0, 0), (1, 2), (2, 3), (3, 4)], {"2": "2"}) == (
        "<p>Wählen Sie Option <b>2</b> jetzt.</p>"
    )
    # running text whose own translation differs keeps the sentence's words
    running = '<p>All <a href="x">partitions</a> are used.</p>'
    assert (
        fill(running, "Alle Teile sind belegt.", [(0, 0), (1, 1), (2, 2), (3, 3)], {"partitions": "Partitionen"})
        == '<p>Alle <a href="x">Teile</a> sind belegt.</p>'
    )


def test_blocks_and_line_breaks_separate_runs_and_whitespace_and_void_elements_stay():
    html = '<div>\n  <p>One <img src="a.png"> two</p>\n  <p>Three<br>four</p><pre>keep  this</pre></div>'
    documents = HtmlDocuments([html])
    assert documents.texts == ["One two", "Three", "four"]
    filled = documents.fill(["Eins zwei", "Drei", "vier"], [[(0, 0), (1, 1)], [(0, 0)], [(0, 0)]])[0]
    # (BeautifulSoup's parser keeps a newline of the whitespace between blocks)
    assert filled == '<div>\n<p>Eins <img src="a.png"/> zwei</p>\n<p>Drei<br/>vier</p><pre>keep  this</pre></div>'


def test_place_and_nest_keep_every_element_once_whatever_the_alignment():
    source = "a b c d"
    elements = [Inline(0, 3, None, WRAP), Inline(2, 3, 0, WRAP), Inline(4, 4, None, POINT), Inline(6, 7, None, WRAP)]
    for alignment in (
        [],
        [(0, 3), (1, 2), (2, 1), (3, 0)],
        [(0, 0), (1, 0), (2, 0), (3, 0)],
        [(i, j) for i in range(4) for j in range(4)],
    ):
        placement = place(source, elements, "w x y z", alignment)
        counted = []

        def walk(items):
            for item in items:
                if not isinstance(item, str):
                    counted.append(item.index)
                    walk(item.children)

        walk(nest(placement.translation, elements, placement))
        inside = {k for k, span in enumerate(placement.spans) if span is None}
        assert sorted(counted + sorted(inside)) == [0, 1, 2, 3], alignment
    placement = place("x {0}", [Inline(2, 5, None, VERBATIM, "{0}")], "y {0}", [(0, 0), (1, 1)])
    assert placement.spans == [(2, 5)] and placement.fallbacks == 0


@pytest.fixture(scope="module")
def broad_engines():
    from transformer_mt.engines import load_engine

    model = REPO / "models" / "transformer-mt-en-de-broad"
    return {name: load_engine(str(model), name) for name in ("transformers", "ctranslate2")}


POST = (
    '<p>All <a href="https://example.org/disks">partitions are</a> already <b>in use</b>. '
    '<a href="https://mastodon.social/tags/linux" class="mention hashtag" rel="tag">#<span>linux</span></a></p>'
)


def check_post(translated: str) -> None:
    """One translated sentence, the link around some of its words, the bold word bold, the hashtag verbatim,
    well-formed."""
    root = etree.fromstring(f"<r>{translated}</r>".encode())
    paragraph = root.find("p")
    links, bold = paragraph.findall("a"), paragraph.findall("b")
    assert len(links) == 2 and len(bold) == 1
    assert dict(links[1].attrib) == {
        "href": "https://mastodon.social/tags/linux",
        "class": "mention hashtag",
        "rel": "tag",
    }
    assert (links[1].text, links[1][0].tag, links[1][0].text, links[1][0].tail) == ("#", "span", "linux", None)
    assert links[0].text.strip() and bold[0].text.strip()
    text = "".join(paragraph.itertext())
    assert text.count(".") == 1 and "partitions" not in text and "{" not in text


@pytest.mark.slow
def test_a_mastodon_post_through_python_and_the_server_on_both_engines(broad_engines):
    from transformer_mt.options import TranslationOptions
    from transformer_mt.translation import translate_texts

    outputs = {}
    for name, engine in broad_engines.items():
        outputs[name] = translate_texts(engine, [POST], TranslationOptions(format="html"))[0][0][0]
        check_post(outputs[name])
    assert outputs["transformers"] == outputs["ctranslate2"]
    require("fastapi", "the server needs the [serve] extra")
    from fastapi.testclient import TestClient

    from transformer_mt.serving import ServedModel, create_app

    for name, engine in broad_engines.items():
        with TestClient(create_app([ServedModel(engine, "en", "de")])) as client:
            answer = client.post("/translate", json={"q": POST, "source": "en", "target": "de", "format": "html"})
            assert answer.json()["translatedText"] == outputs[name]


XLIFF = """<?xml version="1.0" encoding="UTF-8"?>
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2">
  <file source-language="en" target-language="de" datatype="plaintext" original="app">
    <body>
      <trans-unit id="1"><source>Click <g id="1">Save</g> to keep <x id="2"/> your changes.</source></trans-unit>
      <trans-unit id="2"><source>Press <bpt id="3">&lt;b&gt;</bpt>Delete<ept id="3">&lt;/b&gt;</ept> to remove it.\
</source></trans-unit>
    </body>
  </file>
</xliff>
"""

PO = r"""msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\n"

#, c-format
msgid "<b>%s</b> could not be opened."
msgstr ""

#, c-format
msgid "Read the <a href=\"%s\">manual</a> for %d more options."
msgstr ""

msgid "Usage: <file>"
msgstr ""
"""


def inline_elements(element) -> list:
    """The inline elements of an XLIFF source or target: name, id, and a code's content (a `<g>`'s is translated)."""
    names = [(etree.QName(child).localname, child) for child in element.iter() if child is not element]
    return sorted((name, child.get("id"), None if name == "g" else child.text) for name, child in names)


@pytest.mark.slow
def test_html_xliff_and_po_files_through_the_command_keep_every_tag_once(tmp_path):
    import shutil
    import subprocess

    polib = require("polib", "the .po format needs polib")
    from transformer_mt.scripts import translate as translate_script

    model = str(REPO / "models" / "transformer-mt-en-de-broad")
    (tmp_path / "post.html").write_text(f"<html><body>{POST}</body></html>", encoding="utf-8")
    (tmp_path / "app.xlf").write_text(XLIFF, encoding="utf-8")
    (tmp_path / "app.po").write_text(PO, encoding="utf-8")
    for name in ("post.html", "app.xlf", "app.po"):
        translate_script.main(
            [
                "--model",
                model,
                "--input",
                str(tmp_path / name),
                "--output",
                str(tmp_path / f"out-{name}"),
                "--no_progress",
            ]
        )
    html = (tmp_path / "out-post.html").read_text(encoding="utf-8")
    check_post(html[len("<html><body>") : -len("</body></html>")])
    ns = {"x": "urn:oasis:names:tc:xliff:document:1.2"}
    units = etree.parse(str(tmp_path / "out-app.xlf")).getroot().findall(".//x:trans-unit", ns)
    for unit in units:  # every inline element once, a code with its content as it was
        source, target = unit.find("x:source", ns), unit.find("x:target", ns)
        assert inline_elements(target) == inline_elements(source) and len(inline_elements(source)) in (2, 3)
        assert "".join(target.itertext()).strip() and "{" not in "".join(target.itertext())
    catalogue = polib.pofile(str(tmp_path / "out-app.po"))
    bold = catalogue.find("<b>%s</b> could not be opened.").msgstr
    assert bold.count("<b>") == bold.count("</b>") == 1 and "<b>%s</b>" in bold
    link = catalogue.find('Read the <a href="%s">manual</a> for %d more options.').msgstr
    assert link.count('<a href="%s">') == link.count("</a>") == 1 and "%d" in link
    assert catalogue.find("Usage: <file>").msgstr.count("<file>") == 1  # text, not markup: translated as text
    if shutil.which("msgfmt") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("msgfmt is not installed: .ci/run installs Debian's gettext", pytrace=False)
        pytest.skip("msgfmt is not installed (Debian's gettext; .ci/run installs it)")
    subprocess.run(["msgfmt", "--check", "--use-fuzzy", "-o", "/dev/null", str(tmp_path / "out-app.po")], check=True)
