"""The restructuring's checks: the bit-identity run (experiments.bitcheck) says equal only when both hashes are
and names the commits and the command; the translation hashes' comparison (experiments.hash_compare) counts the
lines the placeholder removal explains."""

import json

import pytest

from transformer_mt.experiments import bitcheck


@pytest.mark.parametrize(
    "differ, equal", [(None, True), ("model.safetensors", False), ("test_predictions.txt", False)]
)
def test_the_report_is_equal_only_when_both_hashes_are(tmp_path, monkeypatch, differ, equal):
    def run_at(commit, steps):
        found = {"model.safetensors": "a", "test_predictions.txt": "b", "test_bleu": 0.5}
        return {**found, differ: commit} if differ and commit == "f4caa61" else found

    monkeypatch.setattr(bitcheck, "run_at", run_at)
    monkeypatch.setattr(bitcheck, "matmul_gflops", lambda: 100.0)
    bitcheck.main(["--commits", "c1e52da", "f4caa61", "--output", str(tmp_path / "check.json")])
    report = json.loads((tmp_path / "check.json").read_text(encoding="utf-8"))
    assert report["equal"] is equal and (report["before"], report["after"]) == ("c1e52da", "f4caa61")
    assert report["command"].startswith("OMP_NUM_THREADS=1 python scripts/main_job.py --max_steps 200 ")


def test_a_hash_comparison_counts_the_lines_a_placeholder_removal_explains():
    from transformer_mt.experiments.hash_compare import explained

    sources = ["Cannot rename %s", "Open the file.", "Save %d files"]
    before = ["Kann %s nicht %s umbenennen", "Öffnen Sie die Datei.", "%d Dateien speichern"]
    after = ["Kann %s nicht umbenennen", "Datei öffnen.", "%d Dateien speichern"]
    assert explained(sources, before, after) == {"lines_differ": 2, "placeholder_removed": 1, "unexplained": [2]}
