"""A non-editable install works from anywhere: the wheel's layout, every command's --help, the main job's data."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from transformer_mt.version import __version__

from .utils import DATA, REPO, SOURCE_PACKAGES, import_violations


# Every command in scripts/ is a console script transformer-mt-<name> (pyproject.toml, [project.scripts]).
COMMANDS = [path.stem.replace("_", "-") for path in sorted((REPO / "scripts").glob("*.py")) if path.stem != "__init__"]
pytestmark = pytest.mark.slow  # builds and installs a wheel, runs every command and a main job in subprocesses


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """`pip install --target` of a wheel built from a copy of the checkout; returns (site dir, env)."""
    root = tmp_path_factory.mktemp("install")
    source = root / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    for folder in SOURCE_PACKAGES:
        shutil.copytree(REPO / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
    # No build isolation: the build uses this environment's setuptools and needs no network.
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(root / "wheel"), str(source)],
                   check=True, cwd=root, capture_output=True, timeout=300)
    (wheel,) = (root / "wheel").glob("transformer_mt-*.whl")
    site = root / "site"
    subprocess.run([*pip, "install", "--no-deps", "--no-index", "--target", str(site), str(wheel)], check=True,
                   capture_output=True, timeout=300)
    # The installed copy comes first on the path, ahead of this checkout's editable install.
    env = dict(os.environ, PYTHONPATH=str(site), PATH=f"{site / 'bin'}{os.pathsep}{os.environ['PATH']}",
               TOKENIZERS_PARALLELISM="false")
    return site, env


def run(args, env, cwd, timeout=300):
    return subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def test_the_wheel_installs_one_package_with_every_folder_inside_it(installed, tmp_path):
    site, env = installed
    assert {p.name for p in site.iterdir()} == {"transformer_mt", f"transformer_mt-{__version__}.dist-info", "bin"}
    found = run([sys.executable, "-c", "import transformer_mt; print(transformer_mt.__file__)"], env, tmp_path)
    assert found.stdout.strip() == str(site / "transformer_mt" / "__init__.py"), found.stderr
    package = site / "transformer_mt"
    assert {p.name for p in package.iterdir() if p.is_dir()} >= {"modeling", "configuration", "tokenization",
                                                                "scripts", "bridges"}
    layout = {package / name.removeprefix("transformer_mt.").replace(".", "/")
              if name != "transformer_mt" else package:
              name for name in SOURCE_PACKAGES.values()}
    assert import_violations(layout) == []


# Runs each installed console script (the wrapper pip wrote in bin/, found on PATH) with --help, one after the other
# in this one process, and writes {name: [exit code, stdout, stderr]} as JSON: one interpreter start and one torch
# import for every command instead of one each.
RUN_EVERY_HELP = """
import contextlib, io, json, runpy, shutil, sys, traceback
answers = {}
for name in json.loads(sys.argv[1]):
    script = shutil.which("transformer-mt-" + name)
    stdout, stderr, code = io.StringIO(), io.StringIO(), 0
    sys.argv = [script, "--help"]
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            runpy.run_path(script, run_name="__main__")
        except SystemExit as exit:  # as the process would exit: None is 0, a message is 1
            code = exit.code if isinstance(exit.code, int) else int(exit.code is not None)
        except BaseException:
            code = 1
            traceback.print_exc()
    answers[name] = [code, stdout.getvalue(), stderr.getvalue()]
print(json.dumps(answers))
"""


@pytest.fixture(scope="module")
def help_answers(installed, tmp_path_factory) -> dict:
    """Every command's --help from an empty directory: {name: (exit code, stdout, stderr)}."""
    site, env = installed
    empty = tmp_path_factory.mktemp("empty")
    result = run([sys.executable, "-c", RUN_EVERY_HELP, json.dumps(COMMANDS)], env, empty)
    assert result.returncode == 0, result.stderr[-3000:]
    assert list(empty.iterdir()) == []
    return json.loads(result.stdout.splitlines()[-1])


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_answers_help_from_an_empty_directory(installed, help_answers, name):
    site, _ = installed
    assert (site / "bin" / f"transformer-mt-{name}").is_file()  # the console script pip installed
    returncode, stdout, stderr = help_answers[name]
    assert returncode == 0 and "usage:" in stdout, stderr[-2000:]


def test_the_installed_main_job_asks_for_its_data_then_runs(installed, tmp_path):
    _, env = installed
    refused = run(["transformer-mt-main-job", "--max_train_minutes", "1"], env, tmp_path)
    assert refused.returncode == 2 and "pass --data DIR" in refused.stderr and "Traceback" not in refused.stderr
    assert list(tmp_path.iterdir()) == []  # nothing written

    tiny = ["--max_train_samples", "200", "--max_eval_samples", "8", "--max_predict_samples", "8",
            "--tokenizer_vocab_size", "300", "--d_model", "32", "--encoder_ffn_dim", "64", "--decoder_ffn_dim", "64",
            "--max_steps", "3", "--eval_steps", "2", "--save_steps", "2", "--report_to", "none",
            "--per_device_eval_batch_size", "8", "--generation_max_length", "8", "--disable_tqdm", "true"]
    result = run(["transformer-mt-main-job", "--data", str(DATA), *tiny], env, tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    run_dir = tmp_path / "runs" / "main-sinusoidal"
    assert {"model.safetensors", "summary.json", "loss.png", "positions.png", "attention.png"} <= {
        p.name for p in run_dir.iterdir()}
    assert "Test BLEU" in result.stdout
