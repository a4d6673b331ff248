"""Checkpoint averaging: the mean of the tensors, loadable like the run's model, mismatches refused by name."""

import json
import shutil

import pytest
import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

from transformer_mt.scripts.average_checkpoints import main as average_main
from transformer_mt.training.averaging import average_checkpoints, last_complete

from .utils import saved_weights, train


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A 12-step run that keeps its checkpoints at steps 4, 8 and 12."""
    output_dir = tmp_path_factory.mktemp("average") / "run"
    train(output_dir, "--do_train", "--max_steps", "12", "--save_steps", "4", "--save_total_limit", "5")
    return output_dir


def test_the_average_is_the_mean_of_the_tensors_and_loads_like_the_run(run_dir, tmp_path):
    checkpoints = last_complete(run_dir, 3)
    assert [path.name for path in checkpoints] == ["checkpoint-4", "checkpoint-8", "checkpoint-12"]
    average_main([str(run_dir), "--last", "3", "--output_dir", str(tmp_path / "avg")])

    averaged = saved_weights(tmp_path / "avg")
    weights = [saved_weights(path) for path in checkpoints]
    assert averaged.keys() == weights[0].keys()
    for key, tensor in averaged.items():
        expected = (weights[0][key].double() + weights[1][key].double() + weights[2][key].double()) / 3
        torch.testing.assert_close(tensor, expected.float(), rtol=0, atol=0)
    assert any(not torch.equal(averaged[key], weights[2][key]) for key in averaged)  # not just the last one

    model = AutoModelForSeq2SeqLM.from_pretrained(tmp_path / "avg")
    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "avg")
    run_model = AutoModelForSeq2SeqLM.from_pretrained(run_dir)
    assert model.generation_config.num_beams == run_model.generation_config.num_beams
    assert (model.config.source_lang, model.config.target_lang) == ("en", "de")  # training wrote them; kept
    assert model.get_output_embeddings().weight is model.get_input_embeddings().weight  # still tied
    torch.testing.assert_close(model.get_input_embeddings().weight.detach(), averaged["model.shared.weight"])
    assert (
        tokenizer.decode(tokenizer("Click the Save button.")["input_ids"], skip_special_tokens=True)
        == "Click the Save button."
    )
    recorded = json.loads((tmp_path / "avg" / "averaged_from.json").read_text())["checkpoints"]
    assert recorded == list(map(str, checkpoints))
    assert not any((tmp_path / "avg" / name).exists() for name in ("optimizer.pt", "trainer_state.json"))


def test_a_float16_average_is_half_the_size_and_loads_back_into_float32(run_dir, tmp_path):
    average_main([str(run_dir), "--last", "3", "--output_dir", str(tmp_path / "avg")])
    average_main([str(run_dir), "--last", "3", "--output_dir", str(tmp_path / "half"), "--dtype", "float16"])
    full, half = saved_weights(tmp_path / "avg"), saved_weights(tmp_path / "half")
    weights = [saved_weights(path) for path in last_complete(run_dir, 3)]
    assert all(tensor.dtype == torch.float16 for tensor in half.values())
    for key in full:  # the float64 mean, rounded once
        expected = sum(checkpoint[key].double() for checkpoint in weights) / 3
        torch.testing.assert_close(half[key], expected.half(), rtol=0, atol=0)
    size = {name: (tmp_path / name / "model.safetensors").stat().st_size for name in ("avg", "half")}
    assert size["half"] < 0.55 * size["avg"]
    model = AutoModelForSeq2SeqLM.from_pretrained(tmp_path / "half")
    assert {parameter.dtype for parameter in model.parameters()} == {torch.float32}
    torch.testing.assert_close(
        model.get_input_embeddings().weight.detach(), half["model.shared.weight"].float(), rtol=0, atol=0
    )


def test_named_checkpoints_are_averaged_and_output_is_never_overwritten(run_dir, tmp_path, capsys):
    named = [str(run_dir / "checkpoint-8"), str(run_dir / "checkpoint-12")]
    average_main([*named, "--output_dir", str(tmp_path / "avg")])
    before = (tmp_path / "avg" / "model.safetensors").read_bytes()
    with pytest.raises(SystemExit):
        average_main([str(run_dir / "checkpoint-4"), named[1], "--output_dir", str(tmp_path / "avg")])
    assert "is not empty; pass --overwrite" in capsys.readouterr().err
    assert (tmp_path / "avg" / "model.safetensors").read_bytes() == before


def test_a_different_config_or_tokenizer_is_refused_by_name(run_dir, tmp_path):
    for field, value, kind in (("d_model", 64, "config"), ("tokenizer_fingerprint", "other", "tokenizer")):
        changed = tmp_path / f"checkpoint-{field}"
        shutil.copytree(run_dir / "checkpoint-12", changed)
        config = json.loads((changed / "config.json").read_text())
        config[field] = value
        (changed / "config.json").write_text(json.dumps(config))
        with pytest.raises(
            ValueError,
            match=rf"cannot average {changed} with .*checkpoint-8: their {kind} differs "
            rf"\({field}={value!r}",
        ):
            average_checkpoints([run_dir / "checkpoint-8", changed], tmp_path / f"out-{field}")
        assert not (tmp_path / f"out-{field}").exists()


def test_incomplete_checkpoints_are_refused_when_named_and_skipped_with_last(run_dir, tmp_path, caplog):
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    (copy / "checkpoint-12" / "optimizer.pt").unlink()
    with pytest.raises(
        ValueError, match=r"cannot average incomplete checkpoints: .*checkpoint-12/optimizer.pt: missing"
    ):
        average_checkpoints([copy / "checkpoint-8", copy / "checkpoint-12"], tmp_path / "out")
    assert [path.name for path in last_complete(copy, 2)] == ["checkpoint-4", "checkpoint-8"]
    assert "Skipping the incomplete checkpoint" in caplog.text and "checkpoint-12" in caplog.text
    with pytest.raises(
        ValueError,
        match=r"--last 3: .* holds only 2 complete checkpoint\(s\) \(checkpoint-4, "
        r"checkpoint-8\)",
    ):
        last_complete(copy, 3)


def test_a_dtype_too_narrow_for_the_weights_is_refused(tmp_path):
    from safetensors.torch import save_file

    from transformer_mt.training.averaging import average_weights

    paths = []
    for index, value in enumerate((1e5, 2e5)):  # beyond float16's largest finite value, 65504
        path = tmp_path / f"checkpoint-{index}"
        path.mkdir()
        save_file({"w": torch.full((2,), value), "step": torch.tensor([3])}, path / "model.safetensors")
        paths.append(path)
    assert average_weights(paths)["w"].tolist() == [1.5e5, 1.5e5]
    with pytest.raises(ValueError, match="w does not fit in torch.float16"):
        average_weights(paths, torch.float16)
    assert average_weights(paths, torch.bfloat16)["step"].dtype == torch.int64  # integers keep their dtype
