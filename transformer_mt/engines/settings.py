"""Which engine decodes a saved model, where, and with how many threads, as one object: `EngineSettings`, built
once at the edge (a command's flags, a study, a Python caller) and handed to `engines.load_engine` whole, as
`options.TranslationOptions` says how to translate.

The commands that load engines (translate, serve) take the same flags from one place (`add_engine_arguments`, each
field's metadata: its flag, help and choices) and build the settings from them (`engine_settings`). Settings that
cannot work are a ValueError naming the flag, as `resolve_device` names --device.
"""

import argparse
import dataclasses


ENGINES = ("auto", "transformers", "ctranslate2")
DEVICES = ("auto", "cpu", "cuda")
# the cached export's weight types the commands offer (Python may ask for any CTranslate2 takes: export_ctranslate2)
QUANTIZATIONS = ("float32", "int8", "int8_float32", "int16")
# Measured on 2-vCPU machines (docs/translation.md, "Engines"): one intra-op thread per translation and one
# translation per core; two intra-op threads made CTranslate2 4.6x slower there.
DEFAULT_INTRA_THREADS = 1
GROUP = "engine (what decodes: generate(), or a CTranslate2 export of the model)"


def setting(default, help: str | None, flag: str | None = None, *, command_default=None, **argument):
    """A field of `EngineSettings`: its default, its command flag's help (None: no flag), the flag when not
    --<field>, the flag's default when the commands' differs from Python's, and argparse's other keywords."""
    return dataclasses.field(
        default=default,
        metadata={"help": help, "flag": flag, "argument": argument, "command_default": command_default},
    )


@dataclasses.dataclass(frozen=True)
class EngineSettings:
    """Which engine decodes a saved model, on which device, with which threads and export; checked once."""

    engine: str = setting(
        "auto",
        "auto (default): CTranslate2 when it is installed and the model exports as "
        "generate() decodes, else transformers (generate()); the choice is said on stderr.",
        choices=ENGINES,
    )
    export_dir: str | None = setting(
        None,
        "A CTranslate2 export of --model to use (default: one made once into the "
        "cache, $TRANSFORMER_MT_CACHE or ~/.cache/transformer_mt, keyed by a hash "
        "of the model's files).",
        "--ctranslate2_model",
    )
    quantization: str | None = setting(
        None, "The cached export's weights (default float32, which gives generate()'s tokens).", choices=QUANTIZATIONS
    )
    intra_threads: int = setting(
        DEFAULT_INTRA_THREADS,
        f"CTranslate2 threads per batch (default "
        f"{DEFAULT_INTRA_THREADS}: fastest on the 2-core machines "
        "measured in docs/translation.md).",
        type=int,
    )
    # None (Python's default): where the model is, the CPU when load_engine loads it; the commands' flag says auto
    device: str | None = setting(
        None,
        "Where both engines decode: auto (a CUDA GPU where there is one, as the "
        "launcher places the process; else the CPU), cpu, or cuda (an error without "
        "a GPU).",
        command_default="auto",
        choices=DEVICES,
    )
    inter_threads: int | None = setting(
        None, "CTranslate2 batches decoded at once (default: cores / --intra_threads).", type=int
    )
    cache_dir: str | None = setting(None, None)  # where exports are cached: $TRANSFORMER_MT_CACHE's, no flag

    def __post_init__(self):
        if self.engine not in ENGINES:
            raise ValueError(f"--engine must be one of {', '.join(ENGINES)}; got {self.engine!r}.")
        if self.device is not None and self.device not in DEVICES:
            raise ValueError(f"--device must be one of {', '.join(DEVICES)}; got {self.device!r}.")
        for name in ("intra_threads", "inter_threads"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"--{name} must be >= 1, got {value}")
        fast = [flag_of(name) for name in ("export_dir", "quantization") if getattr(self, name) is not None]
        if fast and self.engine == "transformers":
            raise ValueError(f"{fast[0]} applies to CTranslate2: drop it or --engine transformers")
        if self.export_dir is not None and self.quantization is not None:
            raise ValueError(
                "--quantization applies to the cached export: an export given by --ctranslate2_model "
                "keeps its own weights"
            )

    def replace(self, **changes) -> "EngineSettings":
        """A copy with `changes`, checked again."""
        return dataclasses.replace(self, **changes)


def flag_of(name: str) -> str:
    """The command flag of an `EngineSettings` field."""
    return EngineSettings.__dataclass_fields__[name].metadata["flag"] or f"--{name}"


def flagged_fields(export: bool = True) -> list[dataclasses.Field]:
    """The fields the commands set by flag; `export`: --ctranslate2_model too (the export of a command's one model)."""
    return [
        field
        for field in dataclasses.fields(EngineSettings)
        if field.metadata["help"] is not None and (export or field.name != "export_dir")
    ]


def add_engine_arguments(parser: argparse.ArgumentParser, export: bool = True) -> None:
    """The engine flags, in their own argument group, with the same names, defaults and help on every command;
    `export`: --ctranslate2_model too (not for a command that loads several models)."""
    group = parser.add_argument_group(GROUP)
    for field in flagged_fields(export):
        default = field.default if field.metadata["command_default"] is None else field.metadata["command_default"]
        group.add_argument(
            flag_of(field.name), default=default, help=field.metadata["help"], **field.metadata["argument"]
        )


def engine_settings(args: argparse.Namespace) -> EngineSettings:
    """The settings the engine flags give (`add_engine_arguments`); a flag `args` lacks keeps the field's default."""
    return EngineSettings(
        **{field.name: getattr(args, flag_of(field.name)[2:], field.default) for field in flagged_fields()}
    )


__all__ = [
    "DEFAULT_INTRA_THREADS",
    "DEVICES",
    "ENGINES",
    "EngineSettings",
    "QUANTIZATIONS",
    "add_engine_arguments",
    "engine_settings",
    "flag_of",
    "flagged_fields",
]
