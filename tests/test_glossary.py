"""The glossary: terms annotated inline (`transformer_mt.text.glossary`), their use checked, terms mined for training,
training pairs annotated, and the glossary on every path (options, the command, the server, the steps)."""

import logging
import types

import pytest
from fastapi.testclient import TestClient

from transformer_mt.options import OptionError, TranslationOptions
from transformer_mt.serving.app import ServedModel, create_app
from transformer_mt.text.glossary import (
    annotate,
    annotate_pair,
    check_glossary,
    mine_terms,
    place_term,
    read_glossary,
    strip_annotations,
    term_index,
    term_used,
)
from transformer_mt.text.languages import DE
from transformer_mt.training.augmentation import augment
from transformer_mt.translation import translate_texts

from .test_serving import FakeEngine


def test_terms_are_annotated_on_word_boundaries_longest_first():
    glossary = (("Save", "Sichern"), ("Save As", "Speichern unter"), ("GNOME", None))
    assert annotate("Click Save As, then Save. Saved in GNOME.", glossary) == (
        "Click Save As ⟦Speichern unter⟧, then Save ⟦Sichern⟧. Saved in GNOME ⟦GNOME⟧.",
        [("Save As", "Speichern unter"), ("Save", "Sichern"), ("GNOME", "GNOME")],
    )
    assert annotate("click save", glossary) == ("click save", [])
    assert annotate("click save", glossary, ignore_case=True)[0] == "click save ⟦Sichern⟧"


def test_annotation_marks_never_reach_the_user():
    assert strip_annotations("Klicken Sie auf Sichern ⟦Sichern⟧.") == "Klicken Sie auf Sichern."
    assert strip_annotations("Sichern⟧ und ⟦Abbrechen") == "Sichern und"
    assert strip_annotations("Nichts zu tun.") == "Nichts zu tun."


@pytest.mark.parametrize(
    "translation, term, used",
    [
        ("Die Dateien wurden gespeichert.", "Datei", True),  # an inflected form
        ("In den Ordnern", "Ordner", True),
        ("Klicken Sie auf Speichern unter.", "Speichern unter", True),
        ("Die Datenbank", "Datei", False),  # shares a beginning, not the word
        ("Dateiverwaltungsprogramm", "Datei", False),  # a compound is another word
        ("Sichern", "Speichern", False),
    ],
)
def test_a_term_is_used_by_the_word_or_an_inflected_form(translation, term, used):
    assert term_used(translation, term, DE) is used


def test_a_glossary_file_is_read_and_bad_lines_are_named(tmp_path):
    path = tmp_path / "terms.tsv"
    path.write_text("# UI labels\nSave\tSichern\nGNOME\n\nLibreOffice\t\n", encoding="utf-8")
    assert read_glossary(str(path)) == (("Save", "Sichern"), ("GNOME", None), ("LibreOffice", None))
    path.write_text("Save\tSichern\tSpeichern\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 1: a glossary line is a source term, a tab and its target term"):
        read_glossary(str(path))
    assert check_glossary({"Save": "Sichern", "GNOME": None}) == (("Save", "Sichern"), ("GNOME", None))
    with pytest.raises(OptionError, match=r"glossary holds \('Save ⟦', 'x'\): a term holds no ⟦ or ⟧"):
        TranslationOptions(glossary={"Save ⟦": "x"})
    with pytest.raises(OptionError, match="an entry is a source term and its target term"):
        TranslationOptions(glossary=[("Save",)])


def test_terms_are_mined_from_a_corpus_short_pairs():
    pairs = [
        ("Save", "Speichern"),
        ("save", "Speichern"),
        ("Save", "Sichern"),
        ("Printer", "Drucker"),
        ("Printer", "Drucker"),
        ("Open the file.", "Öffnen Sie die Datei."),
        ("for", "für"),
        ("for", "für"),
        ("Name", "Name"),
        ("Name", "Name"),
        ("Once", "Einmal"),
    ]
    assert mine_terms(pairs) == (("Printer", "Drucker"), ("Save", "Speichern"))


def test_training_pairs_are_annotated_where_their_target_uses_the_term():
    index = term_index((("printer", "Drucker"), ("file", "Datei")))
    target = "Wählen Sie den Drucker für die Dateien."
    assert annotate_pair("Select the printer for the file.", target, index, DE) == (
        "Select the printer ⟦Drucker⟧ for the file ⟦Datei⟧.",
        target,
        2,
    )
    assert annotate_pair("Select the printer.", "Wählen Sie das Gerät.", index, DE) == (
        "Select the printer.",
        "Wählen Sie das Gerät.",
        0,
    )
    # another term's target in place of the reference's, in the annotation and the target alike
    assert annotate_pair("Select the printer for the file.", target, index, DE, substitute="Fenster") == (
        "Select the printer ⟦Fenster⟧ for the file ⟦Datei⟧.",
        "Wählen Sie den Fenster für die Dateien.",
        2,
    )


def test_augmentation_annotates_a_drawn_share_and_counts_it():
    import datasets

    pairs = datasets.Dataset.from_dict({"en": ["Select the printer."] * 40, "de": ["Wählen Sie den Drucker."] * 40})
    shares = {"uppercase": 0.0, "titlecase": 0.0, "span_tokens": 0.0, "terms": 0.5}
    augmented, counts = augment(pairs, "en", "de", shares, 0, (("printer", "Drucker"), ("window", "Fenster")))
    annotated = sum("⟦" in source for source in augmented["en"])
    assert counts["terms"] == annotated and 10 < annotated < 30
    for source, target in zip(augmented["en"], augmented["de"]):  # the annotated term is the target's word
        assert source == "Select the printer." or source == f"Select the printer ⟦{target.split()[-1][:-1]}⟧."
    again, _ = augment(pairs, "en", "de", shares, 0, (("printer", "Drucker"), ("window", "Fenster")))
    assert {target for target in augmented["de"]} == {"Wählen Sie den Drucker.", "Wählen Sie den Fenster."}
    assert again["en"] == augmented["en"]  # the same seed annotates the same pairs


class TermEngine(FakeEngine):
    """A FakeEngine for a model trained on term annotations: it writes the annotated term in place of the word
    before it, and records what it was shown."""

    def __init__(self, trained=True):
        super().__init__()
        self.config = types.SimpleNamespace(source_lang="en", target_lang="de", term_annotations=trained)
        self.shown = []

    def translate_sentences(self, sentences, options, names=None, target_prefix=None):
        import re

        self.shown += sentences
        return [[(re.sub(r"(\w+) ⟦([^⟧]*)⟧", r"\2", sentence), -0.1)] for sentence in sentences]


def test_a_trained_model_is_shown_its_terms_and_a_missed_term_is_flagged(caplog):
    engine = TermEngine()
    [text] = translate_texts(engine, ["Click Save now."], TranslationOptions(glossary={"Save": "Sichern"}))
    assert engine.shown == ["Click Save ⟦Sichern⟧ now."] and text == [("Click Sichern now.", None)]
    assert text.flags.terms_missed == ()
    untrained = TermEngine(trained=False)
    with caplog.at_level(logging.WARNING):
        [text] = translate_texts(untrained, ["Click Save now."], TranslationOptions(glossary={"Save": "Sichern"}))
    assert "not trained to follow term annotations" in caplog.text
    # not shown the annotation, it kept its own word ("Save", the term translated alone): the term takes its place
    assert untrained.shown == ["Click Save now.", "Save"] and text == [("Click Sichern now.", None)]
    assert text.flags.terms_placed == ("Sichern",) and text.flags.terms_missed == ()
    assert text.flags.as_json() == {"terms_placed": ["Sichern"]} and "term_placed" in text.flags.names()
    [text] = translate_texts(untrained, ["Click Save As now."], TranslationOptions(glossary={"Save": "Sichern"}))
    assert text[0][0] == "Click Sichern As now."  # the word, not a longer run of words alike it


class DroppingEngine(TermEngine):
    """A model that leaves out the term's words and, with 8 beams, writes the term in its third hypothesis."""

    def __init__(self):
        super().__init__(trained=True)
        self.generation_config = types.SimpleNamespace(num_beams=4, early_stopping=True)

    def translate_sentences(self, sentences, options, names=None, target_prefix=None):
        self.shown += sentences
        nbest = ["Klicken Sie jetzt.", "Sichern Sichern.", "Klicken Sie jetzt auf Sichern.", "Klicken Sie nun."]
        return [
            [(nbest[k % 4] if "⟦" in sentence else sentence, -0.1 * k) for k in range(options.num_return_sequences)]
            for sentence in sentences
        ]


def test_a_term_the_best_hypothesis_misses_is_taken_from_more_beams_and_one_never_written_stays_flagged():
    engine = DroppingEngine()
    [text] = translate_texts(engine, ["Click Save now."], TranslationOptions(glossary={"Save": "Sichern"}))
    # the first hypothesis of 8 that uses the term and sets off no guard (the second uses it, and loops)
    assert text == [("Klicken Sie jetzt auf Sichern.", None)] and text.flags.terms_redecoded
    assert text.flags.terms_missed == () and text.flags.as_json() == {"terms_redecoded": True}
    [text] = translate_texts(
        engine, ["Click Save now."], TranslationOptions(glossary={"Save": "Sichern"}, guards=False)
    )
    assert text == [("Klicken Sie jetzt.", None)] and text.flags.terms_missed == ("Sichern",)  # guards off: checked


class ForcingEngine(TermEngine):
    """A model that leaves the term out of every hypothesis ("Jetzt hier klicken.") but goes on from a forced
    beginning: the beginning, then its own words after as many words as the beginning has. Given "Jetzt hier
    Sichern", it loops, and the model scores that best."""

    OWN = "Jetzt hier klicken."

    def __init__(self):
        super().__init__(trained=True)
        self.generation_config = types.SimpleNamespace(num_beams=4, early_stopping=True)
        self.forced = []

    def translate_sentences(self, sentences, options, names=None, target_prefix=None):
        outputs = []
        for sentence, prefix in zip(sentences, target_prefix or [None] * len(sentences)):
            if prefix:
                self.forced.append(prefix)
                rest = self.OWN.split()[len(prefix.split()) :]
                outputs.append(
                    f"{prefix} Sichern Sichern."
                    if prefix == "Jetzt hier Sichern"
                    else " ".join([prefix, *rest])
                    if rest
                    else prefix + "."
                )
            else:
                outputs.append(self.OWN if "⟦" in sentence else sentence)
        return [[(output, -0.1)] * options.num_return_sequences for output in outputs]

    def score_pairs(self, sources, targets, batch_size=16, length_penalty=None, options=None):
        from transformer_mt.engines.pair_scores import pair_score

        best = {"Jetzt hier Sichern Sichern Sichern.": -0.1, "Jetzt Sichern klicken.": -0.5}
        return [pair_score(best.get(target, -1.0), 1, 1.0) for target in targets]


def test_a_term_no_hypothesis_holds_is_forced_in_where_the_model_scores_it_best_without_a_new_guard():
    engine = ForcingEngine()
    [text] = translate_texts(engine, ["Click Save now."], TranslationOptions(glossary={"Save": "Sichern"}))
    # the places nearest to where the term stands in the source, each a forced beginning ending in the term; the
    # best scored continuation loops, so the next best is taken (no place after the full stop)
    assert engine.forced == ["Jetzt Sichern", "Sichern", "Jetzt hier Sichern"]
    assert text == [("Jetzt Sichern klicken.", None)] and text.flags.terms_forced == ("Sichern",)
    assert text.flags.terms_missed == () and text.flags.as_json() == {"terms_forced": ["Sichern"]}
    assert "term_forced" in text.flags.names() and "forced into the translation: Sichern" in text.flags.comment()
    # a sentence given a forced beginning of its own keeps it: the term stays missed, and flagged
    engine = ForcingEngine()
    [text] = translate_texts(
        engine, ["Click Save now."], TranslationOptions(glossary={"Save": "Sichern"}), target_prefix=["Jetzt"]
    )
    assert set(engine.forced) == {"Jetzt"}  # the first decode and the one with more beams, each with it
    assert text.flags.terms_missed == ("Sichern",) and not text.flags.terms_forced


def test_a_term_inside_a_protected_span_is_neither_annotated_nor_asked_for():
    engine = TermEngine()
    source = "Open http://example.com/table.html and the table."
    [text] = translate_texts(engine, [source], TranslationOptions(glossary={"table": "Tabelle"}))
    assert engine.shown == ["Open http://example.com/table.html and the table ⟦Tabelle⟧."]
    assert text[0][0] == "Open http://example.com/table.html and the Tabelle." and text.flags.terms_missed == ()


def test_a_term_takes_the_place_of_the_models_own_word_for_it_or_of_the_words_aligned_to_it():
    # its own word (the term translated alone), inflected, wherever the alignment points
    assert (
        place_term(
            "Click Save to keep it.",
            "Klicken Sie Speichern, um es zu behalten.",
            [(1, 4)],
            "Save",
            "Speichern",
            "Sichern",
            DE,
        )
        == "Klicken Sie Sichern, um es zu behalten."
    )
    assert (
        place_term("Open the folders.", "Öffnen Sie die Ordnern.", [], "folders", "Ordner", "Verzeichnisse", DE)
        == "Öffnen Sie die Verzeichnisse."
    )
    source = "Type your last name and save it."
    # no word of its own: the aligned words, as many as the term has and a noun for a noun
    assert (
        place_term(
            source, "Geben Sie Ihren Familiennamen ein.", [(2, 3), (3, 3)], "last name", "Nachname", "Nachname", DE
        )
        == "Geben Sie Ihren Nachname ein."
    )
    assert (
        place_term(source, "Geben Sie ein und sichern Sie ihn.", [(5, 4)], "save", "Speichern", "Sichern", DE)
        == "Geben Sie ein und sichern Sie ihn."
    )  # a verb, lower case: not replaced
    # two words aligned to a one-word term: too far from the term to replace
    assert (
        place_term(source, "Geben Sie letzten Namen ein.", [(2, 2), (3, 3)], "last name", "Nachname", "Nachname", DE)
        == "Geben Sie letzten Namen ein."
    )
    # the term as it occurs outside a protected span is the one whose words are aligned
    assert (
        place_term(
            "See /table and the table.",
            "Siehe /table und die Tafel.",
            [(4, 4)],
            "table",
            "Tisch",
            "Tabelle",
            DE,
            [(4, 10)],
        )
        == "Siehe /table und die Tabelle."
    )


def test_the_server_takes_a_glossary_as_json_or_form_text():
    with TestClient(create_app([ServedModel(TermEngine(), "en", "de")])) as client:
        answer = client.post(
            "/translate",
            json={"q": "Click Save now.", "source": "en", "target": "de", "glossary": {"Save": "Sichern"}},
        ).json()
        assert answer == {"translatedText": "Click Sichern now."}
        form = client.post(
            "/translate",
            data={
                "q": "Click Save now.",
                "source": "en",
                "target": "de",
                "glossary": '{"save": "Sichern"}',
                "glossary_ignore_case": "true",
            },
        )
        assert form.json() == {"translatedText": "Click Sichern now."}
        bad = client.post("/translate", data={"q": "x", "source": "en", "target": "de", "glossary": "Save=Sichern"})
        assert bad.status_code == 400 and "glossary must be a JSON object" in bad.json()["error"]


def test_the_command_reads_a_glossary_file(tmp_path, capsys, beam4_copy_model):
    from transformer_mt.scripts import translate as translate_script

    path = tmp_path / "terms.tsv"
    path.write_text("Save\tSichern\n", encoding="utf-8")
    with pytest.raises(SystemExit):
        translate_script.main(["--model", str(beam4_copy_model[0]), "--glossary", str(tmp_path / "none.tsv"), "x"])
    assert "--glossary" in (err := capsys.readouterr().err) and "does not exist" in err
    path.write_text("Save\tSichern\tx\n", encoding="utf-8")
    with pytest.raises(SystemExit):
        translate_script.main(["--model", str(beam4_copy_model[0]), "--glossary", str(path), "x"])
    assert "--glossary: " in capsys.readouterr().err


@pytest.mark.slow  # the shipped broader model, both engines
@pytest.mark.parametrize("engine", ["transformers", "ctranslate2"])
def test_the_shipped_model_trained_on_annotations_writes_an_unseen_term(engine):
    from transformer_mt.engines import load_engine

    from .utils import REPO

    model = load_engine(str(REPO / "models" / "transformer-mt-en-de-broad"), engine)
    assert model.config.term_annotations
    # "Quirlgerät" (a whisk) is no copy of any English word and no translation of "widget" the model has seen:
    # shown the annotation, it writes the term itself, with no step after the decode (an unseen noun's gender is
    # not known to it: "Die Quirlgerät", where German says "das")
    source = "The widget could not be started."
    [plain] = translate_texts(model, [source], TranslationOptions())
    [termed] = translate_texts(model, [source], TranslationOptions(glossary={"widget": "Quirlgerät"}))
    assert not term_used(plain[0][0], "Quirlgerät", DE)
    assert termed == [("Die Quirlgerät konnte nicht gestartet werden.", None)]
    assert termed.flags.terms_placed == termed.flags.terms_forced == termed.flags.terms_missed == ()
    # a source word it copied before its formality fine-tune ("frobnicator", which the placement step then replaced)
    # it now writes as annotated too (the placement step's own test: a tiny model, above)
    [placed] = translate_texts(
        model, ["The frobnicator could not be started."], TranslationOptions(glossary={"frobnicator": "Quirlgerät"})
    )
    assert placed == [("Der Quirlgerät konnte nicht gestartet werden.", None)]
    assert placed.flags.terms_placed == placed.flags.terms_forced == placed.flags.terms_missed == ()
    # a term it leaves out of every hypothesis and has no word of its own for is forced in, the placeholders kept
    [forced] = translate_texts(
        model, ['Failed loading skin "%s"! Trying "%s"'], TranslationOptions(glossary={"skin": "Thema"})
    )
    assert forced == [("Das Thema »%s« konnte nicht geladen werden! „%s“", None)]
    assert forced.flags.terms_forced == ("Thema",) and forced.flags.terms_missed == ()


def test_a_term_put_into_an_html_translation_keeps_the_markup_s_alignment(beam4_copy_model):
    from lxml import etree

    from transformer_mt.engines import load_engine

    engine = load_engine(str(beam4_copy_model[0]))
    post = '<p>Open the <a href="https://example.org/f">file</a>.</p>'
    options = TranslationOptions(format="html", glossary=(("file", "Datei"),))
    (translated,) = translate_texts(engine, [post], options)
    link = etree.fromstring(translated[0][0].encode()).find("a")
    assert translated.flags.terms_forced == ("Datei",)  # the copy model never writes it: forced in
    assert (
        "Datei" in link.text and "file" not in translated[0][0]
    )  # the link where the alignment of the new text puts it
