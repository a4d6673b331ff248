"""The local evaluate metric module: scores equal sacrebleu's own corpus functions, loading needs no network."""

import socket

import evaluate
import pytest
import sacrebleu

from transformer_mt import metrics
from transformer_mt.metrics import load_translation_metric


PREDICTIONS = ["The cat sat on the mat.", "Click the OK button to close the dialog.", "Open the file menu"]
REFERENCES = ["The cat is on the mat.", "Click OK to close the dialog.", "Open the File menu."]
SECOND_REFERENCES = ["A cat sat on the mat.", "Press the OK button to close the dialog box.", "Open the file menu."]


@pytest.fixture(scope="module")
def metric(tmp_path_factory):
    return load_translation_metric(cache_dir=str(tmp_path_factory.mktemp("metric_cache")))


def test_perfect_match_scores_100(metric):
    result = metric.compute(predictions=REFERENCES, references=REFERENCES)
    assert result["bleu"] == pytest.approx(100.0)
    assert result["chrf"] == pytest.approx(100.0)


def test_partial_match_equals_sacrebleu(metric):
    result = metric.compute(predictions=PREDICTIONS, references=REFERENCES)
    assert result["bleu"] == sacrebleu.corpus_bleu(PREDICTIONS, [REFERENCES]).score
    assert result["chrf"] == sacrebleu.corpus_chrf(PREDICTIONS, [REFERENCES]).score
    assert 0 < result["bleu"] < 100 and 0 < result["chrf"] < 100
    assert result["length_ratio"] == sacrebleu.corpus_bleu(PREDICTIONS, [REFERENCES]).ratio


def test_length_ratio_shows_dropped_halves(metric):
    references = ["the cat sat on the mat . the dog lay on the rug ."]
    half = metric.compute(predictions=["the cat sat on the mat ."], references=references)
    assert half["length_ratio"] == pytest.approx(0.5)


def test_multiple_references_equal_sacrebleu(metric):
    references = [list(pair) for pair in zip(REFERENCES, SECOND_REFERENCES)]
    result = metric.compute(predictions=PREDICTIONS, references=references)
    streams = [REFERENCES, SECOND_REFERENCES]
    assert result["bleu"] == sacrebleu.corpus_bleu(PREDICTIONS, streams).score
    assert result["chrf"] == sacrebleu.corpus_chrf(PREDICTIONS, streams).score
    # A second reference can only add matches.
    assert result["bleu"] > sacrebleu.corpus_bleu(PREDICTIONS, [REFERENCES]).score
    assert result["bleu_signature"].startswith("nrefs:2|")


@pytest.mark.parametrize("tokenize", ["13a", "intl", "char"])
def test_tokenize_and_signatures(metric, tokenize):
    result = metric.compute(predictions=PREDICTIONS, references=REFERENCES, tokenize=tokenize)
    assert result["bleu"] == sacrebleu.corpus_bleu(PREDICTIONS, [REFERENCES], tokenize=tokenize).score
    assert f"|tok:{tokenize}|" in result["bleu_signature"]
    assert result["chrf_signature"].startswith("nrefs:1|") and "|nw:0|" in result["chrf_signature"]
    assert set(result) == {"bleu", "chrf", "bleu_signature", "chrf_signature", "length_ratio"}


def test_chrf_plus_plus(metric):
    result = metric.compute(predictions=PREDICTIONS, references=REFERENCES, chrf_word_order=2)
    assert result["chrf"] == sacrebleu.corpus_chrf(PREDICTIONS, [REFERENCES], word_order=2).score


def test_uneven_reference_counts_raise(metric):
    with pytest.raises(ValueError, match="same number of references"):
        metric.compute(predictions=PREDICTIONS[:2], references=[[REFERENCES[0]], REFERENCES[1:3]])


def test_loads_by_path_offline(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    def no_network(*args, **kwargs):
        raise AssertionError("evaluate.load tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    metric = evaluate.load(metrics.__file__, cache_dir=str(tmp_path))
    assert metric.name == "translation_metrics"
    assert metric.compute(predictions=["hello world"], references=["hello world"])["chrf"] == 100.0
