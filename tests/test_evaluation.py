"""Reportable scores: BLEU, chrF, chrF++ and TER with sacreBLEU's signatures, for a model, a CTranslate2 export or a
file of hypotheses, on any split."""

import json

import pytest
import sacrebleu

from transformer_mt.evaluation import ScoreSettings, evaluate_split, score
from transformer_mt.scripts.score import main as evaluate_main

from .utils import DATA, save_tiny


HYPOTHESES = ["Klicken Sie auf Speichern.", "Schließen Sie das Fenster.", "Das ist ein Test."]
REFERENCES = ["Klicken Sie auf Speichern.", "Schließen Sie den Dialog.", "Dies ist ein Test."]


def test_scores_are_sacrebleus_with_their_signatures():
    results = score(HYPOTHESES, REFERENCES)
    assert results["bleu"]["score"] == round(sacrebleu.corpus_bleu(HYPOTHESES, [REFERENCES]).score, 2)
    assert results["chrf"]["score"] == round(sacrebleu.corpus_chrf(HYPOTHESES, [REFERENCES]).score, 2)
    assert results["chrf++"]["score"] == round(sacrebleu.corpus_chrf(HYPOTHESES, [REFERENCES], word_order=2).score, 2)
    assert results["ter"]["score"] == round(sacrebleu.corpus_ter(HYPOTHESES, [REFERENCES]).score, 2)
    assert results["bleu"]["signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:")
    assert "nw:2" in results["chrf++"]["signature"] and "nw:0" in results["chrf"]["signature"]
    assert results["ter"]["signature"].startswith("nrefs:1|case:lc|tok:tercom")


def test_bootstrap_adds_a_confidence_interval_and_says_so():
    results = score(HYPOTHESES * 10, REFERENCES * 10, metrics=("bleu",), bootstrap=100)
    assert "|bs:100|" in results["bleu"]["signature"]
    assert results["bleu"]["ci95"] > 0 and abs(results["bleu"]["mean"] - results["bleu"]["score"]) < 10
    with pytest.raises(ValueError, match="3 hypotheses for 2 references"):
        score(HYPOTHESES, REFERENCES[:2])


def test_bootstrap_results_of_every_metric_are_written_as_json(tmp_path):
    """chrF's bootstrap mean and interval are numpy float32, which `--output` could not write (issue 51)."""
    import json

    from transformer_mt.commands.score import write_results

    results = score(HYPOTHESES * 10, REFERENCES * 10, metrics=("bleu", "chrf", "ter"), bootstrap=20)
    write_results(results, str(tmp_path / "scores.json"))
    assert json.loads((tmp_path / "scores.json").read_text(encoding="utf-8")) == results


def test_a_file_of_hypotheses_is_scored_against_the_split(tmp_path):
    from transformer_mt.data import load_parallel_data

    references = list(load_parallel_data(str(DATA))["test"]["de"][:5])
    path = tmp_path / "test.hyp"
    path.write_text("\n".join(references) + "\n", encoding="utf-8")
    results = evaluate_split(str(DATA), ScoreSettings(max_samples=5), hypotheses_file=str(path))
    assert results["pairs"] == 5 and results["scores"]["bleu"]["score"] == 100.0


def test_joined_pairs_are_scored_as_joined_inputs(tmp_path):
    from transformer_mt.data import join_consecutive, load_parallel_data

    test = load_parallel_data(str(DATA))["test"]
    _, joined = join_consecutive(list(test["en"][:6]), list(test["de"][:6]), 2)
    path = tmp_path / "joined.hyp"
    path.write_text("\n".join(joined) + "\n", encoding="utf-8")
    results = evaluate_split(str(DATA), ScoreSettings(max_samples=6, join_pairs=2), hypotheses_file=str(path))
    assert results["pairs"] == 3 and results["joined_pairs"] == 2 and results["scores"]["bleu"]["score"] == 100.0
    single = evaluate_split(str(DATA), ScoreSettings(max_samples=3), hypotheses_file=str(path))
    assert single["scores"]["bleu"]["score"] < 100  # the same lines against single references do not match


def test_a_split_is_scored_by_a_column_too(tmp_path, capsys):
    from transformer_mt.scripts import score as score_script

    data = tmp_path / "data"
    data.mkdir()
    rows = [
        ("Open the file.", "Öffnen Sie die Datei.", "help"),
        ("Close it.", "Schließen Sie es.", "help"),
        ("A package.", "Ein Paket.", "ddtp"),
        ("A library.", "Eine Bibliothek.", "ddtp"),
    ]
    (data / "test.tsv").write_text(
        "en\tde\torigin\n" + "".join("\t".join(row) + "\n" for row in rows), encoding="utf-8"
    )
    hypotheses = tmp_path / "test.hyp"
    hypotheses.write_text("Öffnen Sie die Datei.\nSchließen Sie es.\nEtwas anderes.\nNoch etwas.\n", encoding="utf-8")
    results = evaluate_split(
        str(data), ScoreSettings(metrics=("bleu",), by_column="origin"), hypotheses_file=str(hypotheses)
    )
    assert {value: group["pairs"] for value, group in results["by_origin"].items()} == {"ddtp": 2, "help": 2}
    assert results["by_origin"]["help"]["scores"]["bleu"]["score"] == 100.0
    assert results["by_origin"]["ddtp"]["scores"]["bleu"]["score"] < 10
    score_script.main(
        ["--hypotheses", str(hypotheses), "--data", str(data), "--by_column", "origin", "--metrics", "bleu"]
    )
    assert "origin=help (2 pairs): BLEU 100.00" in capsys.readouterr().out
    with pytest.raises(ValueError, match="score either by a column or with joined pairs"):
        ScoreSettings(by_column="origin", join_pairs=2)


def test_a_model_and_its_ctranslate2_export_are_scored_alike(tmp_path, capsys):
    from transformer_mt.bridges.ctranslate2 import export_ctranslate2

    save_tiny(tmp_path / "model")
    export_ctranslate2(str(tmp_path / "model"), str(tmp_path / "ct2"))
    outputs = {}
    for name in ("model", "ct2"):
        evaluate_main(
            [
                "--model",
                str(tmp_path / name),
                "--data",
                str(DATA),
                "--max_samples",
                "4",
                "--num_beams",
                "1",
                "--output",
                str(tmp_path / f"{name}.json"),
            ]
        )
        printed = capsys.readouterr().out
        assert "BLEU " in printed and "nrefs:1|" in printed and "TER " in printed
        outputs[name] = json.loads((tmp_path / f"{name}.json").read_text())
    assert outputs["model"]["scores"] == outputs["ct2"]["scores"]  # the export decodes as generate() does
    with pytest.raises(SystemExit):
        evaluate_main(
            ["--model", str(tmp_path / "model"), "--data", str(DATA), "--output", str(tmp_path / "model.json")]
        )
    assert "exists; results never replace a file" in capsys.readouterr().err


SYSTEM_REFERENCES = ["Das ist ein Test.", "Hallo Welt.", "Ich bin hier.", "Guten Morgen."] * 5
BASELINE = ["Das ist ein Test.", "Hallo Welt!", "Ich bin da.", "Guten Tag."] * 5
BETTER = ["Das ist Test.", "Hallo Welt.", "Ich bin hier.", "Guten Morgen."] * 5


def test_paired_tests_are_sacrebleus():
    from sacrebleu.significance import PairedTest

    from transformer_mt.evaluation import compare_systems

    compared = compare_systems({"base": BASELINE, "better": BETTER}, SYSTEM_REFERENCES, ("bleu", "chrf"), "bs", 100)
    _, expected = PairedTest(
        [("base", BASELINE), ("better", BETTER)],
        {"BLEU": sacrebleu.BLEU(), "chrF": sacrebleu.CHRF()},
        [SYSTEM_REFERENCES],
        test_type="bs",
        n_samples=100,
    )()
    assert compared["metrics"]["bleu"]["systems"]["better"]["p_value"] == expected["BLEU"][1].p_value
    assert compared["metrics"]["chrf"]["systems"]["better"]["score"] == round(expected["chrF2"][1].score, 2)
    assert compared["metrics"]["bleu"]["systems"]["base"]["p_value"] is None
    assert "bs:100" in compared["metrics"]["bleu"]["signature"]
    randomized = compare_systems({"base": BASELINE, "better": BETTER}, SYSTEM_REFERENCES, ("bleu",), "ar", 100)
    assert "ar:100" in randomized["metrics"]["bleu"]["signature"]
    with pytest.raises(ValueError, match="at least 2 systems"):
        compare_systems({"base": BASELINE}, SYSTEM_REFERENCES)


def test_segment_scores_tokenizers_and_more_references():
    from transformer_mt.evaluation import segment_scores

    rows = segment_scores(BASELINE[:2], SYSTEM_REFERENCES[:2])
    assert rows[0] == {"bleu": 100.0, "chrf": 100.0}
    assert rows[1]["bleu"] == round(sacrebleu.sentence_bleu(BASELINE[1], [SYSTEM_REFERENCES[1]]).score, 2)
    chinese = score(["我们在这里。"], ["我们在这里。"], ("bleu",), tokenize="zh", lowercase=True)
    assert "tok:zh" in chinese["bleu"]["signature"] and "case:lc" in chinese["bleu"]["signature"]
    two = score(BASELINE, SYSTEM_REFERENCES, ("bleu",), more_references=[BASELINE])
    assert two["bleu"]["score"] == 100.0 and "nrefs:2" in two["bleu"]["signature"]
    with pytest.raises(ValueError, match="reference set 2"):
        score(BASELINE, SYSTEM_REFERENCES, ("bleu",), more_references=[BASELINE[:3]])


def test_score_py_compares_systems_writes_segments_and_reads_one_file(tmp_path, capsys):
    data = tmp_path / "my_test.tsv"
    data.write_text(
        "en\tde\n" + "".join(f"x{i}\t{ref}\n" for i, ref in enumerate(SYSTEM_REFERENCES)), encoding="utf-8"
    )
    base, better = tmp_path / "base.de", tmp_path / "better.de"
    base.write_text("\n".join(BASELINE) + "\n", encoding="utf-8")
    better.write_text("\n".join(BETTER) + "\n", encoding="utf-8")
    evaluate_main(
        [
            "--hypotheses",
            str(base),
            "--data",
            str(data),
            "--segment_scores",
            str(tmp_path / "lines.tsv"),
            "--metrics",
            "bleu",
        ]
    )
    assert "BLEU 59.42" in capsys.readouterr().out
    lines = (tmp_path / "lines.tsv").read_text().splitlines()
    assert len(lines) == 20 and lines[0] == "1\t100.0\t100.0"
    evaluate_main(
        [
            "--hypotheses",
            str(base),
            "--compare",
            str(better),
            "--paired",
            "bs",
            "--paired_samples",
            "100",
            "--data",
            str(data),
            "--metrics",
            "bleu",
            "chrf",
        ]
    )
    out = capsys.readouterr().out
    assert "paired bootstrap resampling (100 samples)" in out and f"{better}: 68.91" in out and "p = " in out
    with pytest.raises(SystemExit):
        evaluate_main(["--hypotheses", str(base), "--paired", "bs", "--data", str(data)])
    assert "--paired and --compare go together" in capsys.readouterr().err
