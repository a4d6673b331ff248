"""The deployment recipes of docs/serving.md ("A unit file and a container") as tested examples: the systemd unit's
ExecStart and Environment lines and its environment file start the server exactly so on loopback; the container
recipe's commands are the README's and its variables the server's (it is not built here)."""

import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import tomllib

from transformer_mt.commands.environment import RESERVED, flag_variables
from transformer_mt.commands.serve import build_parser

from .utils import REPO, save_copy_model, wait_until_listening


DOCS = (REPO / "docs" / "serving.md").read_text(encoding="utf-8")
SECTION = DOCS.split("## A unit file and a container", 1)[1].split("\n## ", 1)[0]


def block(language: str) -> str:
    (found,) = re.findall(rf"```{language}\n(.*?)```", SECTION, re.S)
    return found


def unit_lines(key: str) -> list[str]:
    return [line.split("=", 1)[1] for line in block("ini").splitlines() if line.startswith(f"{key}=")]


def environment_file() -> dict[str, str]:
    lines = [line for line in block("sh").splitlines() if line and not line.startswith("#")]
    return dict(line.split("=", 1) for line in lines)


def test_the_unit_and_its_environment_name_only_the_server_s_variables():
    known = set(flag_variables(build_parser())) | set(RESERVED)
    given = [*environment_file(), *(line.split("=", 1)[0] for line in unit_lines("Environment"))]
    assert given and set(given) <= known
    assert environment_file()["TRANSFORMER_MT_HOST"] == "127.0.0.1"  # loopback unless a proxy is put in front
    (command,) = unit_lines("ExecStart")
    assert Path(shlex.split(command)[0]).name == "transformer-mt-serve" and unit_lines("KillSignal") == ["SIGTERM"]


@pytest.mark.slow  # a server process
def test_the_unit_starts_the_server_on_loopback_and_sigterm_stops_it_with_status_0(tmp_path):
    save_copy_model(tmp_path / "models" / "en-de", dict(num_beams=1, max_length=24))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    here = {  # the test machine's paths and port in place of the unit's /opt, /var and 5000
        "TRANSFORMER_MT_MODELS": str(tmp_path / "models"),
        "TRANSFORMER_MT_CACHE": str(tmp_path / "cache"),
        "TRANSFORMER_MT_PORT": str(port),
    }
    written = environment_file() | dict(line.split("=", 1) for line in unit_lines("Environment"))
    (command,) = unit_lines("ExecStart")
    program = shutil.which(
        Path(shlex.split(command)[0]).name, path=f"{Path(sys.executable).parent}:{os.environ['PATH']}"
    )
    assert program, "the transformer-mt-serve console script is installed with the package"
    process = subprocess.Popen(
        [program, *shlex.split(command)[1:]],
        env={**os.environ, **written, **here},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_until_listening(process, port)
        base = f"http://127.0.0.1:{port}"
        with urllib.request.urlopen(f"{base}/health", timeout=10) as answer:
            assert answer.read() == b'{"status":"ok"}'
        with pytest.raises(urllib.error.HTTPError, match="401"):
            urllib.request.urlopen(f"{base}/metrics", timeout=10)
        token = {"Authorization": f"Bearer {written['TRANSFORMER_MT_METRICS_TOKEN']}"}
        with urllib.request.urlopen(urllib.request.Request(f"{base}/metrics", headers=token), timeout=10) as answer:
            assert answer.status == 200
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(60)
    assert code == 0, process.stdout.read()


def test_the_container_recipe_installs_as_the_readme_does_and_sets_the_server_s_variables():
    recipe = block("dockerfile")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    torch_pin = re.search(r"pip install (torch==[\d.]+)", readme)[1]
    installs = re.findall(r"pip install [^&\\\n]*", recipe.replace("\\\n", " "))
    assert any(torch_pin in line for line in installs)  # torch first, the README's version
    extras = set(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    (asked,) = re.findall(r'"\.\[([\w,]+)\]"', recipe)
    assert set(asked.split(",")) <= extras and "serve" in asked
    variables = dict(re.findall(r"(TRANSFORMER_MT_\w+)=(\S+)", recipe))
    assert set(variables) <= set(flag_variables(build_parser())) | set(RESERVED) and variables
    assert re.search(r"^EXPOSE (\d+)$", recipe, re.M)[1] == str(build_parser().get_default("port"))
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert re.search(r'^CMD \["([\w-]+)"\]$', recipe, re.M)[1] in scripts
