"""Case folding (transformer_mt.text.casing): which texts are shouted or titled, what the model is shown, and the case
their translations are given back, on strings of the UI corpus (data/en-de-ui's validation split)."""

import pytest

from transformer_mt.text.casing import (
    case_of,
    fold,
    fold_label,
    fold_sentences,
    restore,
    restore_hypotheses,
    title_case,
    upper_case,
)
from transformer_mt.text.languages import DE, EN

from .utils import require


@pytest.mark.parametrize(
    "text, case",
    [
        ("RECOVERING JOURNAL.", "upper"),
        ("REVISION PATH <ID>", "upper"),
        ("FROM[K|M|G] TO[K|M|G]", "upper"),
        ("WORKDAY.INTL", "upper"),  # two runs of letters
        ("FILE %s NOT FOUND", "upper"),  # a placeholder's letters say nothing of the case
        ("QUANTITY", "upper"),  # one word longer than an acronym
        ("OK", "normal"),
        ("USB", "normal"),
        ("HTML", "normal"),
        ("ID: %s", "normal"),  # acronyms, not shouting
        ("Restore Last Query", "title"),
        ("KDE Frontend for Callgrind/Cachegrind", "title"),
        ("Visited Text on Visited Background", "title"),
        ("Start Game", "title"),
        ("Click Save.", "normal"),  # a sentence naming a label: its first word is capitalised as any sentence's is
        ("Assume we are the only DHCP server on the local network.", "normal"),
        ("Enforce strict ISO compliance", "normal"),
        ("Hexadecimal", "normal"),
        ("", "normal"),
    ],
)
def test_the_case_of_a_text(text, case):
    assert case_of(text, EN) == case


def test_an_upper_text_is_shown_in_sentence_case_with_digits_and_placeholders_kept():
    assert fold("RECOVERING JOURNAL.", "upper") == "Recovering journal."
    assert fold("LEARN MODE. PRESS ESCAPE TO EXIT.", "upper") == "Learn mode. Press escape to exit."
    assert fold("FILE %s NOT FOUND: %(name)s, {0}", "upper") == "File %s not found: %(name)s, {0}"
    assert fold("ERROR 0X1F IN MP3 FILE", "upper") == "Error 0X1F in MP3 file"  # a token with a digit is kept
    assert fold("SEE HTTP://EXAMPLE.COM/INDEX NOW", "upper") == "See HTTP://EXAMPLE.COM/INDEX now"
    assert fold("WORKDAY.INTL", "upper") == "Workday.intl"


def test_a_title_is_shown_in_sentence_case_with_names_kept():
    assert fold("Visited Text on Visited Background", "title") == "Visited text on visited background"
    assert fold("KDE Frontend for Callgrind", "title") == "KDE frontend for callgrind"
    assert fold("Choose Tools - AutoCorrect Options", "title") == "Choose tools - AutoCorrect options"
    assert fold("Ledit Is A Line Editor. I Think So", "title") == "Ledit is a line editor. I think so"


def test_a_normal_text_is_shown_as_it_is():
    for text in ("Enforce strict ISO compliance", "OK", "ID: %s", ""):
        assert fold(text, case_of(text, EN)) == text


def test_an_upper_translation_is_upper_cased_but_its_placeholders_and_urls():
    assert restore("Datei %s nicht gefunden", "upper", DE) == "DATEI %s NICHT GEFUNDEN"
    assert restore("Größe von %(name)s und {name}", "upper", DE) == "GRÖSSE VON %(name)s UND {name}"  # ß: SS
    assert restore("Siehe https://example.com/index.html", "upper", DE) == "SIEHE https://example.com/index.html"
    assert restore("Spiel beginnen", "title", DE) == "Spiel beginnen"  # German capitalises nouns, not titles
    assert restore("Hexadezimal", "normal", DE) == "Hexadezimal"
    assert restore("", "upper", DE) == ""


def test_sentences_are_folded_and_their_hypotheses_restored_with_scores_kept():
    folded, cases = fold_sentences(["RECOVERING JOURNAL.", "OK", "Restore Last Query"], EN)
    assert folded == ["Recovering journal.", "OK", "Restore last query"]
    assert cases == ["upper", "normal", "title"]
    hypotheses = [
        [("Journal wird wiederhergestellt.", -0.5), ("Journal wiederherstellen.", -0.9)],
        [("OK", None)],
        [("Letzte Abfrage wiederherstellen", -0.2)],
    ]
    assert restore_hypotheses(hypotheses, cases, DE) == [
        [("JOURNAL WIRD WIEDERHERGESTELLT.", -0.5), ("JOURNAL WIEDERHERSTELLEN.", -0.9)],
        [("OK", None)],
        [("Letzte Abfrage wiederherstellen", -0.2)],
    ]


def test_upper_and_title_case_keep_placeholders_and_urls():
    assert (
        upper_case("File %s not found at https://example.com/a {name}")
        == "FILE %s NOT FOUND AT https://example.com/a {name}"
    )
    assert upper_case("Größe") == "GRÖSSE"
    # the first letter of every word, the rest as written (not str.title: "KDE's" stays, "far-reaching" too)
    assert (
        title_case("far-reaching consequences of KDE's %s (see www.kde.org)")
        == "Far-Reaching Consequences Of KDE's %s (See www.kde.org)"
    )
    assert title_case("klicken Sie auf 3d-Ansicht") == "Klicken Sie Auf 3d-Ansicht"


def test_html_leaves_title_case_as_it_is():
    assert fold_sentences(["Restore Last Query", "SAVE CHANGES"], EN, titles=False) == (
        ["Restore Last Query", "Save changes"],
        ["normal", "upper"],
    )


def test_an_elements_own_title_case_label_is_folded_but_menu_paths_keys_and_pairs_are_not():
    assert [
        fold_label(text, EN)
        for text in (
            "Screen Lock",
            "Image Viewer",
            "Tools - Options",
            "Edit – Paste Special",
            "Shift+Enter",
            "Load/Save",
            "BSSID",
            "Save",
            "partitions are",
        )
    ] == [
        "Screen lock",
        "Image viewer",
        "Tools - Options",
        "Edit – Paste Special",
        "Shift+Enter",
        "Load/Save",
        "BSSID",
        "Save",
        "partitions are",
    ]


def test_an_html_elements_own_text_reaches_the_engine_folded_and_the_sentence_as_it_is():
    require("bs4", "HTML needs BeautifulSoup: pip install -e '.[serve]'")
    from transformer_mt.options import TranslationOptions
    from transformer_mt.translation import segment

    class Config:
        source_lang = "en"

    html = ['<p>Open <span class="gui">Screen Lock</span> in <span class="app">Image Viewer</span>.</p>']
    sentences = segment(html, TranslationOptions(format="html"), Config()).sentences
    assert sentences == ["Open Screen Lock in Image Viewer.", "Image viewer", "Screen lock"]
    sentences = segment(html, TranslationOptions(format="html", fold_case=False), Config()).sentences
    assert sentences == ["Open Screen Lock in Image Viewer.", "Image Viewer", "Screen Lock"]
