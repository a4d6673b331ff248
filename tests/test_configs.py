"""The shipped accelerate configs (configs/accelerate) and the device-aware recipe.

DDP runs for real on 2 CPU processes (tests/test_training.py launches configs/accelerate/ddp.yaml). FSDP cannot run
on a CPU through accelerate (it shards on accelerators only), so here its config is parsed, turned into the plugin
accelerate builds, and its wrap policy resolved against the model; a CPU launch of it warns.
"""

import logging

import pytest
import torch
from accelerate.commands.launch import _validate_launch_command, launch_command_parser
from accelerate.utils.launch import prepare_multi_gpu_env

from transformer_mt import training
from transformer_mt.recipes import MAIN_JOB, MAIN_JOB_GPU, main_job_recipe

from .utils import REPO, SCRIPTS, tiny_model


CONFIGS = REPO / "configs" / "accelerate"


def launch_args(name: str):
    args = launch_command_parser().parse_args(["--config_file", str(CONFIGS / name), str(SCRIPTS / "train.py")])
    return _validate_launch_command(args)[0]


def test_the_configs_are_the_ones_the_readme_names():
    assert sorted(path.name for path in CONFIGS.glob("*.yaml")) == [
        "ddp.yaml",
        "fsdp.yaml",
        "multi_node.yaml",
        "single_gpu_bf16.yaml",
    ]
    readme = (REPO / "docs" / "scaling.md").read_text()
    for path in CONFIGS.glob("*.yaml"):
        assert f"configs/accelerate/{path.name}" in readme


@pytest.mark.parametrize(
    "name, expected",
    [
        ("single_gpu_bf16.yaml", dict(multi_gpu=False, use_fsdp=False, num_processes=1, num_machines=1)),
        ("ddp.yaml", dict(multi_gpu=True, use_fsdp=False, num_machines=1)),
        ("fsdp.yaml", dict(multi_gpu=False, use_fsdp=True, num_machines=1)),
        (
            "multi_node.yaml",
            dict(
                multi_gpu=True,
                use_fsdp=False,
                num_machines=2,
                machine_rank=0,
                main_process_ip="10.0.0.1",
                main_process_port=29500,
            ),
        ),
    ],
)
def test_every_config_is_what_accelerate_launch_reads(name, expected):
    args = launch_args(name)
    assert args.mixed_precision == "bf16"
    for key, value in expected.items():
        assert getattr(args, key) == value, key


def test_the_fsdp_config_builds_a_full_shard_plugin_that_wraps_each_layer(monkeypatch):
    from accelerate import FullyShardedDataParallelPlugin
    from torch.distributed.fsdp import StateDictType

    for key, value in prepare_multi_gpu_env(launch_args("fsdp.yaml")).items():
        monkeypatch.setenv(key, value)
    plugin = FullyShardedDataParallelPlugin()
    assert plugin.fsdp_version == 2 and plugin.reshard_after_forward is True
    assert plugin.state_dict_type == StateDictType.FULL_STATE_DICT  # one model.safetensors, from_pretrained loads it
    model = tiny_model()
    plugin.set_auto_wrap_policy(model)
    wrapped = plugin.auto_wrap_policy.keywords["transformer_layer_cls"]
    assert {cls.__name__ for cls in wrapped} == set(model._no_split_modules)
    assert sum(isinstance(module, tuple(wrapped)) for module in model.modules()) == 4  # 2 encoder + 2 decoder


def test_an_fsdp_launch_on_the_cpu_says_it_trains_data_parallel(monkeypatch, caplog, tmp_path):
    args = training.parse_args(["--data", "x", "--output_dir", str(tmp_path), "--use_cpu", "true"])[-1]
    with caplog.at_level(logging.WARNING, logger="transformer_mt"):
        training.check_launch(args)
        assert not caplog.records
        monkeypatch.setenv("ACCELERATE_USE_FSDP", "true")
        training.check_launch(args)
    assert "plain data parallel (DDP)" in caplog.records[0].getMessage()


def test_the_main_job_adds_joined_pairs_and_the_studies_train_on_single_pairs(tmp_path):
    from transformer_mt.experiments.studies import RECIPE

    assert MAIN_JOB["joined_pairs_share"] == MAIN_JOB_GPU["joined_pairs_share"] == 0.25
    assert "joined_pairs_share" not in RECIPE  # a study's "plain" variant stays plain; its joined one names the share
    argv = ["--data", "x", "--output_dir", str(tmp_path)]
    assert training.parse_args(argv + ["--preset", "main-job"])[0].joined_pairs_share == 0.25
    assert training.parse_args(argv + ["--preset", "main-job", "--joined_pairs_share", "0"])[0].joined_pairs_share == 0
    with pytest.raises(ValueError, match=r"--joined_pairs_share must be in \[0, 1\] \(0 adds none\), got 1.5"):
        training.parse_args(argv + ["--joined_pairs_share", "1.5"])


def test_on_a_cuda_gpu_the_recipe_is_the_base_model_in_bf16(monkeypatch, tmp_path):
    assert main_job_recipe(cuda=False) is MAIN_JOB and main_job_recipe(cuda=True) is MAIN_JOB_GPU
    assert (MAIN_JOB_GPU["d_model"], MAIN_JOB_GPU["encoder_layers"], MAIN_JOB_GPU["bf16"]) == (512, 6, True)
    argv = ["--data", "x", "--output_dir", str(tmp_path)]
    assert training.parse_args(argv)[-1].bf16 is False  # this machine: no CUDA, nothing changes
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *args, **kwargs: True)
    parser = training.argument_parser()
    assert parser.parse_known_args(argv)[0].bf16 is True
    assert main_job_recipe() is MAIN_JOB_GPU
