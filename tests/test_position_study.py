"""The position study end to end in its quick mode, and the pieces it is built from."""

import json
import math

import pytest

from transformer_mt.experiments import position_study, studies

from .utils import DATA, REPO, save_copy_model


def test_joined_inputs_join_sources_and_references_alike():
    sources, references = position_study.join_consecutive(["a", "b", "c", "d", "e"], ["A", "B", "C", "D", "E"], 2)
    assert sources == ["a b", "c d"] and references == ["A B", "C D"]


@pytest.mark.slow  # over 3 s on 2 cores: the fast loop keeps under 3 minutes
def test_sentence_counts_of_the_joined_variant_take_the_exact_table_beside_it(tmp_path):
    runs = tmp_path / "runs"
    for name, rows in (("learned-seed0-joined", 64), ("learned-seed0-joined-table32", 32), ("learned-seed0", 64)):
        _, tokenizer = save_copy_model(runs / name, position_embedding_type="learned", max_position_embeddings=rows)
        tokenizer.model_max_length = rows  # as training saves it: inputs past the table are cut
        tokenizer.save_pretrained(runs / name)
    joined = position_study.count_sentences(
        str(tmp_path), str(DATA), position_types=("learned",), joined=(2, 4), pairs=3, run_suffix="-joined"
    )
    assert list(joined) == [
        "learned 2 joined",
        "learned 4 joined",
        "learned, 32-row table 2 joined",
        "learned, 32-row table 4 joined",
    ]
    assert joined["learned 2 joined"]["reference"] == joined["learned, 32-row table 2 joined"]["reference"] >= 1
    assert joined["learned 4 joined"]["reference"] > joined["learned 2 joined"]["reference"]
    plain = position_study.count_sentences(str(tmp_path), str(DATA), position_types=("learned",), joined=(2,), pairs=3)
    assert list(plain) == ["learned 2 joined"]  # the plain variant's runs have no exact-table runs beside them


@pytest.mark.slow
def test_the_quick_study_writes_finite_numbers_and_a_figure(tmp_path):
    # Two types keep it quick; every type runs through the quick command below and the model tests.
    results = position_study.run_study(
        str(DATA), str(tmp_path / "study"), seeds=(0, 1), steps=2, quick=True, position_types=("sinusoidal", "learned")
    )
    assert (tmp_path / "study" / "position_study.png").stat().st_size > 10_000
    saved = json.loads((tmp_path / "study" / "position_study.json").read_text())
    assert saved["summary"] == json.loads(json.dumps(results["summary"]))
    assert set(results["summary"]) == {"plain", "+ joined pairs", position_study.EXACT_TABLE}
    # the paper's comparison: learned positions with a table as long as the training inputs, and what it does past it
    exact = [run for run in results["runs"] if run["variant"] == position_study.EXACT_TABLE]
    assert {run["position_embedding_type"] for run in exact} == {"learned"} and len(exact) == 2
    for run in exact:
        past = run["past_the_table"]
        assert past["table_positions"] == results["recipe"]["max_source_length"]
        assert past["inputs_cut"]["test, 1-10 tokens"] == 0 and past["inputs_cut"]["2 joined pairs"] > 0
    kept = position_study.markdown_kept(results, longer=4)
    assert kept.count("\n") == 1 + 5 and "| learned + joined pairs, learned table of the training length | 2 |" in kept
    for variant in (results["summary"][name] for name in ("plain", "+ joined pairs")):
        assert set(variant) == {"sinusoidal", "learned"}
        for by_set in variant.values():
            assert "2 joined pairs" in by_set and any(name.startswith("test, ") for name in by_set)
            for scores in by_set.values():
                assert scores["bleu"]["n"] == 2
                assert all(math.isfinite(v) for metric in scores.values() for v in metric.values())
    lengths = {name: s["mean_source_tokens"] for name, s in results["sets"].items()}
    assert lengths["2 joined pairs"] > lengths["test, 1-10 tokens"]
    learned = [run for run in results["runs"] if run["position_embedding_type"] == "learned"]
    assert all(run["untrained_rows"]["trained_positions"] <= 64 for run in learned)
    table = position_study.markdown_summary(results)
    assert table.count("\n") == len(results["sets"]) + 1 and "learned + joined pairs" in table
    assert "| test, all pairs | " in table


@pytest.mark.slow
def test_a_study_keeps_one_result_per_run_and_never_trains_a_scored_run_again(tmp_path, monkeypatch):
    output, results_dir = tmp_path / "study", tmp_path / "results"
    first = position_study.run_study(
        str(DATA),
        str(output),
        seeds=(0,),
        steps=4,
        quick=True,
        joined_variant=False,
        position_types=("sinusoidal", "rotary"),
        results_dir=str(results_dir),
    )
    files = sorted(path.name for path in results_dir.glob("*.json"))
    assert files == ["rotary-seed0.json", "sinusoidal-seed0.json"]
    saved = json.loads((results_dir / "rotary-seed0.json").read_text())
    assert saved["steps"] == 4 and saved["matmul_gflops"] > 0
    assert [step for step, _ in saved["source_gain"]] == [1, 2, 3, 4]
    assert not list((output / "runs" / "rotary-seed0").glob("checkpoint-*"))

    def no_training(*args, **kwargs):
        raise AssertionError("a scored run was trained again")

    monkeypatch.setattr(studies, "train_run", no_training)
    # A second invocation for another seed set only aggregates what is there: the summary spans every scored run.
    again = position_study.run_study(
        str(DATA),
        str(output),
        seeds=(0,),
        steps=4,
        quick=True,
        joined_variant=False,
        position_types=("sinusoidal",),
        results_dir=str(results_dir),
    )
    assert again["summary"] == json.loads(json.dumps(first["summary"]))
    seeds_table = position_study.markdown_seeds(again)
    assert seeds_table.splitlines()[0] == "| positions | seed 0 | mean ± sd | best - worst |"
    bleu = saved["scores"]["test, all pairs"]["bleu"]
    assert f"| rotary | {bleu:.1f} | {bleu:.1f} ± 0.0 | 0.0 |" in seeds_table
    with pytest.raises(ValueError, match=r"runs of \[4\] steps besides 6"):
        position_study.run_study(
            str(DATA), str(output), seeds=(), steps=6, quick=True, joined_variant=False, results_dir=str(results_dir)
        )


def test_the_readme_tables_are_the_shipped_studys_own():
    """docs/results.md's position-study tables are those scripts/position_study.py prints of
    docs/results/position_study.json (the runs the figure shows), which holds every run in
    docs/results/position_study/ (plain) and docs/results/position_study_joined/ (trained with joined pairs): four
    types, three seeds or more each."""
    results = json.loads((REPO / "docs" / "results" / "position_study.json").read_text(encoding="utf-8"))
    readme = (REPO / "docs" / "results.md").read_text(encoding="utf-8")
    joined = [variant for variant in results["summary"] if variant != "plain"]
    tables = [
        position_study.markdown_summary(results, ["plain"]),
        position_study.markdown_summary(results, joined),
        position_study.markdown_seeds(results),
        position_study.markdown_kept(results),
    ]
    rows = [row for table in tables for row in table.splitlines()[2:]]
    assert len(rows) == 2 * len(results["sets"]) + 4 + 4 * 2 + 1 and all(row in readme for row in rows)
    shipped = [
        json.loads(path.read_text())
        for folder in ("position_study", "position_study_joined")
        for path in (REPO / "docs" / "results" / folder).glob("*.json")
    ]
    assert sorted(map(json.dumps, results["runs"])) == sorted(map(json.dumps, shipped))
    assert results["recipe"]["max_steps"] == 2000
    assert [run["position_embedding_type"] for run in results["runs"]][0] == "sinusoidal"
    seeds = {
        (variant, kind): {
            run["seed"] for run in shipped if (run["variant"], run["position_embedding_type"]) == (variant, kind)
        }
        for variant, kinds in results["summary"].items()
        for kind in kinds
    }
    assert {kind for variant, kind in seeds} == {"sinusoidal", "learned", "alibi", "rotary"}
    assert len(seeds) == 4 * 2 + 1 and all(len(found) >= 3 for found in seeds.values()), seeds


@pytest.mark.slow
def test_the_quick_command_is_quick(tmp_path, capsys):
    from transformer_mt.scripts.position_study import main

    main(
        [
            "--quick",
            "--data",
            str(DATA),
            "--output_dir",
            str(tmp_path / "study"),
            "--position_types",
            "sinusoidal",
            "alibi",
        ]
    )
    results = json.loads((tmp_path / "study" / "position_study.json").read_text())
    assert results["seeds"] == [0] and results["recipe"]["max_steps"] == 20  # one seed, 20 steps
    assert set(results["summary"]) == {"plain"} and set(results["summary"]["plain"]) == {"sinusoidal", "alibi"}
    assert "| 2 joined pairs |" in capsys.readouterr().out

    # the same models, counted: how many sentences they write for joined inputs
    main(
        [
            "--quick",
            "--count_sentences",
            "--data",
            str(DATA),
            "--output_dir",
            str(tmp_path / "study"),
            "--position_types",
            "sinusoidal",
            "alibi",
        ]
    )
    counts = json.loads((tmp_path / "study" / "sentence_counts.json").read_text())
    assert set(counts) == {"sinusoidal 2 joined", "alibi 2 joined"}
    assert all(entry["reference"] >= 1.5 and entry["output"] >= 0 for entry in counts.values())
    assert "| alibi 2 joined |" in capsys.readouterr().out
