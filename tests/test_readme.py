"""The README runs as written: every Python example, and every `python scripts/...` command's options."""

import importlib
import io
import re
import shlex

import pytest

from .utils import DATA, REPO, save_tiny


README = (REPO / "README.md").read_text(encoding="utf-8")
PYTHON_BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.S)
COMMANDS = [line for block in re.findall(r"```bash\n(.*?)```", README, flags=re.S)
            for line in block.replace("\\\n", " ").splitlines() if "scripts/" in line and not line.startswith("#")]


@pytest.fixture
def readme_dir(tmp_path, monkeypatch):
    """A working directory holding what the README's examples refer to: data/en-de, the shipped model and
    runs/main-sinusoidal."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "en-de").symlink_to(DATA)
    (tmp_path / "models").symlink_to(REPO / "models")
    save_tiny(tmp_path / "runs" / "main-sinusoidal")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_every_python_example_runs(readme_dir):
    assert len(PYTHON_BLOCKS) >= 3
    for number, block in enumerate(PYTHON_BLOCKS):
        namespace = {}
        exec(compile(block, f"README.md python block {number}", "exec"), namespace)
        if number == 0:  # the quick start: the shipped model translates
            assert namespace["translator"](["Close the window."])[0]["translation_text"].startswith("Schließen")
        if number == 1:  # a model of your own
            assert (readme_dir / "my-model" / "model.safetensors").exists()
            assert namespace["ids"].shape[0] == 1 and namespace["loss"].ndim == 0
    assert (readme_dir / "runs" / "from-python" / "model.safetensors").exists()


def script_command(line: str) -> tuple[str, list[str]]:
    """(script name, arguments) of a README command line; `[...]` marks optional arguments, `...` elided ones."""
    script, arguments = re.search(r"scripts/(\w+)\.py(.*)", line).groups()
    arguments = arguments.split("|")[0].replace("[", " ").replace("]", " ")
    return script, [a for a in shlex.split(arguments.split("#")[0]) if a != "..."]


def test_every_command_uses_existing_scripts_and_options(capsys):
    assert len(COMMANDS) >= 10
    helps = {}
    for line in COMMANDS:
        script, arguments = script_command(line)
        assert (REPO / "scripts" / f"{script}.py").is_file(), line
        if script not in helps:
            with pytest.raises(SystemExit) as exit_info:
                importlib.import_module(f"transformer_mt.scripts.{script}").main(["--help"])
            assert exit_info.value.code == 0
            helps[script] = capsys.readouterr().out
        for option in (a.split("=")[0] for a in arguments if a.startswith("--")):
            assert re.search(rf"{re.escape(option)}\b", helps[script]), f"{option} of {line!r} is not an option"


def test_translate_commands_run_as_written(readme_dir, capsys, monkeypatch):
    translate = importlib.import_module("transformer_mt.scripts.translate")
    lines = [line for line in COMMANDS if "scripts/translate.py" in line]
    assert len(lines) >= 2
    for line in lines:
        _, arguments = script_command(line)
        if line.startswith("echo") or "--interactive" in arguments:
            text = shlex.split(line)[1] if line.startswith("echo") else "Click the Save button."
            stdin = io.TextIOWrapper(io.BytesIO((text + "\n").encode("utf-8")), encoding="utf-8")
            monkeypatch.setattr("sys.stdin", stdin)
        if "--input" in arguments:  # a file in, a file out (run in this process, whatever the launcher)
            source = readme_dir / arguments[arguments.index("--input") + 1]
            source.write_text("Click the Save button.\n\nDeletes the selected rows.\n", encoding="utf-8")
            output = readme_dir / arguments[arguments.index("--output") + 1]
            output.unlink(missing_ok=True)
            translate.main(arguments)
            assert output.read_text(encoding="utf-8").count("\n") == 3, line
            continue
        translate.main(arguments)
        sentences = [a for a in arguments if " " in a] or ["(stdin)"]
        per_sentence = int(arguments[arguments.index("--num_return_sequences") + 1]) \
            if "--num_return_sequences" in arguments else 1  # n-best: that many TSV rows a sentence
        assert len(capsys.readouterr().out.splitlines()) == len(sentences) * per_sentence, line


def test_the_main_job_table_is_the_shipped_runs():
    """README's main-job rows are recipes.results_table of docs/results/main_job/, the summaries the runs wrote."""
    import json

    from transformer_mt.recipes import results_table

    runs = (REPO / "docs" / "results" / "main_job").glob("*.json")
    summaries = [json.loads(path.read_text(encoding="utf-8")) for path in runs]
    assert len(summaries) >= 3
    assert results_table(summaries) in README
