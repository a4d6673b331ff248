"""A command's flags read from the environment too, as LibreTranslate reads each of its settings from an `LT_*`
variable: `--max_loaded_models 2` is also `TRANSFORMER_MT_MAX_LOADED_MODELS=2`, the name derived from the flag in one
place (`variable`), so that a container or a unit file's environment file configures the server. A flag given on the
command line wins over its variable; a variable wins over the flag's default. The package's own variables
(`RESERVED`: the export cache, the workers' hand-over) are never derived from a flag, and a flag that would derive one
is refused where the parser is built. A value that cannot work is a parser error naming the variable.
"""

import argparse
import os
from collections.abc import Mapping


PREFIX = "TRANSFORMER_MT_"
RESERVED = ("TRANSFORMER_MT_CACHE", "TRANSFORMER_MT_SERVE_ARGS")  # engines.loader's cache; serve's --workers hand-over
TRUE, FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off", "")


def variable(flag: str) -> str:
    """`--max_loaded_models` -> `TRANSFORMER_MT_MAX_LOADED_MODELS`."""
    return PREFIX + flag.lstrip("-").replace("-", "_").upper()


def flag_variables(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """Each long flag's variable (help and version left out); a ValueError when one would be a RESERVED name."""
    found = {}
    for action in parser._actions:
        flags = [flag for flag in action.option_strings if flag.startswith("--")]
        if not flags or isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            continue
        name = variable(flags[0])
        if name in RESERVED:
            raise ValueError(f"{flags[0]} would be read from {name}, which the package keeps for its own use")
        found[name] = action
    return found


def _value(parser: argparse.ArgumentParser, name: str, text: str, action: argparse.Action):
    """The value `text` gives the flag of `action`, as the command line would."""
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
        if text.strip().lower() not in TRUE + FALSE:
            parser.error(f"{name}={text!r}: {action.option_strings[0]} is on or off: write 1 or 0 (true, false)")
        return action.const if text.strip().lower() in TRUE else action.default
    try:
        value = action.type(text) if action.type is not None else text
    except (TypeError, ValueError):
        parser.error(
            f"{name}={text!r}: {action.option_strings[0]} takes {getattr(action.type, '__name__', 'a value')}"
        )
    if action.choices is not None and value not in action.choices:
        choices = ", ".join(map(str, action.choices))
        parser.error(f"{name}={text!r}: {action.option_strings[0]} is one of {choices}")
    return value


def read_environment(parser: argparse.ArgumentParser, environ: Mapping[str, str] | None = None) -> None:
    """Every flag of `parser` whose variable is set in `environ` (default `os.environ`) defaults to its value."""
    environ = os.environ if environ is None else environ
    defaults = {
        action.dest: _value(parser, name, environ[name], action)
        for name, action in flag_variables(parser).items()
        if name in environ
    }
    parser.set_defaults(**defaults)


def help_epilog(parser: argparse.ArgumentParser) -> str:
    """What --help says of the variables: every one, beside its flag."""
    lines = [f"  {action.option_strings[0]:<28} {name}" for name, action in flag_variables(parser).items()]
    return "\n".join(
        [
            "Every flag is also read from a variable (a flag given wins over its variable, which wins over the",
            "default; on/off flags take 1 or 0):",
            *lines,
        ]
    )


__all__ = ["PREFIX", "RESERVED", "flag_variables", "help_epilog", "read_environment", "variable"]
