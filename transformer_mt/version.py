"""The package's version, written here once: pyproject.toml reads it, CHANGELOG.md's newest release names it."""

__version__ = "0.4.0"
