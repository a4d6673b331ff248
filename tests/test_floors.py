"""The floors of docs/development.md hold: every module has one, no import runs up or sideways, no cycle, and a
function-level import of the package's own modules only reaches a module that needs an optional dependency.

A unit is a top-level module or subpackage of `transformer_mt` (`engines`, `serving`, `training`, ...), one of the
model's folders, the package root, or `scripts`; modules inside one unit may import each other (without a cycle).
"""

import ast
import re
import shutil
import sys
from pathlib import Path

import pytest
import tomllib

from .utils import REPO, SOURCE_PACKAGES, copy_sources


ROOT = "transformer_mt"
# an extra's distribution name -> the module it is imported as, where they differ
IMPORT_NAMES = {
    "beautifulsoup4": "bs4",
    "python-multipart": "multipart",
    "scikit-learn": "sklearn",
    "markdown-it-py": "markdown_it",
    "webvtt-py": "webvtt",
    "python-docx": "docx",
    "python-pptx": "pptx",
    "ruamel.yaml": "ruamel",
}


def floors(docs: Path) -> dict[str, int]:
    """unit -> floor, read from docs/development.md's table of floors (`| 3 | `bridges`, ... | ... |`)."""
    text = (docs / "development.md").read_text(encoding="utf-8")
    section = text.split("## Floors", 1)[1].split("\n## ", 1)[0]
    found = {}
    for floor, names in re.findall(r"^\| (\d+) \| ([^|]+) \|", section, re.MULTILINE):
        for name in re.findall(r"`([\w.]+)`", names):
            found[name] = int(floor)
    return found


def optional_modules(repo: Path) -> set[str]:
    """The top-level modules the pyproject extras install (the training, bridges, fast, serve and files extras)."""
    extras = tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    names = set()
    for extra in ("train", "bridges", "fast", "serve", "files"):
        for requirement in extras[extra]:
            name = re.match(r"[A-Za-z0-9_.-]+", requirement)[0]
            names.add(IMPORT_NAMES.get(name, name.replace("-", "_").lower()))
    return names


class Module:
    """One source file: its dotted name, its unit, and its imports (dotted, resolved), each marked top-level or not."""

    def __init__(self, path: Path, folder: Path, package: str):
        parts = [*package.split("."), *path.relative_to(folder).with_suffix("").parts]
        self.is_package = parts[-1] == "__init__"
        self.name = ".".join(parts[:-1] if self.is_package else parts)
        self.path = path
        inner = self.name.split(".")
        self.unit = "scripts" if package.endswith("scripts") else inner[1] if len(inner) > 1 else ROOT
        self.imports = list(self._imports(ast.parse(path.read_text(encoding="utf-8"))))

    def _imports(self, tree):
        """(line, module, top_level) for every import; `from a import b` yields a.b (b may be a module)."""
        package = self.name if self.is_package else self.name.rsplit(".", 1)[0]

        def visit(node, top: bool):
            for child in ast.iter_child_nodes(node):
                inner_top = top and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                if isinstance(child, ast.Import):
                    for alias in child.names:
                        yield child.lineno, alias.name, top
                elif isinstance(child, ast.ImportFrom):
                    base = child.module or ""
                    if child.level:
                        parts = package.split(".")
                        base = ".".join(
                            parts[: len(parts) - child.level + 1] + ([child.module] if child.module else [])
                        )
                    for alias in child.names:
                        yield child.lineno, f"{base}.{alias.name}", top
                yield from visit(child, inner_top)

        yield from visit(tree, True)


def modules_of(repo: Path) -> dict[str, Module]:
    found = {}
    for folder, package in SOURCE_PACKAGES.items():
        for path in sorted((repo / folder).rglob("*.py")):
            if "__pycache__" not in path.parts:
                module = Module(path, repo / folder, package)
                found[module.name] = module
    return found


def resolve(name: str, modules: dict[str, Module]) -> str | None:
    """The module an imported dotted name lives in (the longest known prefix), or None for outside the package."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in modules:
            return ".".join(parts[:end])
    return None


def floor_violations(repo: Path = REPO) -> list[str]:
    """Every breach of the floors: a unit without a floor or a floor without a unit, an import that runs up or
    sideways, a cycle, and a function-level import of one of the package's modules that needs no optional
    dependency."""
    table, modules, optional = floors(repo / "docs"), modules_of(repo), optional_modules(repo)
    units = {module.unit for module in modules.values()}
    violations = [f"{unit}: no floor in docs/development.md's table" for unit in sorted(units - set(table))]
    violations += [
        f"{unit}: in docs/development.md's floors but not in the package" for unit in sorted(set(table) - units)
    ]
    needs_optional = {}

    def optional_needed(name: str, seen=()) -> bool:
        """Whether importing module `name` imports an optional dependency (its own top-level imports, or theirs)."""
        if name not in needs_optional:
            module = modules[name]
            needs_optional[name] = any(
                (resolve(imported, modules) is None and imported.split(".")[0] in optional)
                or (
                    resolve(imported, modules) not in (None, name, *seen)
                    and optional_needed(resolve(imported, modules), (*seen, name))
                )
                for _, imported, top in module.imports
                if top
            )
        return needs_optional[name]

    graph = {name: set() for name in modules}
    for module in modules.values():
        for line, imported, top in module.imports:
            target = resolve(imported, modules)
            if target is None or target == module.name:
                continue
            graph[module.name].add(target)
            where = f"{module.path.relative_to(repo)}:{line} imports {target}"
            other = modules[target].unit
            # the model's three folders (floor 0) follow their own arrows, held by tests/test_layout.py
            if (
                other != module.unit
                and module.unit in table
                and other in table
                and table[other] >= table[module.unit] > 0
            ):
                side = "up" if table[other] > table[module.unit] else "sideways"
                violations.append(f"{where}: {side} (floor {table[module.unit]} -> {table[other]})")
            if not top and not optional_needed(target):
                violations.append(
                    f"{where} inside a function, and it needs no optional dependency: import it at the top"
                )
    violations += [f"an import cycle: {' -> '.join(cycle)}" for cycle in cycles(graph)]
    return violations


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each strongly connected group of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))

    def connect(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group) + [sorted(group)[0]])

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


def test_the_checkout_stands_on_its_floors():
    assert floor_violations() == []


def copied_tree(tmp_path) -> Path:
    copy_sources(tmp_path, "docs")
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


@pytest.mark.parametrize(
    "file, line, found",
    [
        ("transformer_mt/text/formality.py", "from ..plots import figure", "up (floor 1 -> 2)"),
        (
            "transformer_mt/documents/files.py",
            "from ..pipelines import TranslationPipeline",
            "sideways (floor 9 -> 9)",
        ),
        ("transformer_mt/evaluation.py", "from .experiments import studies", "up (floor 9 -> 12)"),
        (
            "transformer_mt/engines/inputs.py",
            "def f():\n    from ..lengths import input_limit",
            "inside a function, and it needs no optional dependency",
        ),
        ("transformer_mt/engines/generate.py", "from .loader import load_engine", "an import cycle"),
    ],
)
def test_a_breach_of_the_floors_is_caught(tmp_path, file, line, found):
    repo = copied_tree(tmp_path)
    with open(repo / file, "a", encoding="utf-8") as f:
        f.write(f"\n{line}\n")
    violations = floor_violations(repo)
    assert len(violations) == 1 and found in violations[0], violations


def test_a_module_without_a_floor_is_caught(tmp_path):
    repo = copied_tree(tmp_path)
    (repo / "transformer_mt" / "newcomer.py").write_text('"""New."""\n', encoding="utf-8")
    assert floor_violations(repo) == ["newcomer: no floor in docs/development.md's table"]


def test_the_package_map_names_every_unit():
    """transformer_mt/__init__.py's module map names every module and subpackage, and nothing that is gone."""
    import transformer_mt

    named = {name for name in re.findall(r"`(\w+)`", transformer_mt.__doc__) if name.islower()}
    units = {module.unit for module in modules_of(REPO).values()} - {ROOT, "scripts"}
    assert (units - named, named - units - {"evaluate"}) == (set(), set())
