"""scripts/gpu_check.py in its dry mode on the CPU: every check runs at the tiny size and reports numbers."""

import json
import math

import pytest
import torch

from transformer_mt.experiments import gpu_check
from transformer_mt.experiments.benchmarks import model_pair
from transformer_mt.scripts import gpu_check as command

from .utils import DATA


@pytest.mark.slow
def test_the_dry_run_runs_every_check_and_writes_the_json(tmp_path, capsys):
    command.main(["--dry_run", "--device", "cpu", "--data", str(DATA), "--output_dir", str(tmp_path)])
    results = json.loads((tmp_path / "gpu_check.json").read_text())
    assert results["dry_run"] and results["device"] == "cpu"
    assert results["bf16"]["ok"] and results["attention"]["ok"]
    assert results["attention"]["max_abs_logit_difference"] < 1e-4
    assert results["training"]["step_ms"] > 0 and results["training"]["mfu"] is None  # no known peak on a CPU
    for task in ("greedy b4", "beam-4 b4"):
        assert results["generation"][task]["same_tokens"] and results["generation"][task]["ratio_best"] > 0
    assert math.isfinite(results["main_job"]["test_bleu"]) and results["main_job"]["train_steps"] == 5
    server = results["server"]  # the main job's model served with --device on each engine
    assert server["same"] and isinstance(server["transformers"]["translatedText"], str)
    assert server["transformers_device"] == "cpu" and server["ctranslate2_device"] == "cpu"
    with pytest.raises(SystemExit):  # never over an earlier result
        command.main(["--dry_run", "--device", "cpu", "--data", str(DATA), "--output_dir", str(tmp_path)])
    assert "exists" in capsys.readouterr().err


def test_flops_per_step_match_a_count_by_hand():
    _, model = model_pair("tiny")
    config = model.config  # d 32, ffn 64, 2+2 layers, vocab 4000
    by_hand = 2 * (32 * 32 * 4 + 2 * 32 * 64) * 10 + 2 * 2 * 10 * 10 * 32  # one encoder layer, 10 tokens
    decoder = (
        2 * (32 * 32 * 4 + 2 * 32 * 64) * 10
        + 2 * 2 * 10 * 10 * 32  # self-attention block + feed-forward
        + 2 * 2 * 32 * 32 * (10 + 10)
        + 2 * 2 * 10 * 10 * 32
    )  # cross-attention: q/o of targets, k/v of sources
    expected = 3 * 1 * (2 * by_hand + 2 * decoder + 2 * 10 * 32 * config.vocab_size)
    assert gpu_check.training_flops_per_step(config, 1, 10, 10) == expected


def test_a_machine_without_cuda_is_told_to_use_the_dry_run(capsys, monkeypatch):
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    with pytest.raises(SystemExit) as exit_info:
        command.main([])
    assert exit_info.value.code == 2 and "--dry_run" in capsys.readouterr().err


def test_other_tokens_than_the_peers_are_reported_per_task():
    from transformer_mt.experiments.gpu_check import generation_speed

    marian, ours = model_pair("tiny")
    same = generation_speed(marian.eval(), ours.eval(), torch.device("cpu"), batch_size=2, new_tokens=3, repeats=1)
    assert all(result["same_tokens"] for result in same.values())
    with torch.no_grad():
        ours.lm_head.weight.add_(torch.randn_like(ours.lm_head.weight))  # no longer the same function
    other = generation_speed(marian.eval(), ours.eval(), torch.device("cpu"), batch_size=2, new_tokens=3, repeats=1)
    assert list(other) == list(same) and not any(result["same_tokens"] for result in other.values())


def test_a_failed_check_fails_the_command_after_the_json_is_written(tmp_path, capsys, monkeypatch):
    results = {
        "bf16": {"ok": True},
        "attention": {"ok": True},
        "generation": {"greedy b4": {"same_tokens": True}, "beam-4 b4": {"same_tokens": False}},
        "server": {"same": False},
    }
    monkeypatch.setattr(command, "run_checks", lambda *args: results)
    with pytest.raises(SystemExit) as exit_info:
        command.main(["--dry_run", "--device", "cpu", "--output_dir", str(tmp_path)])
    assert exit_info.value.code == 2
    assert (
        capsys.readouterr().err.strip()
        == f"error: checks failed: beam-4 b4, server (the engines answered differently) (details in "
        f"{tmp_path}/gpu_check.json)"
    )
    assert json.loads((tmp_path / "gpu_check.json").read_text()) == results
