"""The steps around the engine (transformer_mt.steps): each step's before and after halves on records, the pipeline
built from the options and the model, and one Decoder whose re-decode reuses what the before halves did."""

import logging
from types import SimpleNamespace

from transformer_mt.options import TranslationOptions
from transformer_mt.steps import (
    CaseStep,
    Decoder,
    MarkupStep,
    Sentence,
    SpanRepairStep,
    SpanTokenStep,
    TermStep,
    pipeline,
    transforms,
)
from transformer_mt.text.languages import DE, EN, Languages
from transformer_mt.translation import translate_texts

from .utils import require


def record(source: str, prefix: str | None = None) -> Sentence:
    return Sentence(source, "1", prefix, folded=source, shown=source, shown_prefix=prefix)


def test_case_step_folds_before_and_gives_the_case_back_after():
    sentences = [record("OPEN THE FILE."), record("Save The Document"), record("KEEP IT", prefix="KEEP")]
    CaseStep(TranslationOptions(), Languages(EN, DE)).before(sentences)
    assert [(s.folded, s.shown, s.case) for s in sentences] == [
        ("Open the file.", "Open the file.", "upper"),
        ("Save the document", "Save the document", "title"),
        ("KEEP IT", "KEEP IT", "normal"),
    ]  # a sentence with a forced beginning is shown as given
    for sentence, text in zip(sentences, ["Öffnen Sie die Datei.", "Dokument speichern", "KEEP ES"]):
        sentence.hypotheses = [(text, -1.0)]
    CaseStep(TranslationOptions(), Languages(EN, DE)).after(sentences)
    assert [s.hypotheses for s in sentences] == [
        [("ÖFFNEN SIE DIE DATEI.", -1.0)],
        [("Dokument speichern", -1.0)],
        [("KEEP ES", -1.0)],
    ]
    html = [record("Save The Document")]
    CaseStep(TranslationOptions(format="html"), Languages(EN, DE)).before(html)
    assert (html[0].shown, html[0].case) == ("Save The Document", "normal")  # a label's case is the markup's


def test_span_token_step_shows_spans_as_tokens_and_puts_them_back():
    sentences = [record("Open %s in %d steps", prefix="Öffne %s")]
    SpanTokenStep().before(sentences)
    assert sentences[0].shown == "Open {0} in {1} steps" and sentences[0].shown_prefix == "Öffne {0}"
    sentences[0].hypotheses = [("Öffne {0} in {1} Schritten", None), ("{1} Schritte für {0}", None)]
    SpanTokenStep().after(sentences)
    assert sentences[0].hypotheses == [("Öffne %s in %d Schritten", None), ("%d Schritte für %s", None)]


def test_term_step_annotates_only_for_a_model_that_learned_to_and_always_strips_the_marks():
    options = TranslationOptions(glossary=(("file", "Akte"),))
    sentences = [record("Open the file.")]
    TermStep(options, annotate=True).before(sentences)
    assert sentences[0].shown == "Open the file ⟦Akte⟧."
    plain = [record("Open the file.")]
    TermStep(options, annotate=False).before(plain)
    assert plain[0].shown == "Open the file."
    for sentence in (sentences, plain):
        sentence[0].hypotheses = [("Öffnen Sie die Akte ⟦Akte⟧.", None)]
        TermStep(options, annotate=False).after(sentence)
        assert sentence[0].hypotheses == [("Öffnen Sie die Akte.", None)]


def test_span_repair_step_puts_a_lost_span_back_or_reports_it():
    def aligner(sources, targets):  # word i of the source to word i of the translation
        return [[(i, i) for i in range(min(len(s.split()), len(t.split())))] for s, t in zip(sources, targets)]

    sentences = [record("Delete %s now")]
    sentences[0].hypotheses = [("Lösche das jetzt", None)]
    SpanRepairStep(aligner, repair=True).after(sentences)
    assert "%s" in sentences[0].hypotheses[0][0] and sentences[0].report.repaired
    unrepaired = [record("Delete %s now")]
    unrepaired[0].hypotheses = [("Lösche das jetzt", None)]
    SpanRepairStep(aligner, repair=False).after(unrepaired)
    assert unrepaired[0].hypotheses == [("Lösche das jetzt", None)] and unrepaired[0].report.lost
    twice = [record("Delete %s now"), record("Delete %s now")]
    for sentence in twice:
        sentence.hypotheses = [("Lösche %s jetzt %s", None)]
    SpanRepairStep(None, repair=False).after(twice[:1])  # reported as lost, left as written
    assert twice[0].hypotheses == [("Lösche %s jetzt %s", None)] and [s.text for s in twice[0].report.lost] == ["%s"]
    SpanRepairStep(None, repair=True).after(twice[1:])  # removed without an alignment
    assert twice[1].hypotheses == [("Lösche %s jetzt", None)] and [s.text for s in twice[1].report.removed] == ["%s"]


def test_markup_step_aligns_each_hypothesis_to_its_folded_sentence():
    seen = []

    def aligner(sources, targets):
        seen.append((sources, targets))
        return [[(0, 0)] for _ in sources]

    sentences = [record("OPEN IT")]
    sentences[0].folded = "Open it"
    sentences[0].hypotheses = [("Öffne es", None), ("", None)]
    MarkupStep(aligner).after(sentences)
    assert seen == [(["Open it"], ["Öffne es"])] and sentences[0].alignments == [[(0, 0)], []]


class Echo:
    """An engine that writes each sentence reversed word by word, counting what it is asked."""

    name, reason, device, workers, max_positions = "echo", "test", "cpu", 1, None
    calibration = calibration_problem = None  # the protocol's: no calibration beside it
    tokenizer = None  # no character offsets: no alignments, spans reported rather than repaired
    generation_config = SimpleNamespace(early_stopping=True, num_beams=1)

    def __init__(self, span_tokens=False, term_annotations=False):
        self.config = SimpleNamespace(span_tokens=span_tokens, term_annotations=term_annotations)
        self.calls = []

    def translate_sentences(self, sentences, options, names=None, target_prefix=None):
        self.calls.append((list(sentences), options.num_beams, target_prefix))
        return [
            [(" ".join(reversed(sentence.split())), None)] * options.num_return_sequences for sentence in sentences
        ]


def test_the_pipeline_is_built_from_the_options_and_the_model():
    engine = Echo(span_tokens=True, term_annotations=True)
    options = TranslationOptions(format="html", glossary=(("file", "Akte"),))
    kinds = [type(step) for step in pipeline(engine, options, ["Open the file."])]
    assert kinds == [CaseStep, SpanRepairStep, SpanTokenStep, TermStep]  # no offsets: no markup alignment
    assert [type(step) for step in pipeline(Echo(), TranslationOptions(fold_case=False), [])] == [
        SpanRepairStep,
        TermStep,
    ]


def test_the_decoder_redecodes_through_the_same_records_and_folds_once(monkeypatch):
    engine = Echo(span_tokens=True)
    folds = []
    real = transforms.fold_sentences
    monkeypatch.setattr(
        transforms,
        "fold_sentences",
        lambda sentences, rules, titles: folds.append(sentences) or real(sentences, rules, titles=titles),
    )
    decoder = Decoder(engine, TranslationOptions(guards=False))
    first = decoder.decode(["OPEN %s NOW", "Close it"], ["1", "2"])
    assert [hypotheses[0][0] for hypotheses in first] == ["NOW %s OPEN", "it Close"]
    assert engine.calls[0][0] == ["Open {0} now", "Close it"]  # folded, then masked
    again = decoder.redecode([0], TranslationOptions(guards=False, num_beams=3, num_return_sequences=2))
    assert engine.calls[1][:2] == (["Open {0} now"], 3) and folds == [["OPEN %s NOW", "Close it"]]
    assert again[0] == [("NOW %s OPEN", None)] * 2
    other = decoder.redecode([1], TranslationOptions(guards=False, fold_case=False))  # another before: a new record
    assert other[0] == [("it Close", None)] and len(folds) == 1


class Words:
    """A token a word, with character offsets as a fast tokenizer gives them: alignments can be asked for."""

    is_fast = True

    def __call__(self, texts):
        return {"input_ids": [text.split() for text in texts]}


class Rated(Echo):
    """An engine that translates one sentence and copies every other one, rated 0.1 by its calibration (so a short
    copy sets off the copy guard), and counts the decodes and the alignments it is asked for."""

    calibration = SimpleNamespace(confidence=lambda values: 0.1, off_length=lambda source, output: False)

    def __init__(self, table: dict[str, str]):
        super().__init__()
        self.config.source_lang, self.tokenizer, self.table, self.aligned = "en", Words(), table, []

    def translate_sentences(self, sentences, options, names=None, target_prefix=None):
        self.calls.append((list(sentences), options.num_beams, target_prefix))
        return [[(self.table.get(sentence, sentence), -0.5)] * options.num_return_sequences for sentence in sentences]

    def align_pairs(self, sources, targets, options):
        self.aligned.append(list(sources))
        return [[(i, i) for i in range(min(len(s.split()), len(t.split())))] for s, t in zip(sources, targets)]


def test_an_inline_elements_own_text_is_decoded_without_guards_warnings_or_alignment(caplog):
    """<kbd>S</kbd>'s own text "S" is translated alone only as a hint for where the element goes: a copy of it is
    no failure of the user's text, so it sets off no guard, no warning naming a text the user never sent, no
    re-decode, and no alignment (nothing reads one)."""
    require("bs4", "HTML needs BeautifulSoup: pip install -e '.[serve]'")
    engine = Rated({"Press S to save.": "Drücken Sie S zum Speichern."})
    with caplog.at_level(logging.WARNING):
        [text] = translate_texts(engine, ["Press <kbd>S</kbd> to save."], TranslationOptions(format="html"))
    assert text[0][0] == "Drücken Sie <kbd>S</kbd> zum Speichern."
    assert caplog.records == []
    assert sorted(sentence for sentences, *_ in engine.calls for sentence in sentences) == ["Press S to save.", "S"]
    assert engine.aligned == [["Press S to save."]]
