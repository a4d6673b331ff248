"""The serve command's flags read from TRANSFORMER_MT_<FLAG> too (transformer_mt.commands.environment): every flag
has its variable, named in --help; a variable sets the default, a flag given wins; a bad value names its variable;
the package's own variables are never derived from a flag."""

import argparse

import pytest

from transformer_mt.commands import serve
from transformer_mt.commands.environment import RESERVED, flag_variables, help_epilog, read_environment, variable

from .utils import REPO


def test_every_serve_flag_has_its_variable_named_in_the_help(capsys):
    parser = serve.build_parser()
    variables = flag_variables(parser)
    flags = {action.option_strings[0] for action in parser._actions if action.option_strings} - {"-h"}
    assert {action.option_strings[0] for action in variables.values()} == flags
    assert variable("--max_loaded_models") == "TRANSFORMER_MT_MAX_LOADED_MODELS" and not set(variables) & set(RESERVED)
    with pytest.raises(SystemExit):
        serve.parse_args(["--help"])
    shown = capsys.readouterr().out
    assert help_epilog(parser).splitlines()[-1].strip() in shown and all(name in shown for name in variables)


def test_a_variable_sets_the_default_and_a_flag_given_wins(monkeypatch):
    monkeypatch.setenv("TRANSFORMER_MT_PORT", "5099")
    monkeypatch.setenv("TRANSFORMER_MT_QUEUE_WAIT_S", "2.5")
    monkeypatch.setenv("TRANSFORMER_MT_DISABLE_FILES_TRANSLATION", "true")
    monkeypatch.setenv("TRANSFORMER_MT_ENGINE", "transformers")
    args = serve.parse_args(["model"])
    assert (args.port, args.queue_wait_s, args.disable_files_translation, args.engine) == (
        5099,
        2.5,
        True,
        "transformers",
    )
    args = serve.parse_args(["model", "--port", "6000", "--engine", "auto"])
    assert (args.port, args.engine, args.queue_wait_s) == (6000, "auto", 2.5)
    monkeypatch.setenv("TRANSFORMER_MT_DISABLE_FILES_TRANSLATION", "0")
    assert serve.parse_args(["model"]).disable_files_translation is False


@pytest.mark.parametrize(
    "name, value, message",
    [
        ("TRANSFORMER_MT_PORT", "abc", "TRANSFORMER_MT_PORT='abc': --port takes int"),
        ("TRANSFORMER_MT_ENGINE", "fast", "TRANSFORMER_MT_ENGINE='fast': --engine is one of auto, transformers,"),
        ("TRANSFORMER_MT_DISABLE_FILES_TRANSLATION", "maybe", "is on or off: write 1 or 0"),
        ("TRANSFORMER_MT_QUEUE_LIMIT", "0", "--queue_limit must be >= 1, got 0"),  # checked as a flag would be
    ],
)
def test_a_bad_value_names_its_variable(monkeypatch, capsys, name, value, message):
    monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit):
        serve.parse_args(["model"])
    assert message in capsys.readouterr().err


def test_a_flag_that_would_read_a_reserved_variable_is_refused():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache")
    with pytest.raises(ValueError, match="TRANSFORMER_MT_CACHE, which the package keeps"):
        read_environment(parser, {})


def test_docs_serving_lists_every_variable():
    docs = (REPO / "docs" / "serving.md").read_text(encoding="utf-8")
    section = docs.split("### Configuration by environment", 1)[1].split("\n## ", 1)[0]
    for name, action in flag_variables(serve.build_parser()).items():
        assert f"`{action.option_strings[0]}` `{name}`" in " ".join(section.split()), name
