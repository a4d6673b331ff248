"""Scores of given pairs: a generated hypothesis scores what translate_nbest reported for it, the model and its
CTranslate2 export agree, and score.py --pairs writes them row by row."""

import pytest

from transformer_mt.engines import GenerateEngine, load_engine
from transformer_mt.engines.pair_scores import check_pairs, read_pairs
from transformer_mt.scripts import score as score_script
from transformer_mt.translation import translate_nbest

from .utils import COPY_CORPUS, require


@pytest.fixture
def saved(beam4_copy_model):
    return beam4_copy_model


@pytest.mark.parametrize("length_penalty", [1.0, 0.0])
def test_a_generated_hypothesis_scores_what_the_nbest_list_said(saved, length_penalty):
    _, model, tokenizer = saved
    sources = COPY_CORPUS[:8]
    nbest = translate_nbest(
        model,
        tokenizer,
        sources,
        num_beams=4,
        num_return_sequences=2,
        scores=True,
        split_sentences=False,
        length_penalty=length_penalty,
    )
    pairs = [
        (source, text, score)
        for source, hypotheses in zip(sources, nbest)
        for text, score in hypotheses
        if text.strip()
    ]  # an empty hypothesis (length penalty 0 favours them) has no text to score
    given = GenerateEngine(model, tokenizer).score_pairs(
        [p[0] for p in pairs], [p[1] for p in pairs], length_penalty=length_penalty
    )
    # a hypothesis whose text re-tokenizes to other ids than generate() wrote is another sequence: compare the rest
    same = [
        (found.score, reported)
        for (source, text, reported), found in zip(pairs, given)
        if tokenizer.decode(tokenizer(text_target=text)["input_ids"], skip_special_tokens=True) == text
    ]
    assert len(same) >= 0.75 * len(pairs)
    matching = sum(abs(found - reported) < 1e-4 for found, reported in same)
    assert matching >= 0.75 * len(pairs), same
    for pair in given:
        assert pair.per_token == pytest.approx(pair.log_prob / pair.tokens) and pair.log_prob < 0


def test_the_ctranslate2_export_scores_alike(saved, tmp_path, monkeypatch):
    require("ctranslate2", "the fast engine needs ctranslate2: pip install 'transformer-mt[fast]'")
    monkeypatch.setenv("TRANSFORMER_MT_CACHE", str(tmp_path / "cache"))
    path, model, tokenizer = saved
    targets = [
        "Klicken Sie auf Speichern.",
        "Schließen Sie das Fenster.",
        "Wählen Sie die Zellen aus.",
        "Open the file.",
        "Löscht die ausgewählten Zeilen und schließt das Fenster.",
    ]
    sources = COPY_CORPUS[: len(targets)]
    torch_scores = load_engine(str(path), "transformers").score_pairs(sources, targets, batch_size=2)
    fast_scores = load_engine(str(path), "ctranslate2").score_pairs(sources, targets, batch_size=2)
    assert [pair.tokens for pair in fast_scores] == [pair.tokens for pair in torch_scores]
    assert [pair.log_prob for pair in fast_scores] == pytest.approx([pair.log_prob for pair in torch_scores], abs=1e-3)
    assert len({round(pair.log_prob, 3) for pair in torch_scores}) == len(targets)  # they differ: a real check


def test_score_py_pairs_writes_a_row_a_pair(saved, tmp_path, capsys):
    path, model, tokenizer = saved
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("Open the file.\tÖffnen Sie die Datei.\nPress Enter.\tPress Enter.\n", encoding="utf-8")
    score_script.main(["--model", str(path), "--pairs", str(pairs)])
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    expected = GenerateEngine(model, tokenizer).score_pairs(*read_pairs(str(pairs)))
    assert [row[0] for row in rows] == ["1", "2"]
    assert [float(row[1]) for row in rows] == pytest.approx([pair.log_prob for pair in expected], abs=1e-4)
    assert [int(row[2]) for row in rows] == [pair.tokens for pair in expected]
    assert float(rows[1][1]) > float(rows[0][1])  # the copy model finds its own copy more likely

    pairs.write_text("Open the file.\tÖffnen Sie die Datei.\nonly one field\n", encoding="utf-8")
    with pytest.raises(SystemExit) as stopped:
        score_script.main(["--model", str(path), "--pairs", str(pairs)])
    assert stopped.value.code == 2
    assert "pairs.tsv, line 2: a pair is source<TAB>target, got 1 field(s)" in capsys.readouterr().err


def test_bad_pairs_are_named():
    with pytest.raises(ValueError, match="got 2 sources and 1 targets"):
        check_pairs(["a", "b"], ["c"])
    with pytest.raises(ValueError, match="pair 2 has an empty target"):
        check_pairs(["a", "b"], ["c", " "])
