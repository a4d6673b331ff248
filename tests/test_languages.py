"""Language rules as data (transformer_mt.text.languages): each rule of the steps, the guards and the suggestion
filter read from the table of the right language, for each filled language (en, de, fr, es) with its own examples;
an unknown language's neutral rules and its one warning; and a fr->en and an en->es model, through the steps and
the trust step, to which no German rule applies."""

import dataclasses
import logging

import pytest

from transformer_mt.options import TranslationOptions
from transformer_mt.quality import is_loop, repetition
from transformer_mt.serving.suggestion_filter import Thresholds, ends_sentence, repeated
from transformer_mt.text import languages
from transformer_mt.text.casing import case_of, fold, restore
from transformer_mt.text.formality import register
from transformer_mt.text.glossary import place_term, term_used
from transformer_mt.text.labels import LabelForm, as_label, label_forms
from transformer_mt.text.languages import DE, EN, ES, FR, NEUTRAL, TABLES, Languages, languages_of, rules_for
from transformer_mt.translation import translate_texts

from .test_labels import Table
from .utils import tiny_config


FILLED = {"en": EN, "de": DE, "fr": FR, "es": ES}


def test_the_four_filled_languages_have_tables_and_every_other_the_neutral_one(monkeypatch, caplog):
    monkeypatch.setattr(languages, "_warned", set())
    assert TABLES == FILLED and all(TABLES[code].code == code and TABLES[code].known for code in TABLES)
    assert rules_for("de-AT") is DE and rules_for("es_MX") is ES and rules_for("FR") is FR
    with caplog.at_level(logging.WARNING, logger="transformer_mt.text.languages"):
        assert rules_for("fi") is NEUTRAL and rules_for("fi") is NEUTRAL and rules_for("fi-FI") is NEUTRAL
        assert rules_for("de") is DE  # a filled language says nothing
    assert [record.getMessage() for record in caplog.records] == [
        "the language 'fi' has no rules of its own: neutral rules are used (no Title Case told or given back, no "
        "grammatical doubling, glossary terms matched as written; transformer_mt.text.languages)",
        "the language 'fi-FI' has no rules of its own: neutral rules are used (no Title Case told or given back, no "
        "grammatical doubling, glossary terms matched as written; transformer_mt.text.languages)",
    ]  # once per language and process
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="transformer_mt.text.languages"):
        assert rules_for(None) is NEUTRAL and rules_for(None) is NEUTRAL
    assert len(caplog.records) == 1 and "no language is known: neutral rules are used" in caplog.text
    assert not NEUTRAL.known and NEUTRAL.code == ""
    assert (NEUTRAL.detects_titles, NEUTRAL.titles_in_title_case, NEUTRAL.capitalises_nouns) == (False,) * 3
    assert (NEUTRAL.doubling, NEUTRAL.stem_cut, NEUTRAL.form_extra, NEUTRAL.register_words) == (
        frozenset(),
        0,
        0,
        None,
    )
    assert NEUTRAL.length_vs_english is None and NEUTRAL.addresses_reader is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        EN.doubling = frozenset()


@pytest.mark.parametrize("language", [3, "", "  ", ("de",)])
def test_a_language_that_is_no_code_is_refused_by_name(language):
    with pytest.raises(ValueError, match=r"language must be a language code such as 'de' \(or None\), got "):
        rules_for(language)


def test_a_models_languages_come_from_its_config_or_the_options():
    config = tiny_config(source_lang="fr", target_lang="en")
    assert languages_of(config) == Languages(FR, EN)
    assert languages_of(config, None, "es") == Languages(FR, ES)  # a model of several targets: the options' target
    assert languages_of(config, "de", None) == Languages(DE, EN)


# the loop guard: a language's grammatical doubling, and a loop in the same language
DOUBLINGS = {
    "en": ("Make sure that that file is saved", "Save the the file"),
    "de": ("Wählen Sie die Datei, die die Daten enthält", "Klicken Sie auf OK OK"),
    "fr": ("Vous vous connectez au serveur", "Ouvrir le le fichier"),
    "es": ("Los ejes Y y Z", "Abrir el el archivo"),
}


@pytest.mark.parametrize("code", FILLED)
def test_a_word_the_language_may_write_twice_is_no_loop_but_in_another_language_it_is(code):
    grammatical, looped = DOUBLINGS[code]
    assert repetition(grammatical, FILLED[code]) is None
    assert repetition(looped, FILLED[code]) == looped.split()[-2].casefold()
    for other, rules in FILLED.items():
        if other != code:
            assert repetition(grammatical, rules) is not None, other
    assert repetition(grammatical, NEUTRAL) is not None  # a word written twice is a loop
    # the output read by the target's rules, the source by the source's
    source = "la" if code == "es" else "fichier"
    assert not is_loop(source, grammatical, Languages(FR, FILLED[code]))
    assert is_loop(source, looped, Languages(FR, FILLED[code]))
    assert not is_loop(grammatical, looped, Languages(NEUTRAL, FILLED[code]))  # the source repeats itself


# Title Case in a source: (a title, a text that is no title though it has capitals)
TITLES = {
    "en": ("Restore Last Query", "Click Save."),
    "de": (None, "Gespeicherte Dateien"),  # every noun has a capital: no title to tell
    "fr": ("Copier vers Nouveau Dossier", "Cliquez sur Enregistrer."),  # "vers": a small word
    "es": ("Copiar hacia Nueva Carpeta", "Pulse Guardar."),  # "hacia": a small word
}


@pytest.mark.parametrize("code", FILLED)
def test_a_title_is_told_by_the_sources_rules(code):
    title, other = TITLES[code]
    rules = FILLED[code]
    if title is not None:
        assert case_of(title, rules) == "title" and case_of(title, NEUTRAL) == "normal"
        assert fold(title, "title").split()[1:] == [word.lower() for word in title.split()[1:]]
    assert case_of(other, rules) == "normal"
    assert case_of(other.upper() + " JETZT", rules) == "upper"  # ALL CAPS in any language
    assert rules.detects_titles is (code != "de")
    assert case_of("Gespeicherte Dateien", EN) == "title"  # German rules are what keeps a German label as it is


# a title's translation into each language: English titles are title-cased, the others written in sentence case
RESTORED = {
    "en": ("Save to file and restore the last query", "Save to File and Restore the Last Query"),
    "de": ("Letzte Abfrage wiederherstellen", "Letzte Abfrage wiederherstellen"),
    "fr": ("Paramètres avancés du réseau", "Paramètres avancés du réseau"),
    "es": ("Configuración avanzada de la red", "Configuración avanzada de la red"),
}


@pytest.mark.parametrize("code", FILLED)
def test_a_titles_translation_takes_the_targets_title_case(code):
    translation, restored = RESTORED[code]
    assert restore(translation, "title", FILLED[code]) == restored
    assert restore(translation, "title", NEUTRAL) == translation
    assert restore(translation, "normal", FILLED[code]) == translation
    # ALL CAPS is Unicode's in every language: ß is SS (SpecialCasing.txt, unconditional), no German rule
    assert restore(f"{translation} Straße %s", "upper", FILLED[code]) == f"{translation.upper()} STRASSE %s"


def test_an_english_title_keeps_its_placeholders_urls_and_minor_words():
    assert restore("open %s in www.example.com/a and save it", "title", EN) == (
        "Open %s in www.example.com/a and Save It"
    )
    assert restore("a copy of mp3 files for KDE", "title", EN) == "A Copy of mp3 Files for KDE"


# a glossary term used by an inflected form in each language, and a word that only looks like one
INFLECTED = {
    "en": [("The files were saved.", "file", True), ("Saving the libraries", "library", True)]
    + [("Folding the page", "folder", False)],
    "de": [("Die Dateien wurden gespeichert.", "Datei", True), ("In den Ordnern", "Ordner", True)]
    + [("Die Datenbank", "Datei", False)],
    "fr": [("Les journaux", "journal", True), ("Fichiers enregistrés", "enregistrer", True)]
    + [("Les dossiers", "document", False)],
    "es": [("Las funciones", "función", True), ("Los archivos guardados", "guardar", True)]
    + [("La carpeta", "archivo", False)],
}


@pytest.mark.parametrize("code", FILLED)
def test_a_term_is_used_by_its_languages_inflected_forms(code):
    for translation, term, used in INFLECTED[code]:
        assert term_used(translation, term, FILLED[code]) is used, (translation, term)
        assert term_used(translation, term, NEUTRAL) is (used and term in translation.casefold().split())
    assert term_used("Folding the page", "folder", DE)  # German's two letters, wrong for English


@pytest.mark.parametrize(
    "code, translation, own, target, placed",
    [
        ("en", "Open the saved folders.", "folder", "directory", "Open the saved directory."),
        ("de", "Öffnen Sie die Ordnern.", "Ordner", "Verzeichnisse", "Öffnen Sie die Verzeichnisse."),
        ("fr", "Ouvrez les journaux.", "journal", "registres", "Ouvrez les registres."),
        ("es", "¿Abrir las funciones?", "función", "opciones", "¿Abrir las opciones?"),
    ],
)
def test_a_term_takes_the_place_of_an_inflected_own_word(code, translation, own, target, placed):
    assert place_term("x", translation, [], "x", own, target, FILLED[code]) == placed
    assert place_term("x", translation, [], "x", own, target, NEUTRAL) == translation  # not as written: left


# a copied lower-case label's translation: the model's case where nouns have capitals, else the label's
LABELS = {"en": ("Overview", "overview"), "de": ("Zusammenfassung",) * 2, "fr": ("Résumé", "résumé")}
LABELS["es"] = ("Resumen", "resumen")


@pytest.mark.parametrize("code", FILLED)
def test_a_labels_translation_is_written_in_the_labels_case_as_its_language_allows(code):
    translation, written = LABELS[code]
    rules = FILLED[code]
    assert as_label("summary", LabelForm("Summary"), translation, rules) == written
    assert as_label("Summary:", LabelForm("summary", after=":"), translation.lower(), rules) == f"{translation}:"
    assert as_label("usb", LabelForm("Usb"), "USB", rules) == "USB"  # a name keeps its case
    forms = label_forms("Datei:" if code == "de" else "Summary:", rules)
    if rules.capitalises_nouns:  # "datei" is no German word: the label's words alone, as written
        assert forms == [LabelForm("Datei", after=":")]
    else:
        assert forms == [LabelForm("summary:"), LabelForm("Summary", after=":"), LabelForm("summary", after=":")]


# the register a translation addresses its reader in: (formal, informal, a text whose capital means nothing here)
REGISTERS = {
    "de": ("Öffnen Sie die Datei.", "Öffne deine Datei.", None),
    "fr": ("Ouvrez votre fichier.", "Ouvre ton fichier.", "Dann können Sie es öffnen."),
    "es": ("Pulse Guardar para continuar.", "Pulsa Guardar para continuar.", "Dann können Sie es öffnen."),
    "en": (None, None, "Open your file."),
}


@pytest.mark.parametrize("code", FILLED)
def test_the_register_is_read_by_the_targets_words_and_the_reader_by_the_sources(code):
    formal, informal, other = REGISTERS[code]
    if FILLED[code].register_words is None:  # English has one "you"
        assert register("Open your file.", other, code) is None
        return
    assert register("Open your file.", formal, code) == "formal"
    assert register("Open your file.", informal, code) == "informal"
    assert register("Open the file.", formal, code) is None  # the source addresses no one
    if other is not None:  # German's capital Sie is no formal word in French or Spanish
        assert register("Then you can open it.", other, code) is None
    assert register("Vous pouvez ouvrir le fichier.", formal, code, source_language="fr") == "formal"
    assert register("Ouvrez votre fichier.", formal, code, source_language="fi") is None  # neutral: cannot tell


SHORT_DOUBLINGS = {"en": "had had enough", "de": "die die Daten", "fr": "Vous vous connectez", "es": "Y y Z"}


@pytest.mark.parametrize("code", FILLED)
def test_the_suggestion_filters_length_band_sentence_ends_and_repeats_follow_the_pair(code):
    rules = FILLED[code]
    short = SHORT_DOUBLINGS[code]  # a short s is judged word by word: its language's doubling is no repeat
    assert repeated(short, 4, rules.doubling) is None
    assert repeated(short, 4, NEUTRAL.doubling) == short.split()[0].casefold()
    assert repeated(f"{short} {short}", 4, rules.doubling) == short.casefold()  # a doubled output still is
    assert ends_sentence("¿Desea guardar el archivo?", rules) and ends_sentence("« Fichier enregistré. »", rules)
    assert not ends_sentence("文件已保存。", rules) and ends_sentence("文件已保存。", NEUTRAL)
    into, back = Thresholds().for_pair(Languages(EN, rules)), Thresholds().for_pair(Languages(rules, EN))
    shift = rules.length_vs_english / DE.length_vs_english  # the band was tuned on English to German
    assert into.length_ratio == (round(0.7 * shift, 2), round(2.0 * shift, 2))
    assert back.length_ratio[0] < into.length_ratio[0] or code == "en"  # a text into English is shorter
    assert Thresholds().for_pair(Languages(EN, NEUTRAL)).length_ratio is None
    assert Thresholds().for_pair(Languages(EN, DE)) == Thresholds()  # the pair it was tuned on, as it was


def table_engine(source: str, target: str, table: dict[str, str], scores: dict[str, float] | None = None):
    """A table engine (tests.test_labels) with a tiny model config of the `source` -> `target` pair."""
    engine = Table(table, scores)
    engine.config = tiny_config(source_lang=source, target_lang=target)
    return engine


def translated(engine, texts: list[str], **options) -> list:
    return translate_texts(engine, texts, TranslationOptions(split_sentences=False, confidence=True, **options))


def test_a_french_to_english_model_gets_no_german_rule(caplog):
    engine = table_engine(
        "fr",
        "en",
        {
            "Paramètres avancés": "Advanced settings",  # a French title, folded, given back as an English one
            "Ouvrir le dossier": "Open the folding",  # "folding" is no form of "folder" in English
            "Il ouvre le fichier": "He opens the the file",  # a loop, whatever German writes twice
            "Fichier": "Die die",
        },
        scores={"Paramètres avancés": -0.1, "Ouvrir le dossier": -0.1, "Fichier": -0.1},
    )
    with caplog.at_level(logging.WARNING):
        title, folder, looped, die = translated(
            engine, ["Paramètres Avancés", "Ouvrir le dossier", "Il ouvre le fichier", "Fichier"], guards=True
        )
    assert engine.asked[0][:2] == ["Paramètres avancés", "Ouvrir le dossier"]
    assert title[0][0] == "Advanced Settings" and title.flags.guards == ()
    assert looped.flags.guards == ("loop",) and looped.flags.redecoded
    assert die.flags.guards == ("loop",)  # "die die" is German's, not English's
    [folder] = translated(engine, ["Ouvrir le dossier"], guards=False, glossary={"dossier": "folder"})
    assert folder[0][0] == "Open the folding" and folder.flags.terms_missed == ("folder",)
    assert "neutral rules" not in caplog.text


def test_an_english_to_spanish_model_gets_no_german_rule():
    engine = table_engine(
        "en",
        "es",
        {
            "Restore last query": "Restaurar la última consulta",
            "Open the file that the data holds": "Abra el archivo die die datos",
            "Summary": "Resumen",  # "summary" is copied (unsure: the copy guard), then tried as "Summary"
        },
        scores={"Restore last query": -0.1, "Summary": -0.5},
    )
    title, looped, label = translated(engine, ["Restore Last Query", "Open the file that the data holds", "summary"])
    assert engine.asked[0][:2] == ["Restore last query", "Open the file that the data holds"]
    assert title[0][0] == "Restaurar la última consulta"  # Spanish titles are written in sentence case
    assert looped.flags.guards == ("loop",)  # German's "die die" is a loop in Spanish
    assert label[0][0] == "resumen" and label.flags.guards == ()  # a lower-case label keeps its case in Spanish
    german = table_engine("en", "de", {"Open the file that the data holds": "Öffnen Sie die Datei, die die Daten"})
    [kept] = translated(german, ["Open the file that the data holds"])
    assert kept.flags.guards == ()  # the same words in German: grammatical
