"""The layout's arrows hold: scripts -> transformer_mt -> modeling -> configuration; tokenization stands apart;
transformer_mt/experiments imports the library, which never imports it."""

import ast
import re
from pathlib import Path

import pytest

from .utils import REPO, SCRIPTS, SOURCE_PACKAGES, _imported_modules, copy_sources, import_violations


def source_tree(root=REPO):
    return {root / folder: package for folder, package in SOURCE_PACKAGES.items()}


def test_the_checkout_follows_the_import_rules():
    assert import_violations(source_tree()) == []


@pytest.mark.parametrize(
    "file, line, rule",
    [
        ("transformer_mt/data.py", "from transformer_mt.scripts import train", "the library never imports scripts"),
        ("transformer_mt/hub.py", "from .scripts.train import main", "the library never imports scripts"),
        ("modeling/embeddings.py", "import scripts.translate", "the library never imports scripts"),
        ("scripts/train.py", "from transformer_mt.scripts import translate", "a script never imports another script"),
        ("scripts/translate.py", "from transformer_mt import scripts", "a script never imports another script"),
        ("modeling/embeddings.py", "from ..tokenization import train_tokenizer", "may import only"),
        ("modeling/positional_embeddings.py", "from transformer_mt import translate", "may import only"),
        ("modeling/positional_embeddings.py", "import numpy", "the standard library and ['torch', 'transformers']"),
        (
            "configuration/configuration_transformer_mt.py",
            "import torch",
            "the standard library and ['huggingface_hub', 'transformers']",
        ),
        ("configuration/configuration_transformer_mt.py", "from ..modeling import embeddings", "may import only"),
        ("tokenization/tokenization_transformer_mt.py", "from transformer_mt.configuration import X", "may import"),
    ],
)
def test_an_added_arrow_is_caught(tmp_path, file, line, rule):
    copy_sources(tmp_path)
    with open(tmp_path / file, "a", encoding="utf-8") as f:
        f.write(f"\n{line}\n")
    violations = import_violations(source_tree(tmp_path))
    assert len(violations) == 1 and file in violations[0] and rule in violations[0], violations


def experiments_imports(root=REPO) -> list[str]:
    """`path:line imports module` of every import of transformer_mt.experiments in the library under `root`: every
    source folder but scripts/ (commands run the research) and transformer_mt/experiments/ itself."""
    experiments = root / "transformer_mt" / "experiments"
    found = []
    for folder, package in SOURCE_PACKAGES.items():
        if package == "transformer_mt.scripts":
            continue
        for path in sorted((root / folder).rglob("*.py")):
            if experiments in path.parents:
                continue
            file_package = ".".join([package, *path.parent.relative_to(root / folder).parts])
            found += [
                f"{path.relative_to(root).as_posix()}:{line} imports {module}"
                for line, module in _imported_modules(path, file_package)
                if module == "transformer_mt.experiments" or module.startswith("transformer_mt.experiments.")
            ]
    return found


def test_the_library_never_imports_the_experiments():
    """Research (studies, recipe search, benchmarks, the GPU check) imports the library as a user would; the library
    never imports it (docs/development.md, Layout)."""
    assert (REPO / "transformer_mt" / "experiments" / "__init__.py").is_file()
    assert experiments_imports() == []


@pytest.mark.parametrize(
    "file, line, breach",
    [
        ("transformer_mt/data.py", "from transformer_mt.experiments import studies", True),
        ("transformer_mt/hub.py", "from .experiments.benchmarks import model_pair", True),
        ("transformer_mt/training/run.py", "from ..experiments import position_study", True),
        ("modeling/embeddings.py", "import transformer_mt.experiments.gpu_check", True),
        ("transformer_mt/experiments/studies.py", "from .benchmarks import harness", False),  # research itself
        ("scripts/benchmark.py", "from transformer_mt.experiments import benchmarks", False),  # a command
    ],
)
def test_an_import_of_the_experiments_is_caught(tmp_path, file, line, breach):
    copy_sources(tmp_path)
    with open(tmp_path / file, "a", encoding="utf-8") as f:
        f.write(f"\n{line}\n")
    found = experiments_imports(tmp_path)
    assert len(found) == (1 if breach else 0) and all(entry.startswith(f"{file}:") for entry in found), found


def thick_scripts(folder=SCRIPTS) -> list[str]:
    """Every script in `folder` that is not a thin command: over 60 lines with its docstring, or not a `@command`
    run by `main()`; `__init__.py` must be empty."""
    found = []
    for script in sorted(folder.glob("*.py")):
        text = script.read_text(encoding="utf-8")
        if script.name == "__init__.py":
            found += [] if text == "" else [f"{script.name}: not empty"]
        elif len(text.splitlines()) > 60:
            found.append(f"{script.name}: {len(text.splitlines())} lines")
        elif 'if __name__ == "__main__":\n    main()' not in text or "@command" not in text:
            found.append(f"{script.name}: not a @command run by main()")
    return found


def test_scripts_are_thin_commands():
    """Every command parses, calls the library and prints, in at most 60 lines with its docstring."""
    assert thick_scripts() == []


@pytest.mark.parametrize("addition, breach", [("\n" * 60, "lines"), ("", None)])
def test_the_script_rule_catches_a_long_script(tmp_path, addition, breach):
    """A script one line over the limit is named (issue 51: the rule was never shown to fail)."""
    for script in SCRIPTS.glob("*.py"):
        (tmp_path / script.name).write_text(script.read_text(encoding="utf-8"), encoding="utf-8")
    translate = tmp_path / "translate.py"
    translate.write_text(translate.read_text(encoding="utf-8") + addition, encoding="utf-8")
    found = thick_scripts(tmp_path)
    assert found == ([] if breach is None else [f"translate.py: {len(translate.read_text().splitlines())} lines"])


def test_the_script_rule_catches_a_script_that_is_not_a_command(tmp_path):
    (tmp_path / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "loose.py").write_text('"""Does its own work."""\nprint("hello")\n', encoding="utf-8")
    assert thick_scripts(tmp_path) == ["loose.py: not a @command run by main()"]


def test_the_translate_command_stays_a_table_of_contents():
    """scripts/translate.py parses and calls transformer_mt.commands.translate.run; the work lives in the library."""
    assert len((SCRIPTS / "translate.py").read_text(encoding="utf-8").splitlines()) < 60


def test_no_command_shadows_a_library_when_run_as_a_file():
    """`python scripts/NAME.py` puts scripts/ first on sys.path: a script named like an installed module (as
    scripts/evaluate.py would be, for the `evaluate` library) breaks every import of that module in every command."""
    import importlib.util

    def shadows(name: str) -> bool:
        spec = importlib.util.find_spec(name)
        # the checkout's own folders (models/, data/) read as namespace packages from its root: no library
        own = spec is not None and spec.origin is None and {Path(p).parent for p in spec.submodule_search_locations}
        return spec is not None and own != {REPO}

    shadowing = [path.name for path in SCRIPTS.glob("*.py") if path.stem != "__init__" and shadows(path.stem)]
    assert shadowing == []


def python_files(*folders):
    return sorted(
        path for folder in folders for path in (REPO / folder).rglob("*.py") if "__pycache__" not in path.parts
    )


def long_functions(path, limit):
    """(name, lines) of every function or method in `path` longer than `limit` lines, decorators excluded."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        (node.name, node.end_lineno - node.lineno + 1)
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > limit
    ]


def test_library_modules_and_functions_stay_small():
    """One concern a module: none in transformer_mt/ over 400 lines (modeling/ keeps transformers' one file per
    model), and no function in the package or the commands over 80 lines."""
    assert [
        str(path)
        for path in python_files("transformer_mt")
        if len(path.read_text(encoding="utf-8").splitlines()) > 400
    ] == []
    assert {str(path): found for path in python_files(*SOURCE_PACKAGES) if (found := long_functions(path, 80))} == {}


def flat_modules(root=REPO) -> list[str]:
    return sorted(path.name for path in (root / "transformer_mt").glob("*.py") if path.name != "__init__.py")


def test_the_flat_module_count_is_the_one_the_docs_state():
    """transformer_mt/ holds as many modules beside its subpackages as docs/development.md says (a new module goes
    into the subpackage of its concern, or the docs say why not)."""
    stated = re.search(
        r"`transformer_mt/`\s+itself holds (\d+) modules",
        (REPO / "docs" / "development.md").read_text(encoding="utf-8"),
    )
    assert stated and len(flat_modules()) == int(stated[1]), flat_modules()


def test_the_size_check_catches_a_long_function(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(81))
    (tmp_path / "long.py").write_text(f"def long():\n{body}\n", encoding="utf-8")
    assert long_functions(tmp_path / "long.py", 80) == [("long", 82)]


CONCRETE_POSITIONS = (
    "SinusoidalPositionalEmbedding",
    "LearnedPositionalEmbedding",
    "AlibiPositionBias",
    "RotaryPositionEmbedding",
)


def test_no_concrete_position_class_is_named_outside_its_module():
    """The model, exporters and tools ask the PositionStrategy protocol, never which strategy they hold; only
    positional_embeddings.py (and its own tests) names the concrete classes."""
    home = REPO / "modeling" / "positional_embeddings.py"
    named = [
        f"{path.relative_to(REPO)}: {name}"
        for path in python_files(*SOURCE_PACKAGES, "tests")
        if path not in (home, REPO / "tests" / "test_positional_embeddings.py", Path(__file__).resolve())
        for name in CONCRETE_POSITIONS
        if name in path.read_text(encoding="utf-8")
    ]
    assert named == []


# A position type's name may decide something only where the strategies live and where the config validates it;
# everything else asks the PositionStrategy protocol (position_strategy_class, the strategies' class members).
POSITION_NAME_HOMES = {"modeling/positional_embeddings.py", "configuration/configuration_transformer_mt.py"}
PENDING: set[str] = set()  # emptied: every module asks the protocol


def position_name_decisions(root=REPO) -> list[str]:
    """`path:line: code` of every comparison (==, !=, in, is, match/case) with a position type's name and every
    dict key that is one, in the source packages under `root` outside POSITION_NAME_HOMES and PENDING. Naming a
    type as a value (`position_embedding_type="learned"` in a preset or bridge) decides nothing and passes."""
    from transformer_mt.configuration import POSITION_EMBEDDING_TYPES

    def named(node) -> bool:
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(named(element) for element in node.elts)
        return isinstance(node, ast.Constant) and node.value in POSITION_EMBEDDING_TYPES

    found = []
    for folder in SOURCE_PACKAGES:
        for path in sorted((root / folder).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if relative in POSITION_NAME_HOMES or any(relative.startswith(pending) for pending in PENDING):
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Compare):
                    decides = any(named(operand) for operand in (node.left, *node.comparators))
                elif isinstance(node, ast.Dict):
                    decides = any(key is not None and named(key) for key in node.keys)
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
                    decides = any(keyword.arg in POSITION_EMBEDDING_TYPES for keyword in node.keywords)
                else:
                    decides = isinstance(node, ast.MatchValue) and named(node.value)
                if decides:
                    found.append(f"{relative}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_position_type_is_decided_by_name_outside_its_module():
    assert position_name_decisions() == []


@pytest.mark.parametrize(
    "line",
    [
        'strategy = "rotary" if config.position_embedding_type == "rotary" else None',
        'exportable = config.position_embedding_type not in ("alibi",)',
        'LIMITS = {"learned": 512}',
        "LIMITS = dict(sinusoidal=None)",
        'match config.position_embedding_type:\n    case "alibi":\n        pass',
    ],
)
def test_a_decision_by_position_name_is_caught(tmp_path, line):
    copy_sources(tmp_path)
    with open(tmp_path / "transformer_mt" / "bridges" / "ctranslate2.py", "a", encoding="utf-8") as f:
        f.write(f"\n{line}\n")
    found = position_name_decisions(tmp_path)
    assert len(found) == 1 and found[0].startswith("transformer_mt/bridges/ctranslate2.py:"), found
