"""A wheel that installs anywhere: setuptools packages every folder of the tree, and nothing else; `python -m build`
makes an sdist and a wheel from a clean copy that `twine check` accepts; the wheel, installed into a fresh virtual
environment that cannot see this checkout, answers every command's --help, translates with a shipped model, serves
/health and the page, and runs the main job once given its data."""

import configparser
import contextlib
import json
import os
import shutil
import site
import subprocess
import sys
import tarfile
import urllib.request
from pathlib import Path

import pytest
import tomllib

from transformer_mt.version import __version__

from .utils import DATA, REPO, SOURCE_PACKAGES, command_env, import_violations, wait_until_listening


PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
COMMANDS = sorted(PROJECT["scripts"])  # every console script pyproject.toml declares, transformer-mt-*
MODEL = REPO / "models" / "transformer-mt-en-de"  # shipped with the repository, given to the wheel by path


def tree_packages(root: Path = REPO) -> dict[str, str]:
    """{package: folder relative to root} the tree holds: each source folder under its installed name
    (SOURCE_PACKAGES) and every folder below one that has an __init__.py."""
    found = {}
    for folder, package in SOURCE_PACKAGES.items():
        for init in sorted((root / folder).rglob("__init__.py")):
            parts = init.parent.relative_to(root / folder).parts
            found[".".join([package, *parts])] = init.parent.relative_to(root).as_posix()
    return found


# setuptools' own reading of pyproject.toml, as a build makes it before build_py copies the files: the packages
# (discovered when pyproject.toml lists none), the folder each comes from, and the top-level modules.
SETUPTOOLS_PACKAGES = """
import json
from setuptools.dist import Distribution
dist = Distribution()
dist.parse_config_files()
dist.set_defaults()  # the discovery every setuptools command runs first
build_py = dist.get_command_obj("build_py")
build_py.ensure_finalized()
print(json.dumps({"packages": {name: build_py.get_package_dir(name) for name in dist.packages or []},
                  "py_modules": dist.py_modules or [], "package_data": dist.package_data}))
"""


def setuptools_packages(root: Path = REPO) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", SETUPTOOLS_PACKAGES], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.splitlines()[-1])


def test_setuptools_packages_every_package_folder_of_the_tree_and_nothing_else():
    """The wheel's package list is what setuptools derives from pyproject.toml; it must be every folder of the tree
    that is a package, each from its own folder. A folder left with nothing but __pycache__ (a branch switch removes
    a package's files, not its bytecode) holds nothing to package, so it is left out of the comparison."""
    config = setuptools_packages()
    packaged = {
        name: folder
        for name, folder in config["packages"].items()
        if {p.name for p in (REPO / folder).iterdir()} - {"__pycache__"}
    }
    expected = tree_packages()
    assert packaged == expected, (
        f"setuptools would package {sorted(packaged.items() - expected.items())} that the tree does not hold as a "
        f"package (a folder without __init__.py?), and leave out {sorted(expected.items() - packaged.items())}"
    )
    assert config["py_modules"] == []  # nothing generic at the top of site-packages
    assert config["package_data"] == {  # the files read beside the modules
        "transformer_mt.serving": ["page.html"],
        "transformer_mt.installer": ["index.json"],
    }


def test_every_command_file_is_a_console_script():
    commands = {path.stem for path in (REPO / "scripts").glob("*.py") if path.stem != "__init__"}
    assert {f"transformer-mt-{name.replace('_', '-')}" for name in commands} <= set(COMMANDS)
    assert {
        target.removesuffix(":main").removeprefix("transformer_mt.scripts.") for target in PROJECT["scripts"].values()
    } == commands


def clean_copy(destination: Path) -> Path:
    """The files a commit of the working tree would hold (tracked, and untracked but not ignored), as a fresh clone
    has them: no build/, no egg-info, no __pycache__, no runs/."""
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO,
            check=True,
            capture_output=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, listed):
        if (REPO / name).is_file():  # a tracked file deleted in the working tree stays listed until committed
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, destination / name)
    return destination


def venv_env(root: Path) -> dict:
    """The environment commands run in: the venv's bin/ first on PATH, nothing of this checkout on the path."""
    env = command_env(
        PATH=f"{root / 'venv' / 'bin'}{os.pathsep}{os.environ['PATH']}", TRANSFORMER_MT_CACHE=str(root / "cache")
    )  # the CTranslate2 export, made once for both
    for name in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE"):
        env.pop(name, None)
    return env


def build_and_install(root: Path) -> None:
    """root/dist: the sdist and the wheel built from it; root/venv: a fresh environment with the wheel installed."""
    source = clean_copy(root / "source")
    run = dict(capture_output=True, text=True, timeout=600)
    # No build isolation: the build uses this environment's setuptools and needs no network. Asked for both, build
    # makes the sdist first and the wheel from the unpacked sdist, so the wheel also shows that the sdist is whole.
    built = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(root / "dist"), str(source)], cwd=root, **run
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, **run)
    python = venv / "bin" / "python"
    # --no-deps: pip never resolves torch; the dependencies come from this environment through a plain path entry
    # (below), not from an index.
    installed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--disable-pip-version-check",
            "--python",
            str(python),
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            *root.glob("dist/*.whl"),
        ],
        env=venv_env(root),
        **run,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        env=venv_env(root),
        **run,
    ).stdout.strip()
    # This environment's site-packages as plain path entries, after the venv's own: a folder named in a .pth file is
    # appended to sys.path, but its own .pth files are not read (only a site directory's are), so the editable
    # install's __editable__*.pth, whose finder would serve this checkout, never runs in the venv.
    ours = [path for path in [*site.getsitepackages(), site.getusersitepackages()] if path in sys.path]
    (Path(purelib) / "test-environment.pth").write_text(
        "# tests/test_install.py: the test environment's dependencies, without its .pth files\n"
        + "".join(f"{path}\n" for path in ours),
        encoding="utf-8",
    )
    (root / "purelib").write_text(purelib, encoding="utf-8")


def session_folder(tmp_path_factory) -> Path:
    """The session's temporary folder, which the xdist workers share (each has its own below it)."""
    root = tmp_path_factory.getbasetemp()
    return root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root


@pytest.fixture(scope="session")
def installed(tmp_path_factory) -> Path:
    """The build and the venv, made once for the session: under xdist the first worker to take the lock makes them
    and the others use them. Read only."""
    from filelock import FileLock

    root = session_folder(tmp_path_factory) / "installed-wheel"
    with FileLock(f"{root}.lock"):
        if not (root / "purelib").is_file():
            shutil.rmtree(root, ignore_errors=True)  # what a failed attempt left
            root.mkdir()
            build_and_install(root)
    return root


# Run in the venv from an empty folder: each console script pip installed (the wrapper in venv/bin), with --help,
# one after the other in this one process (one interpreter start and one torch import for every command); then
# every package of the tree imported. Prints {"help": {script: [exit code, stdout, stderr]}, "modules": {name:
# file}, "finders": [...]} as JSON.
INSPECT = """
import contextlib, importlib, io, json, os, runpy, sys, traceback
answers = {}
commands, packages = json.loads(sys.argv[1]), json.loads(sys.argv[2])
for name in commands:
    script = os.path.join(os.path.dirname(sys.executable), name)
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
missing = {}
for package in packages:
    try:
        importlib.import_module(package)
    except Exception as error:
        missing[package] = repr(error)
modules = {name: getattr(module, "__file__", None) for name, module in sorted(sys.modules.items())
           if name.split(".")[0] == "transformer_mt"}
finders = [repr(finder) for finder in [*sys.meta_path, *sys.path_hooks]]
print(json.dumps({"help": answers, "missing": missing, "modules": modules, "finders": finders}))
"""


@pytest.fixture(scope="session")
def inspected(installed, tmp_path_factory) -> dict:
    """INSPECT's answer, once for the session (under xdist, once for the workers, as `installed`)."""
    from filelock import FileLock

    answer = installed / "inspected.json"
    with FileLock(f"{answer}.lock"):
        if not answer.is_file():
            empty = tmp_path_factory.mktemp("empty")
            result = subprocess.run(
                [
                    str(installed / "venv" / "bin" / "python"),
                    "-c",
                    INSPECT,
                    json.dumps(COMMANDS),
                    json.dumps(sorted(tree_packages())),
                ],
                cwd=empty,
                env=venv_env(installed),
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert result.returncode == 0, result.stderr[-3000:]
            assert list(empty.iterdir()) == []  # --help writes nothing
            answer.write_text(result.stdout.splitlines()[-1], encoding="utf-8")
    return json.loads(answer.read_text(encoding="utf-8"))


@pytest.mark.slow  # builds an sdist and a wheel
def test_twine_accepts_the_sdist_and_the_wheel_and_the_sdist_holds_the_sources_only(installed):
    dist = sorted((installed / "dist").iterdir())
    assert [p.name for p in dist] == [
        f"transformer_mt-{__version__}-py3-none-any.whl",
        f"transformer_mt-{__version__}.tar.gz",
    ]
    checked = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, dist)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    with tarfile.open(dist[1]) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    assert {
        "pyproject.toml",
        "README.md",
        "LICENSE",
        "CHANGELOG.md",
        "MANIFEST.in",
        "transformer_mt/serving/page.html",
        "transformer_mt/installer/index.json",
    } <= names
    top = {name.split("/")[0] for name in names}
    assert top <= {
        "pyproject.toml",
        "README.md",
        "LICENSE",
        "CHANGELOG.md",
        "MANIFEST.in",
        "PKG-INFO",
        "setup.cfg",
        "transformer_mt.egg-info",
        *SOURCE_PACKAGES,
    }  # no tests, models, data or docs


@pytest.mark.slow  # builds and installs a wheel
def test_the_wheel_installs_one_package_with_every_folder_inside_it(installed):
    purelib = Path((installed / "purelib").read_text(encoding="utf-8"))
    assert {p.name for p in purelib.iterdir()} == {
        "transformer_mt",
        f"transformer_mt-{__version__}.dist-info",
        "test-environment.pth",
    }  # nothing generic at the top
    package = purelib / "transformer_mt"
    expected = tree_packages()
    assert {
        ".".join(["transformer_mt", *p.parent.relative_to(package).parts]) for p in package.rglob("__init__.py")
    } == set(expected)
    assert (package / "serving" / "page.html").is_file()
    assert (package / "installer" / "index.json").is_file()
    assert (purelib / f"transformer_mt-{__version__}.dist-info" / "licenses" / "LICENSE").is_file()
    layout = {package.joinpath(*name.split(".")[1:]): name for name in SOURCE_PACKAGES.values()}
    assert import_violations(layout) == []
    entry_points = configparser.ConfigParser()
    entry_points.read(purelib / f"transformer_mt-{__version__}.dist-info" / "entry_points.txt", encoding="utf-8")
    assert sorted(entry_points["console_scripts"]) == COMMANDS
    assert sorted(p.name for p in (installed / "venv" / "bin").glob("transformer-mt-*")) == COMMANDS


@pytest.mark.slow  # imports every package of the wheel in the venv
def test_every_module_comes_from_the_venv_and_never_from_the_checkout(installed, inspected):
    assert inspected["missing"] == {}
    assert set(tree_packages()) <= set(inspected["modules"])
    purelib = Path((installed / "purelib").read_text(encoding="utf-8"))
    outside = {
        name: file
        for name, file in inspected["modules"].items()
        if file is None or not Path(file).is_relative_to(purelib / "transformer_mt")
    }
    assert outside == {}
    assert not [finder for finder in inspected["finders"] if "editable" in finder.lower()]


@pytest.mark.slow  # runs every console script in the venv
@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_answers_help_from_an_empty_directory(inspected, name):
    returncode, stdout, stderr = inspected["help"][name]
    assert returncode == 0 and "usage:" in stdout, stderr[-2000:]


@pytest.mark.slow  # a command in the venv
def test_the_installed_translate_command_translates_with_a_shipped_model(installed, tmp_path):
    translate = installed / "venv" / "bin" / "transformer-mt-translate"
    result = subprocess.run(
        [translate, "--model", str(MODEL), "Open the file."],
        cwd=tmp_path,
        env=venv_env(installed),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout == "Öffnen Sie die Datei.\n"


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow  # a server process in the venv
def test_the_installed_server_answers_health_and_serves_its_page(installed, tmp_path):
    port, serve = free_port(), installed / "venv" / "bin" / "transformer-mt-serve"
    server = subprocess.Popen(
        [serve, str(MODEL), "--host", "127.0.0.1", "--port", str(port), "--files_dir", str(tmp_path / "files")],
        cwd=tmp_path,
        env=venv_env(installed),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_until_listening(server, port, seconds=180)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=30) as health:
            assert json.load(health) == {"status": "ok"}
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as page:  # the package data
            assert page.headers.get_content_type() == "text/html" and b"<html" in page.read()
    finally:
        server.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.wait(timeout=30)
        if server.poll() is None:
            server.kill()
            server.wait()


@pytest.mark.slow  # a training run in the venv
def test_the_installed_main_job_asks_for_its_data_then_runs(installed, tmp_path):
    env, main_job = venv_env(installed), installed / "venv" / "bin" / "transformer-mt-main-job"
    refused = subprocess.run(
        [main_job, "--max_train_minutes", "1"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert refused.returncode == 2 and "pass --data DIR" in refused.stderr and "Traceback" not in refused.stderr
    assert list(tmp_path.iterdir()) == []  # nothing written

    tiny = [
        "--max_train_samples",
        "200",
        "--max_eval_samples",
        "8",
        "--max_predict_samples",
        "8",
        "--tokenizer_vocab_size",
        "300",
        "--d_model",
        "32",
        "--encoder_ffn_dim",
        "64",
        "--decoder_ffn_dim",
        "64",
        "--max_steps",
        "3",
        "--eval_steps",
        "2",
        "--save_steps",
        "2",
        "--report_to",
        "none",
        "--per_device_eval_batch_size",
        "8",
        "--generation_max_length",
        "8",
        "--disable_tqdm",
        "true",
    ]
    result = subprocess.run(
        [main_job, "--data", str(DATA), *tiny], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    run_dir = tmp_path / "runs" / "main-sinusoidal"
    assert {"model.safetensors", "summary.json", "loss.png", "positions.png", "attention.png"} <= {
        p.name for p in run_dir.iterdir()
    }
    assert "Test BLEU" in result.stdout
