"""The recipe search: one JSON per run, resumable, a table and a figure; the alignment probe it reads."""

import json
import subprocess

import pytest

from transformer_mt.diagnostics import read_probe
from transformer_mt.experiments import recipe_search, studies
from transformer_mt.scripts.recipe_search import main as search_main

from .utils import DATA, REPO


@pytest.mark.slow
def test_a_quick_search_writes_a_result_per_run_and_skips_finished_runs(tmp_path, capsys):
    argv = [
        "--data",
        str(DATA),
        "--output_dir",
        str(tmp_path / "out"),
        "--results_dir",
        str(tmp_path / "results"),
        "--candidates",
        "baseline",
        "init-0.05",
        "--seeds",
        "0",
        "--steps",
        "6",
        "--quick",
        "--figure",
        str(tmp_path / "search.png"),
    ]
    search_main(argv)
    table = capsys.readouterr().out
    assert "| baseline | sinusoidal |" in table and "| init-0.05 | sinusoidal |" in table
    results = {path.stem: json.loads(path.read_text()) for path in (tmp_path / "results").glob("*.json")}
    assert set(results) == {"baseline-sinusoidal-seed0", "init-0.05-sinusoidal-seed0"}
    for result in results.values():
        assert result["steps"] == 6 and result["validation_pairs"] == 48
        assert [row["step"] for row in result["probe"]] == [1, 2, 3, 4, 5, 6]
        assert set(result["probe"][0]["grad_norm"]) == {
            "embeddings",
            "encoder",
            "decoder_self_attention",
            "cross_attention",
            "decoder_feed_forward",
        }
        assert result["matmul_gflops"] > 0
        assert (
            result["commit"]
            == subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=REPO).stdout.strip()
        )  # the code that trained it
    assert results["init-0.05-sinusoidal-seed0"]["overrides"] == {"init_std": 0.05}
    assert (tmp_path / "search.png").stat().st_size > 10_000
    assert not (tmp_path / "out" / "runs").exists() or not any((tmp_path / "out" / "runs").iterdir())

    before = {path.name: path.stat().st_mtime_ns for path in (tmp_path / "results").glob("*.json")}
    search_main(argv)  # everything done: nothing trains again
    assert {path.name: path.stat().st_mtime_ns for path in (tmp_path / "results").glob("*.json")} == before


@pytest.mark.slow
def test_a_run_cut_short_resumes_from_its_checkpoint_and_probes_each_step_once(tmp_path):
    tokenizer = studies.shared_tokenizer(str(DATA), tmp_path, 400, max_train_samples=400)
    run_dir = tmp_path / "run"
    overrides = dict(studies.QUICK)
    first = studies.train_run(str(DATA), tokenizer, run_dir, overrides, 0, 4, save_steps=2, probe_steps=1)
    assert first["steps"] == 4 and (run_dir / "checkpoint-4").is_dir()
    (run_dir / "model.safetensors").unlink()  # as if killed after its last checkpoint
    second = studies.train_run(str(DATA), tokenizer, run_dir, overrides, 0, 6, save_steps=2, probe_steps=1)
    assert second["steps"] == 6
    assert [row["step"] for row in read_probe(str(run_dir))] == [1, 2, 3, 4, 5, 6]


def test_the_readme_table_is_the_shipped_search():
    """The candidate x seed table of docs/results.md is markdown_table of docs/results/recipe_search/."""
    results = [json.loads(path.read_text()) for path in sorted((REPO / "docs/results/recipe_search").glob("*.json"))]
    assert {result["candidate"] for result in results} >= {"baseline", "init-0.05"}
    assert recipe_search.markdown_table(results) in (REPO / "docs" / "results.md").read_text(encoding="utf-8")


def test_the_joined_table_shows_what_joined_inputs_keep():
    def result(candidate, seed, single, two, four):
        joined = {"2": {"bleu": two, "length_ratio": 0.8}, "4": {"bleu": four, "length_ratio": 0.5}}
        return {
            "candidate": candidate,
            "position_embedding_type": "sinusoidal",
            "seed": seed,
            "validation": {"bleu": single, "length_ratio": 1.0},
            "validation_joined": joined,
        }

    old = {"candidate": "old", "validation": {"bleu": 9.0}}  # scored before joined sets: left out
    table = recipe_search.joined_table(
        [
            result("init-0.05", 0, 20.0, 10.0, 4.0),
            result("init-0.05", 1, 10.0, 6.0, 2.0),
            result("joined-0.1", 0, 19.0, 19.0, 15.0),
            old,
        ]
    )
    lines = table.splitlines()
    assert lines[0] == "| candidate | positions | seeds | single pairs | 2 joined | 4 joined | 2 joined / single |"
    assert lines[2] == (
        "| init-0.05 | sinusoidal | 2 | 15.0 ± 7.1 (1.00) | 8.0 ± 2.8 (0.80) | 3.0 ± 1.4 (0.50) | 55% |"
    )
    assert lines[3] == (
        "| joined-0.1 | sinusoidal | 1 | 19.0 ± 0.0 (1.00) | 19.0 ± 0.0 (0.80) | 15.0 ± 0.0 (0.50) | 100% |"
    )
    assert len(lines) == 4 and recipe_search.joined_table([old]) == ""


def test_the_joined_table_in_the_docs_is_the_shipped_joined_search():
    results = [json.loads(path.read_text()) for path in sorted((REPO / "docs/results/joined_search").glob("*.json"))]
    assert {result["candidate"] for result in results} <= {"init-0.05", "joined-0.1", "joined-0.25"}
    assert all(result["steps"] == 2000 and result["validation_pairs"] == 400 for result in results)
    assert recipe_search.joined_table(results) in (REPO / "docs" / "results.md").read_text(encoding="utf-8")
