"""Presets: data only, the paper's values, picked by --preset and overridden by any flag; --dataset_config_name."""

import subprocess
import sys

import datasets
import huggingface_hub.constants
import pytest

from transformer_mt import presets, training

from .utils import TINY


def test_the_presets_module_imports_nothing_heavy():
    # Loaded from its file alone (the package's __init__ registers the model, which imports torch):
    code = (
        "import importlib.util, sys; spec = importlib.util.spec_from_file_location('p', sys.argv[1]); "
        "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module); "
        "print(sorted(module.PRESETS)); "
        "print(' '.join(m for m in ('torch', 'matplotlib', 'transformers') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code, presets.__file__], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    names, heavy = result.stdout.splitlines()
    assert names == str(sorted(presets.PRESETS)) and heavy == ""


def test_the_papers_presets_hold_the_papers_values():
    base, big = presets.TRANSFORMER_BASE, presets.TRANSFORMER_BIG
    assert (base["d_model"], base["encoder_layers"], base["encoder_attention_heads"], base["encoder_ffn_dim"]) == (
        512,
        6,
        8,
        2048,
    )
    assert (big["d_model"], big["encoder_attention_heads"], big["encoder_ffn_dim"], big["dropout"]) == (
        1024,
        16,
        4096,
        0.3,
    )
    assert base["learning_rate"] == pytest.approx(512**-0.5 * 4000**-0.5) and base["warmup_steps"] == 4000
    assert (base["adam_beta2"], base["adam_epsilon"], base["label_smoothing_factor"]) == (0.98, 1e-9, 0.1)
    assert not base["normalize_before"] and base["tokenizer_vocab_size"] == 37000
    assert (base["max_steps"], big["max_steps"]) == (100_000, 300_000)


@pytest.mark.parametrize("name", sorted(presets.PRESETS))
def test_every_preset_parses_and_a_flag_overrides_it(name):
    data, setup, model, args = training.parse_args(
        ["--data", "x", "--output_dir", "out", "--preset", name, "--d_model", "48", "--seed", "7"]
    )
    assert setup.preset == name and model.d_model == 48 and args.seed == 7
    preset = presets.PRESETS[name]
    for group in (data, setup, model, args):
        for key, value in preset.items():
            if hasattr(group, key) and key not in ("d_model", "seed"):
                parsed = getattr(group, key)
                assert parsed == value or parsed == [value], (name, key)  # report_to is parsed into a list


@pytest.mark.slow  # a training step of transformer-base itself (512 wide, 6+6 layers)
def test_the_papers_setup_is_one_command_on_a_dataset_in_the_hubs_layout(tmp_path, monkeypatch):
    """`--data wmt14 --dataset_config_name de-en --preset transformer-base`, offline: load_dataset answers with a
    local dataset in the Hub's layout (a `translation` column of {"de": ..., "en": ...})."""
    rows = [
        {"translation": {"de": "Klicken Sie auf Speichern.", "en": "Click Save."}},
        {"translation": {"de": "Schließen Sie den Dialog.", "en": "Close the dialog."}},
    ] * 8
    calls = []

    def load_dataset(name, config_name=None, **kwargs):
        calls.append((name, config_name))
        return datasets.DatasetDict({split: datasets.Dataset.from_list(rows) for split in ("train", "validation")})

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    # and the dataset card the model card would cite is not asked of the Hub: offline, hf_hub_download says so at
    # once (without it, a machine with no network waited 23 s of retries here, and one with a network downloaded it)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    args = training.parse_args(
        [
            "--data",
            "wmt14",
            "--dataset_config_name",
            "de-en",
            "--preset",
            "transformer-base",
            "--output_dir",
            str(tmp_path / "run"),
            "--do_eval",
            "false",
            "--do_predict",
            "false",
            "--eval_strategy",
            "no",
            "--save_strategy",
            "no",
            "--max_steps",
            "1",
            "--tokenizer_vocab_size",
            "300",
            "--report_to",
            "none",
            "--use_cpu",
            "true",
        ]
    )
    trainer = training.run(*args)
    assert calls and calls[0] == ("wmt14", "de-en")
    config = trainer.model.config
    assert (config.d_model, config.encoder_layers, config.normalize_before) == (512, 6, False)
    assert trainer.state.global_step == 1


def test_the_tests_tiny_recipe_is_the_tiny_preset(trained_tiny_model):
    from transformers import AutoConfig

    assert TINY[:2] == ["--preset", "tiny"]
    assert AutoConfig.from_pretrained(trained_tiny_model).d_model == presets.TINY["d_model"]  # utils.train's model
