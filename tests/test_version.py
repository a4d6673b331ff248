"""The version is written once, in a leaf module, and names CHANGELOG.md's newest release."""

import ast
import re

import transformer_mt
from transformer_mt import version

from .utils import REPO


def released_versions(changelog: str) -> list[str]:
    """The version of each `## X.Y.Z (...)` heading, newest first; "Unreleased" is none."""
    headings = re.findall(r"^## (.+)$", changelog, flags=re.MULTILINE)
    return [heading.split()[0] for heading in headings if not heading.startswith("Unreleased")]


def test_the_version_is_the_newest_released_heading():
    released = released_versions((REPO / "CHANGELOG.md").read_text(encoding="utf-8"))
    assert released[0] == version.__version__ == transformer_mt.__version__
    assert len(set(released)) == len(released)  # each release once


def test_the_version_module_imports_nothing():
    """pyproject.toml reads it without importing the package, and any layer may import it."""
    tree = ast.parse((REPO / "transformer_mt" / "version.py").read_text(encoding="utf-8"))
    assert not [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]


def test_released_versions_skip_the_unreleased_heading():
    assert released_versions("# Changelog\n\n## Unreleased\n\n- x\n\n## 1.2.0 (2027-01-01)\n\n## 1.1.0\n") == [
        "1.2.0",
        "1.1.0",
    ]
