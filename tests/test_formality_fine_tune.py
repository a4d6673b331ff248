"""A formality fine-tune's weights put in place of a shipped en→de model's
(transformer_mt.experiments.formality_fine_tune): the last stage's weights in float16, the card and terms kept, every
stage recorded with its data's licences, and the shipped model left whole when a stage is missing."""

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file

from transformer_mt.experiments.formality_fine_tune import ship_weights


def test_the_last_stage_replaces_the_weights_and_every_stage_is_recorded(trained_tiny_model, tmp_path):
    shipped = shutil.copytree(trained_tiny_model, tmp_path / "models" / "shipped")
    (shipped / "README.md").write_text("# the card\n", encoding="utf-8")
    (shipped / "terms.tsv").write_text("widget\tWidget\n", encoding="utf-8")
    (shipped / "calibration.json").write_text("{}", encoding="utf-8")
    first = shutil.copytree(trained_tiny_model, tmp_path / "runs" / "first")
    second = shutil.copytree(trained_tiny_model / "checkpoint-10", tmp_path / "runs" / "second")
    shutil.copy2(trained_tiny_model / "training_info.json", second / "training_info.json")
    info = ship_weights(shipped, [(first, "aaaaaaa"), (second, "bbbbbbb")])
    weights, expected = load_file(shipped / "model.safetensors"), load_file(second / "model.safetensors")
    assert weights.keys() == expected.keys()
    assert all(torch.equal(weights[name], expected[name].to(torch.float16)) for name in weights)
    assert (shipped / "README.md").read_text(encoding="utf-8") == "# the card\n"
    assert (shipped / "terms.tsv").read_text(encoding="utf-8") == "widget\tWidget\n"  # the shipped glossary, kept
    assert not (shipped / "calibration.json").exists()  # fitted on other weights: measured again
    stages = json.loads((shipped / "training_info.json").read_text(encoding="utf-8"))["fine_tunes"]
    assert info["fine_tunes"] == stages
    starts = [("aaaaaaa", str(shipped)), ("bbbbbbb", str(first))]
    assert [(stage["commit"], stage["from"]) for stage in stages] == starts
    run_sources = json.loads((first / "training_info.json").read_text(encoding="utf-8"))["data_sources"]
    assert [source["origin"] for source in stages[0]["data_sources"]] == [source["origin"] for source in run_sources]
    assert all("license" in source for source in stages[0]["data_sources"])  # from ../shared/data's cards, if there
    assert sorted(path.name for path in shipped.parent.iterdir()) == ["shipped"]


def test_a_stage_without_its_record_leaves_the_shipped_model_whole(trained_tiny_model, tmp_path):
    shipped = shutil.copytree(trained_tiny_model, tmp_path / "models" / "shipped")
    before = (shipped / "model.safetensors").read_bytes()
    with pytest.raises(FileNotFoundError, match="training_info.json"):
        ship_weights(shipped, [(trained_tiny_model / "checkpoint-10", "aaaaaaa")])
    assert (shipped / "model.safetensors").read_bytes() == before
    assert sorted(path.name for path in shipped.parent.iterdir()) == ["shipped"]
    with pytest.raises(ValueError, match="stages: give at least one fine-tune run"):
        ship_weights(shipped, [])
