"""The README and every docs page run as written: every Python example and the outputs it shows, every
`python scripts/...` command's options, the translate commands, every link; the README stays a front page. The
pages' tables are held to their JSON by tests/test_docs_tables.py."""

import ast
import importlib
import io
import re
import shlex

import pytest

from transformer_mt.documents.files import file_format

from .utils import DATA, REPO, save_tiny


MAX_README_LINES = 250  # a front page (what, install, quick start, results, the index); the rest is in docs/*.md
PAGES = {
    path.relative_to(REPO).as_posix(): path.read_text(encoding="utf-8")
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
}
README = PAGES["README.md"]


def fenced(language: str) -> list[tuple[str, str]]:
    """(page, code) of every fenced block in this language: the README's first, then each docs page's."""
    return [
        (page, block)
        for page, text in PAGES.items()
        for block in re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)
    ]


PYTHON_BLOCKS = fenced("python")
COMMANDS = list(
    dict.fromkeys(  # each command line once, in page order
        line
        for _, block in fenced("bash")
        for line in block.replace("\\\n", " ").splitlines()
        if "scripts/" in line and not line.startswith("#")
    )
)


@pytest.fixture
def readme_dir(tmp_path, monkeypatch):
    """A working directory holding what the examples refer to: data/en-de, the shipped model and
    runs/main-sinusoidal."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "en-de").symlink_to(DATA)
    (tmp_path / "models").symlink_to(REPO / "models")
    save_tiny(tmp_path / "runs" / "main-sinusoidal")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def shown_outputs(block: str) -> list[tuple[str, object]]:
    """(expression, value) for every expression line followed by a comment line holding a Python literal: the
    output the example shows."""
    lines = block.splitlines()
    shown = []
    for line, comment in zip(lines, lines[1:]):
        if not comment.startswith("# "):
            continue
        try:
            ast.parse(line, mode="eval")
            value = ast.literal_eval(comment[2:])
        except (SyntaxError, ValueError):
            continue
        shown.append((line, value))
    return shown


@pytest.mark.slow
def test_every_python_example_runs(readme_dir):
    assert len(PYTHON_BLOCKS) >= 6
    assert PYTHON_BLOCKS[0][0] == "README.md" and shown_outputs(PYTHON_BLOCKS[0][1])  # the quick start shows one
    for number, (page, block) in enumerate(PYTHON_BLOCKS):
        namespace = {}
        exec(compile(block, f"{page} python block {number}", "exec"), namespace)
        for expression, value in shown_outputs(block):  # the quick start: the shipped model, sentence by sentence
            assert eval(expression, namespace) == value, f"{page}: {expression}"
        if "loss" in namespace:
            assert namespace["loss"].ndim == 0, page
    assert (readme_dir / "my-model" / "model.safetensors").exists()  # a model of your own
    assert (readme_dir / "runs" / "from-python" / "model.safetensors").exists()  # training from Python


def script_command(line: str) -> tuple[str, list[str]]:
    """(script name, arguments) of a command line; `[...]` marks optional arguments, `...` elided ones."""
    script, arguments = re.search(r"scripts/(\w+)\.py(.*)", line).groups()
    arguments = arguments.split("|")[0].replace("[", " ").replace("]", " ")
    return script, [a for a in shlex.split(arguments.split("#")[0]) if a != "..."]


def test_every_command_uses_existing_scripts_and_options(capsys):
    assert len(COMMANDS) >= 30
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


# A file of each structured format with one text, "Click the Save button.", for the documented commands
STRUCTURED = {
    "po": 'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\nmsgid "Click the Save button."\n'
    'msgstr ""\n',
    "xliff": '<?xml version="1.0" encoding="UTF-8"?>\n<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:'
    '1.2"><file source-language="en" target-language="de" datatype="plaintext" original="x"><body>'
    '<trans-unit id="1"><source>Click the Save button.</source></trans-unit></body></file></xliff>\n',
    "html": "<p>Click the Save button.</p>\n",
    "markdown": "# Saving\n\nClick the **Save** button.\n",
}


def test_translate_commands_run_as_written(readme_dir, capsys, monkeypatch):
    translate = importlib.import_module("transformer_mt.scripts.translate")
    lines = [line for line in COMMANDS if "scripts/translate.py" in line]
    assert len(lines) >= 5
    for line in lines:
        _, arguments = script_command(line)
        if line.startswith("echo") or "--interactive" in arguments:
            text = shlex.split(line)[1] if line.startswith("echo") else "Click the Save button."
            stdin = io.TextIOWrapper(io.BytesIO((text + "\n").encode("utf-8")), encoding="utf-8")
            monkeypatch.setattr("sys.stdin", stdin)
        if "--input" in arguments and file_format(arguments[arguments.index("--input") + 1]):  # .po, XLIFF, HTML, .md
            source = readme_dir / arguments[arguments.index("--input") + 1]
            source.write_text(STRUCTURED[file_format(str(source))], encoding="utf-8")
            output = readme_dir / arguments[arguments.index("--output") + 1]
            output.unlink(missing_ok=True)
            translate.main(arguments)
            assert output.read_text(encoding="utf-8") != source.read_text(encoding="utf-8"), line  # translated
            continue
        if "--input" in arguments:  # a file in, a file out (run in this process, whatever the launcher)
            source = readme_dir / arguments[arguments.index("--input") + 1]
            source.write_text("Click the Save button.\n\nDeletes the selected rows.\n", encoding="utf-8")
            if "--target_prefix" in arguments:  # one prefix a line (empty: none)
                prefixes = readme_dir / arguments[arguments.index("--target_prefix") + 1]
                prefixes.write_text("Klicken\n\n\n", encoding="utf-8")
            output = readme_dir / arguments[arguments.index("--output") + 1]
            output.unlink(missing_ok=True)
            translate.main(arguments)
            assert output.read_text(encoding="utf-8").count("\n") == 3, line
            continue
        translate.main(arguments)
        texts = [a for a in arguments if " " in a] or ["(stdin)"]  # one output line a text, however many sentences
        per_text = (
            int(arguments[arguments.index("--num_return_sequences") + 1])
            if "--num_return_sequences" in arguments
            else 1
        )  # n-best: that many TSV rows a text
        assert len(capsys.readouterr().out.splitlines()) == len(texts) * per_text, line


def anchors(text: str) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    prose = re.sub(r"```.*?```", "", text, flags=re.S)  # a comment in a code block is no heading
    return {
        re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        for heading in re.findall(r"^#+ (.*)$", prose, flags=re.M)
    }


def test_every_link_and_named_path_leads_somewhere():
    for page, text in PAGES.items():
        folder = (REPO / page).parent
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if target.startswith(("http://", "https://")):
                continue
            path, _, anchor = target.partition("#")
            linked = (folder / path).resolve() if path else REPO / page
            assert linked.exists(), f"{page}: {target}"
            if anchor and linked.suffix == ".md":
                assert anchor in anchors(linked.read_text(encoding="utf-8")), f"{page}: {target}"
        for path in re.findall(r"`(docs/[^`\s*]*)`", text):  # result files and folders the pages name
            assert (REPO / path).exists(), f"{page}: {path}"


def test_the_readme_is_a_front_page_with_an_index_of_the_docs():
    assert len(README.splitlines()) <= MAX_README_LINES
    assert len(PAGES) >= 6
    for page in PAGES:
        if page != "README.md":
            assert f"]({page})" in README, f"{page} is not in the README's index"
