"""The engine settings (transformer_mt.engines.settings): one object whose flags are defined once and are the same on
every command that loads an engine, read back from the parsed flags as they were given; settings that cannot work
are refused by their flag, on every command alike."""

import argparse

import pytest

from transformer_mt.commands import score, serve, translate
from transformer_mt.engines import EngineSettings, add_engine_arguments, engine_settings, load_engine
from transformer_mt.engines.settings import flag_of, flagged_fields


COMMANDS = {
    "translate": (translate.parse_args, ["--model", "m", "Hello."]),
    "serve": (serve.parse_args, ["m"]),
    "score": (score.parse_args, ["--hypotheses", "h", "--data", "d"]),
}  # none of them read here
ENGINE_FLAGS = {"--engine", "--ctranslate2_model", "--quantization", "--intra_threads", "--device", "--inter_threads"}


def parser_of(command: str, monkeypatch) -> argparse.ArgumentParser:
    """The parser a command's parse_args builds, caught as it parses the command's plain arguments."""
    parse_args, argv = COMMANDS[command]
    caught, parse = [], argparse.ArgumentParser.parse_args

    def catch(parser, *args, **kwargs):
        caught.append(parser)
        return parse(parser, *args, **kwargs)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", catch)
    parse_args(argv)
    monkeypatch.undo()
    return caught[0]


def engine_flags(parser: argparse.ArgumentParser) -> dict[str, tuple]:
    """flag -> what defines it (names, destination, default, type, choices, help), for every engine flag."""
    return {
        action.option_strings[0]: (
            tuple(action.option_strings),
            action.dest,
            action.default,
            action.type,
            action.choices,
            action.help,
        )
        for action in parser._actions
        if set(action.option_strings) & ENGINE_FLAGS
    }


def test_every_command_takes_the_engine_flags_from_their_one_definition(monkeypatch):
    defined = argparse.ArgumentParser()
    add_engine_arguments(defined)
    expected = engine_flags(defined)
    assert set(expected) == ENGINE_FLAGS == {flag_of(field.name) for field in flagged_fields()}
    assert engine_flags(parser_of("translate", monkeypatch)) == expected
    # the server loads several models: no one export for all of them
    assert engine_flags(parser_of("serve", monkeypatch)) == {
        flag: definition for flag, definition in expected.items() if flag != "--ctranslate2_model"
    }
    # scores decode as the recorded ones were made (engines.load_for_scoring): no engine flags of the command's own
    assert engine_flags(parser_of("score", monkeypatch)) == {}


def command_line(settings: EngineSettings) -> list[str]:
    """The engine flags that give `settings`."""
    argv = []
    for field in flagged_fields():
        if getattr(settings, field.name) is not None:
            argv += [flag_of(field.name), str(getattr(settings, field.name))]
    return argv


@pytest.mark.parametrize(
    "settings",
    [
        EngineSettings(device="auto"),
        EngineSettings("ctranslate2", quantization="int8", intra_threads=2, inter_threads=3, device="cpu"),
        EngineSettings("transformers", device="cuda"),
        EngineSettings("auto", export_dir="runs/model-ct2", intra_threads=4, device="auto"),
    ],
    ids=["defaults", "ctranslate2", "transformers", "export"],
)
def test_the_settings_come_back_from_the_flags_that_give_them(settings):
    args = translate.parse_args([*COMMANDS["translate"][1], *command_line(settings)])
    assert args.engine_settings == engine_settings(args) == settings
    if settings.export_dir is None:
        assert engine_settings(serve.parse_args([*COMMANDS["serve"][1], *command_line(settings)])) == settings


def test_the_commands_default_to_auto_where_python_keeps_the_model_where_it_is():
    assert translate.parse_args(COMMANDS["translate"][1]).engine_settings == EngineSettings(device="auto")
    assert engine_settings(serve.parse_args(COMMANDS["serve"][1])) == EngineSettings(device="auto")
    assert EngineSettings().device is None
    # arguments made by hand without some flags (a worker's, a test's) keep those fields' defaults
    assert engine_settings(argparse.Namespace(engine="transformers", device="cpu")) == EngineSettings(
        "transformers", device="cpu"
    )


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--intra_threads", "0"], "--intra_threads must be >= 1, got 0"),
        (["--inter_threads", "-1"], "--inter_threads must be >= 1, got -1"),
        (["--engine", "transformers", "--quantization", "int8"], "--quantization applies to CTranslate2: drop it"),
    ],
)
def test_settings_that_cannot_work_are_one_line_on_every_command(flags, message, capsys):
    for command in ("translate", "serve"):
        parse_args, argv = COMMANDS[command]
        with pytest.raises(SystemExit) as exit_info:
            parse_args([*argv, *flags])
        assert exit_info.value.code == 2 and message in capsys.readouterr().err, command


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--ctranslate2_model", "x", "--engine", "transformers"], "--ctranslate2_model applies to CTranslate2"),
        (["--ctranslate2_model", "x", "--quantization", "int8"], "--quantization applies to the cached export"),
    ],
)
def test_an_export_given_takes_no_quantization_and_no_generate(flags, message, capsys):
    with pytest.raises(SystemExit):
        translate.parse_args([*COMMANDS["translate"][1], *flags])
    assert message in capsys.readouterr().err


def test_python_names_the_setting_and_load_engine_takes_an_engines_name_alone(saved_tiny_model):
    with pytest.raises(ValueError, match="--engine must be one of auto, transformers, ctranslate2; got 'fast'"):
        EngineSettings("fast")
    with pytest.raises(ValueError, match="--device must be one of auto, cpu, cuda; got 'gpu'"):
        EngineSettings(device="gpu")
    with pytest.raises(ValueError, match="--intra_threads must be >= 1, got 0"):
        EngineSettings().replace(intra_threads=0)
    named, given = (
        load_engine(str(saved_tiny_model), settings) for settings in ("transformers", EngineSettings("transformers"))
    )
    assert (
        (named.name, named.reason, named.device)
        == (given.name, given.reason, given.device)
        == ("transformers", "asked for", "cpu")
    )
