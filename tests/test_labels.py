"""Copied short labels (text.labels, trust.labels): a short label the model gave back as it was, flagged as a copy,
is tried in its other forms (capitalised, lower-cased, its words alone) through the one Decoder; the first form
whose translation is no copy and sets off no guard wins, in the label's case; a legitimate copy is left alone."""

import logging
from types import SimpleNamespace

from transformer_mt.options import TranslationOptions
from transformer_mt.text.labels import LabelForm, as_label, label_forms
from transformer_mt.text.languages import DE, EN
from transformer_mt.translation import translate_texts

from .test_quality import calibration


def test_a_label_is_tried_capitalised_lower_cased_and_as_its_words_alone():
    assert label_forms("SUMMARY", EN) == [LabelForm("Summary"), LabelForm("summary")]
    assert label_forms("Summary", EN) == [LabelForm("summary")]
    assert label_forms("Summary:", EN) == [
        LabelForm("summary:"),
        LabelForm("Summary", after=":"),
        LabelForm("summary", after=":"),
    ]
    assert label_forms("&Lookup...", EN) == [
        LabelForm("&lookup..."),
        LabelForm("Lookup", "&", "..."),
        LabelForm("lookup", "&", "..."),
    ]
    assert label_forms("Show All Files", EN) == [LabelForm("Show all files"), LabelForm("show all files")]  # 3 words
    assert (
        label_forms("%s", EN) == [] and label_forms("42", EN) == [] and label_forms("Open %s", EN) == []
    )  # kept as written
    assert as_label("Summary:", LabelForm("summary", after=":"), "zusammenfassung", DE) == "Zusammenfassung:"
    assert as_label("SUMMARY", LabelForm("summary"), "Zusammenfassung", DE) == "ZUSAMMENFASSUNG"
    assert as_label("summary", LabelForm("Summary"), "Zusammenfassung", DE) == "Zusammenfassung"  # the model's case


class Words:
    is_fast = True

    def __call__(self, texts):
        return {"input_ids": [text.split() for text in texts]}


class Table:
    """An engine that translates by a table (a sentence not in it comes back as it was), scoring -3 (confidence
    0.007: a short copy sets off the copy guard) unless `scores` says otherwise; records each decode's sentences."""

    name, reason, device, workers, max_positions = "table", "test", "cpu", 1, None
    calibration_problem = None
    calibration = calibration("x")  # confidence sigmoid(2 * score + 1)
    generation_config = SimpleNamespace(num_beams=1, early_stopping=True)

    def __init__(self, table: dict[str, str], scores: dict[str, float] | None = None):
        self.config = SimpleNamespace(source_lang="en", target_lang="de", span_tokens=True)
        self.tokenizer, self.table, self.scores, self.asked = Words(), table, scores or {}, []

    def translate_sentences(self, sentences, options, names=None, target_prefix=None):
        self.asked.append(list(sentences))
        return [
            [(self.table.get(sentence, sentence), self.scores.get(sentence, -3.0))] * options.num_return_sequences
            for sentence in sentences
        ]


def translated(engine, texts: list[str]):
    return translate_texts(engine, texts, TranslationOptions(split_sentences=False, confidence=True))


def test_a_copied_label_is_tried_lower_cased_and_the_translation_takes_the_labels_case(caplog):
    engine = Table({"summary": "zusammenfassung"}, scores={"summary": -0.5})
    with caplog.at_level(logging.WARNING):
        [text] = translated(engine, ["Summary"])
    assert text[0][0] == "Zusammenfassung"
    assert text.flags.guards == () and text.flags.redecoded and text.flags.confidence == 0.5
    assert engine.asked == [["Summary"], ["Summary"], ["summary"]]  # the decode, the fallback, the other form
    assert "0 still did" in caplog.text


def test_a_label_whose_other_forms_copy_set_off_a_guard_or_are_a_guess_stays_flagged():
    engine = Table({"lookup": "Suche Suche", "latvian": "Lattisch"}, scores={"lookup": -0.5})  # a loop; a guess
    [copied, looped, guessed] = translated(engine, ["Breadcrumbs", "Lookup", "Latvian"])
    assert [copied[0][0], looped[0][0], guessed[0][0]] == ["Breadcrumbs", "Lookup", "Latvian"]
    assert copied.flags.guards == looped.flags.guards == guessed.flags.guards == ("copy",)
    assert copied.flags.confidence == 0.0
    assert sorted(engine.asked[-1]) == ["breadcrumbs", "latvian", "lookup"]


def test_a_legitimate_copy_is_not_tried_again():
    engine = Table({}, scores={"Linux": -0.1})  # kept as it is, confidently
    [text] = translated(engine, ["Linux"])
    assert text[0][0] == "Linux" and text.flags.guards == () and engine.asked == [["Linux"]]
