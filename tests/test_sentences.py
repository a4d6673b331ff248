"""Sentences: split by sentencex with the whitespace between them kept, joined back exactly; the language rule."""

import pytest

from transformer_mt.text.sentences import join, segmenter_language, split

from .utils import tiny_config


@pytest.mark.parametrize(
    "language, text, sentences, separators",
    [
        (
            "en",
            "Open the Tools menu. Choose Options. Click OK to close the dialog.",
            ["Open the Tools menu.", "Choose Options.", "Click OK to close the dialog."],
            [" ", " "],
        ),
        # abbreviations and numbers stay whole
        (
            "en",
            "See e.g. the Format menu. Dr. Smith set the width to 3.5 cm. Click OK.",
            ["See e.g. the Format menu.", "Dr. Smith set the width to 3.5 cm.", "Click OK."],
            [" ", " "],
        ),
        (
            "de",
            "Wählen Sie z. B. Format. Die Breite ist 3,5 cm. Klicken Sie auf OK.",
            ["Wählen Sie z. B. Format.", "Die Breite ist 3,5 cm.", "Klicken Sie auf OK."],
            [" ", " "],
        ),
        ("en", "What now? Click OK! Done.", ["What now?", "Click OK!", "Done."], [" ", " "]),
        # the whitespace between sentences is kept as it was; around the text it is not part of any sentence
        ("en", "Open the file.\nClose it.  Save it.", ["Open the file.", "Close it.", "Save it."], ["\n", "  "]),
        ("en", "  Open the file.\n\n Close it.\t", ["Open the file.", "Close it."], ["\n\n "]),
        # a full stop with no space after it is inside a name, not at a sentence end
        (
            "en",
            "Set the DialogControl.Value property. Use CEILING.PRECISE here.",
            ["Set the DialogControl.Value property.", "Use CEILING.PRECISE here."],
            [" "],
        ),
        ("en", "WORKDAY.INTL", ["WORKDAY.INTL"], []),
        # ... but sentences of a script without spaces still split
        ("ja", "こんにちは。さようなら。", ["こんにちは。", "さようなら。"], [""]),
        ("en", "Click Save", ["Click Save"], []),  # no sentence end: one sentence
        ("en", "", [], []),
        ("en", "  \t ", [], []),
    ],
)
def test_split_gives_the_sentences_and_the_whitespace_between_them(language, text, sentences, separators):
    assert split(text, language) == (sentences, separators)
    assert join(sentences, separators) == text.strip()


def test_join_puts_translations_between_the_sources_separators():
    assert (
        join(["Öffnen Sie die Datei.", "Schließen Sie sie.", "Speichern."], ["\n", "  "])
        == "Öffnen Sie die Datei.\nSchließen Sie sie.  Speichern."
    )
    assert join([" Eins. ", "Zwei. "], [" "]) == "Eins.  Zwei."  # stripped at the ends only, as translations are
    assert join([], []) == ""
    with pytest.raises(ValueError):  # one separator fewer than sentences, never silently dropped
        join(["Eins.", "Zwei."], [])


def test_the_language_is_the_one_passed_else_the_configs():
    assert segmenter_language(tiny_config()) == "en"
    assert segmenter_language(tiny_config(), "de") == "de"
    assert segmenter_language(tiny_config(source_lang=None), "fr") == "fr"


def test_without_a_language_the_error_names_the_model_and_what_to_pass():
    config = tiny_config(source_lang=None)
    config._name_or_path = "runs/old-model"
    with pytest.raises(ValueError) as error:
        segmenter_language(config)
    message = str(error.value)
    assert "runs/old-model has no source_lang in its config" in message
    assert all(
        option in message
        for option in ("--source_lang", "source_lang=", "--no_split_sentences", "split_sentences=False")
    )
