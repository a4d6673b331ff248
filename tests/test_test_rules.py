"""The rules the tests keep (docs/development.md, Tests): an optional dependency is asked for through
tests.utils.require, which skips locally and fails under CI=true, never through pytest.importorskip."""

import ast
import json

import pytest

from .utils import REPO, require


MISSING = "transformer_mt_no_such_module"


def test_require_returns_the_module():
    assert require("json", "the standard library") is json


def test_a_missing_module_skips_locally(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=f"{MISSING} is not installed.*: needed here"):
        require(MISSING, "needed here")


def test_a_missing_module_fails_under_ci(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=f"{MISSING} is not installed.*: needed here.*broken install"):
        require(MISSING, "needed here")


def test_no_test_module_skips_on_a_missing_module_by_itself():
    """pytest.importorskip would skip under CI too: every optional import goes through require."""
    calls = []
    for path in sorted((REPO / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "attr", getattr(node.func, "id", None)) == "importorskip"
            ):
                calls.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not calls, f"use tests.utils.require instead of pytest.importorskip: {calls}"
