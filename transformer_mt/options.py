"""How to translate, as one object: `TranslationOptions`, built once at the edge (the translate command's flags, a
server request, a pipeline call, `translate()`'s keywords) and passed down whole, as transformers passes a
`GenerationConfig` and fairseq a `GenerationConfig` dataclass to its `SequenceGenerator`.

It is frozen and hashable (the server's batcher keys its batches on it) and checks itself when it is made: a value
that cannot work is an `OptionError`, a ValueError that names the option, the value and what is allowed, in the
words of the caller (`--num_beams` for the command, `num_beams=` for Python). Each field's metadata says where it
comes from: `help` for the command's flag (`add_arguments`, `from_args`), `request` for the server's request field.

Each option is read in one place. The search options (beams, hypotheses, lengths, the generate() controls, the
seed, forbidden words) are mapped by the engines (`transformer_mt.engines`); the steps around the engine read
theirs: `split_sentences` and `source_lang` (sentences), `fold_case` (casing), `repair_spans` (spans),
`source_prefix` and `target_lang` (tags), `context` and `formality` (the engines: a second segment and a
register tag), `format` (markup), `confidence`, `min_confidence` and `guards` (trust),
`glossary` and `glossary_ignore_case` (the terms the model is shown), `scores` and `alignments` (what comes back).
An option the next step needs (a cache bypass) is a field here plus the step that reads it.
"""

import argparse
import dataclasses
import re
from typing import Any

from .text.glossary import check_glossary


FORMATS = ("text", "html")
# the register asked for (DeepL's values): `more`/`less` need a model trained with the tags (--formality_share),
# `prefer_*` fall back to the model's own choice on one without, `default` lets the model choose
FORMALITIES = ("default", "more", "less", "prefer_more", "prefer_less")


class OptionError(ValueError):
    """An option's value that cannot work: `option` names it; the message reads as the caller writes options."""

    def __init__(self, option: str, detail: str, style: str = "python"):
        self.option, self.detail = option, detail
        super().__init__(_render(f"{{{option}}} {detail}", style))

    def for_command(self) -> str:
        """The message with options written as the translate command's flags."""
        return _render(f"{{{self.option}}} {self.detail}", "command")


def _render(template: str, style: str) -> str:
    """`template` with each `{name}` or `{name=value}` written as a flag (`--name`) or a Python keyword."""
    names = {field.name for field in dataclasses.fields(TranslationOptions)}
    written = {}
    for name in names:
        flag = _flag(name)
        written[name] = flag if style == "command" else name
        setting = f"{name}={not _negated(name)}"  # what the flag sets: do_sample=True, split_sentences=False
        written[setting] = flag if style == "command" else setting
    written["text"] = "line" if style == "command" else "text"  # what the command reads a text as
    return re.sub(r"\{(\w+(?:=\w+)?)\}", lambda match: written.get(match[1], match[0]), template)


def _negated(name: str) -> bool:
    """Whether the option is on unless its flag says no (a boolean whose default is True)."""
    return any(field.name == name and field.default is True for field in dataclasses.fields(TranslationOptions))


def _flag(name: str) -> str:
    return f"--no_{name}" if _negated(name) else f"--{name}"


def option(default, help: str, *, group: str = "decoding", request: str | None = None, flag: bool = True):
    """A field of `TranslationOptions`: its default, its help (the command's flag), the argument group it is listed
    under, and the server's request field that sets it (None: not one)."""
    return dataclasses.field(
        default=default, metadata={"help": help, "group": group, "request": request, "flag": flag}
    )


GROUPS = {
    "search": "decoding (generate()'s controls; default: the model's generation config)",
    "sentences": "sentences (each line is split into sentences, translated and joined)",
    "given": "given text (transformer_mt.constraints, transformer_mt.tags)",
    "trust": "trust (transformer_mt.quality: a calibrated confidence, guards, abstaining)",
    "returned": "what comes back",
}


@dataclasses.dataclass(frozen=True)
class TranslationOptions:
    """Everything that says how texts are translated, checked once; `replace` gives a changed copy."""

    num_beams: int | None = option(None, "Beam size (default: the model's generation config).", group="search")
    num_return_sequences: int = option(
        1,
        "N-best: N hypotheses a text (the command writes them as TSV rows: line number, rank, score, translation).",
        group="search",
    )
    max_new_tokens: int | None = option(
        None,
        "Longest translation in tokens (default: twice the input plus 10, within the model's limits).",
        group="search",
    )
    batch_size: int = option(16, "Sentences per batch.", group="search")
    length_penalty: float | None = option(
        None, "Beam scores are log-probability / length**length_penalty (> 1 favours longer).", group="search"
    )
    no_repeat_ngram_size: int | None = option(None, "Never repeat an n-gram of this size.", group="search")
    repetition_penalty: float | None = option(
        None,
        "Divide the scores of tokens already written by this (> 1 repeats less; CTRL's penalty, on both engines).",
        group="search",
    )
    do_sample: bool = option(False, "Sample instead of searching (back-translation).", group="search")
    top_k: int | None = option(None, "Sample from the k most likely tokens.", group="search")
    top_p: float | None = option(None, "Sample from the smallest set of tokens of this probability.", group="search")
    temperature: float | None = option(None, "Divide the logits by this before sampling.", group="search")
    seed: int | None = option(None, "Seed the sampling: the same seed gives the same output.", group="search")
    bad_words: tuple[str, ...] = option((), "Words no translation may contain.", group="given")
    # generate()'s other controls, by name, for the Python API (`translate(..., typical_p=0.9)`); CTranslate2 refuses
    # those it has no equivalent of
    generate_kwargs: tuple[tuple[str, Any], ...] = option((), "", flag=False)
    split_sentences: bool = option(
        True, "Translate each line as one sequence (what the model was trained on: one sentence).", group="sentences"
    )
    source_lang: str | None = option(
        None, "The language to split texts by (default: the model config's source_lang).", group="sentences"
    )
    target_lang: str | None = option(
        None,
        "The language to write, for a model trained on several (--target_lang_column): its token, >>xx<<, is "
        "forced first; for an imported Opus-MT model of several, the source begins with it.",
        group="given",
    )
    source_prefix: str | None = option(
        None,
        "Begin every sentence with this tag, as the model was trained (--source_prefix), e.g. <BT>.",
        group="given",
    )
    fold_case: bool = option(
        True,
        "Show the model an ALL CAPS or Title Case sentence in sentence case, as it was "
        "trained, and give its translation the source's case back (text.casing)"
        "; --no_fold_case translates it as written.",
        group="sentences",
        request="fold_case",
    )
    repair_spans: bool = option(
        True,
        "Put back the placeholders, URLs, paths and numbers a translation lost, where "
        "the word alignment takes their source words (transformer_mt.text.spans), each "
        "named in a warning; --no_repair_spans leaves the model's output as it is.",
        group="sentences",
        request="repair_spans",
    )
    context: str | None = option(
        None,
        "What the texts are about (a message's msgctxt, a key path, a translator's "
        "comment): read by a model trained with context (--context_column) as each "
        "sentence's second segment, never translated, masked or aligned itself.",
        group="given",
        request="context",
    )
    formality: str = option(
        "default",
        "The register to address the reader in: more or less (a model trained with "
        "the tags, --formality_share; refused by any other), prefer_more or "
        "prefer_less (the model's own choice on one without), or default.",
        group="given",
        request="formality",
    )
    format: str = option(
        "text",
        "text, or html: the text of HTML fragments is translated and their markup kept.",
        group="given",
        request="format",
    )
    confidence: bool = option(
        False,
        "Return each translation's calibrated confidence: the probability that its chrF "
        "reaches the calibration's threshold (the model's calibration.json; a line's "
        "is its weakest sentence's).",
        group="trust",
    )
    min_confidence: float | None = option(
        None,
        "Leave a sentence whose confidence is below this untranslated (its source kept, and flagged).",
        group="trust",
        request="min_confidence",
    )
    guards: bool = option(
        True,
        "Decode a sentence again when its translation loops, copies its source or has a "
        "length far from its source's, and flag it with confidence 0 if it still does; "
        "--no_guards keeps the first translation.",
        group="trust",
        request="guards",
    )
    glossary: tuple[tuple[str, str | None], ...] = option((), "", group="trust", flag=False)  # --glossary FILE
    glossary_ignore_case: bool = option(
        False, "Match the glossary's source terms whatever their case.", group="trust", request="glossary_ignore_case"
    )
    scores: bool = option(
        False, "Return each hypothesis' score (the command: the n-best TSV even for one hypothesis).", group="returned"
    )
    alignments: bool = option(False, "", group="returned", flag=False)  # the command's --alignments names a file

    def __post_init__(self):
        object.__setattr__(self, "bad_words", tuple(self.bad_words or ()))
        object.__setattr__(self, "generate_kwargs", tuple(sorted(dict(self.generate_kwargs).items())))
        try:
            object.__setattr__(self, "glossary", check_glossary(self.glossary or ()))
        except ValueError as error:
            raise OptionError("glossary", str(error)) from None
        for name in (
            "num_beams",
            "num_return_sequences",
            "max_new_tokens",
            "batch_size",
            "no_repeat_ngram_size",
            "top_k",
        ):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise OptionError(name, f"must be >= 1, got {value!r}")
        if self.repetition_penalty is not None and not self.repetition_penalty > 0:
            raise OptionError("repetition_penalty", f"must be > 0 (1 changes nothing), got {self.repetition_penalty}")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise OptionError("top_p", f"must be in (0, 1], got {self.top_p}")
        if self.temperature is not None and not self.temperature > 0:
            raise OptionError("temperature", f"must be > 0, got {self.temperature}")
        sampling = [name for name in ("top_k", "top_p", "temperature", "seed") if getattr(self, name) is not None]
        if sampling and not self.do_sample:
            raise OptionError(sampling[0], "applies to sampling: add {do_sample=True}")
        if self.source_prefix is not None and (not self.source_prefix.strip() or len(self.source_prefix.split()) > 1):
            raise OptionError("source_prefix", f"is one tag without spaces, such as <BT>, got {self.source_prefix!r}")
        if self.source_lang is not None and not self.split_sentences:
            raise OptionError("source_lang", "applies to sentence splitting: drop it or {split_sentences=False}")
        if self.min_confidence is not None and (
            isinstance(self.min_confidence, bool)
            or not isinstance(self.min_confidence, (int, float))
            or not 0 <= self.min_confidence <= 1
        ):
            raise OptionError("min_confidence", f"is a probability in [0, 1], got {self.min_confidence!r}")
        for name in ("fold_case", "repair_spans", "guards", "confidence", "glossary_ignore_case"):
            if not isinstance(getattr(self, name), bool):
                raise OptionError(name, f"must be true or false, got {getattr(self, name)!r}")
        if self.context is not None and (not isinstance(self.context, str) or not self.context.strip()):
            raise OptionError("context", f"is a text to read beside the source, got {self.context!r}")
        if self.formality not in FORMALITIES:
            raise OptionError("formality", f"must be one of {', '.join(FORMALITIES)}, got {self.formality!r}")
        if self.format not in FORMATS:
            raise OptionError("format", f"must be one of {', '.join(FORMATS)}, got {self.format!r}")
        if self.alignments and (self.num_return_sequences > 1 or self.scores):
            raise OptionError(
                "alignments", "aligns each {text}'s one translation: drop {num_return_sequences} and {scores}"
            )
        for word in self.bad_words:
            if not isinstance(word, str) or not word.strip():
                raise OptionError("bad_words", f"holds {word!r}: a forbidden word must hold text")
        taken = sorted(set(dict(self.generate_kwargs)) & {field.name for field in dataclasses.fields(self)})
        if taken:
            raise OptionError("generate_kwargs", f"repeat options of their own: {', '.join(taken)}")

    @property
    def calibrated(self) -> bool:
        """Whether these options need the model's calibration (a confidence returned or a minimum)."""
        return self.confidence or self.min_confidence is not None

    def replace(self, **changes) -> "TranslationOptions":
        """A copy with `changes`, checked again (a re-decode with other settings, a request's own values)."""
        return dataclasses.replace(self, **changes)

    @property
    def nbest(self) -> bool:
        """Whether each text's hypotheses come back as (text, score) lists rather than one text."""
        return self.num_return_sequences > 1 or self.scores

    def beams(self, generation_config) -> int:
        """The beams a search runs with: these options' or the generation config's; an OptionError when more
        hypotheses are asked for than beams without sampling."""
        beams = self.num_beams or generation_config.num_beams or 1
        if self.num_return_sequences > beams and not self.do_sample:
            raise OptionError(
                "num_return_sequences",
                f"{self.num_return_sequences} needs at least as many beams "
                f"({{num_beams}}, now {beams}) or {{do_sample=True}}.",
            )
        return beams

    def generate_controls(self) -> dict:
        """generate()'s decoding keywords these options set (the rest come from the generation config)."""
        controls = {
            name: getattr(self, name)
            for name in (
                "length_penalty",
                "no_repeat_ngram_size",
                "repetition_penalty",
                "top_k",
                "top_p",
                "temperature",
            )
            if getattr(self, name) is not None
        }
        if self.do_sample:
            controls["do_sample"] = True
        return {**controls, **dict(self.generate_kwargs)}


def from_keywords(options: TranslationOptions | None = None, **keywords) -> TranslationOptions:
    """Options from the keyword form of the batch API (`translate(model, tokenizer, texts, num_beams=4, ...)`):
    `options`' values (default: the defaults) changed by the keywords named after its fields, every other keyword
    a generate() control (`typical_p=0.9`)."""
    names = {field.name for field in dataclasses.fields(TranslationOptions)}
    given = {name: value for name, value in keywords.items() if name in names}
    controls = {name: value for name, value in keywords.items() if name not in names}
    if "bad_words" in given:
        given["bad_words"] = tuple(given["bad_words"] or ())
    base = options or TranslationOptions()
    if controls:
        given["generate_kwargs"] = (*base.generate_kwargs, *controls.items())
    return base.replace(**given) if given else base


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The translate command's flags, one per option with a `help`, in the groups of `GROUPS`: their defaults are
    None (unset) so that `from_args` keeps the options' own."""
    groups = {name: parser.add_argument_group(title) for name, title in GROUPS.items()}
    for field in dataclasses.fields(TranslationOptions):
        if not field.metadata["flag"]:
            continue
        group, help = groups[field.metadata["group"]], field.metadata["help"]
        if field.type in (bool, "bool"):
            group.add_argument(
                _flag(field.name), dest=field.name, action="store_const", const=not field.default, help=help
            )
        elif field.name == "bad_words":
            group.add_argument(_flag(field.name), nargs="+", metavar="WORD", help=help)
        elif field.name in ("format", "formality"):
            group.add_argument(
                _flag(field.name), choices=FORMATS if field.name == "format" else FORMALITIES, help=help
            )
        else:
            group.add_argument(_flag(field.name), type=_scalar_type(field), help=help)


def _scalar_type(field) -> type:
    text = str(field.type)
    return int if "int" in text else float if "float" in text else str


def from_args(args: argparse.Namespace) -> TranslationOptions:
    """The options the command's flags give (`add_arguments`); an OptionError names the flag."""
    given = {
        field.name: getattr(args, field.name)
        for field in dataclasses.fields(TranslationOptions)
        if field.metadata["flag"] and getattr(args, field.name, None) is not None
    }
    if given.get("bad_words"):
        given["bad_words"] = tuple(given["bad_words"])
    try:
        return TranslationOptions(**given)
    except OptionError as error:
        raise OptionError(error.option, error.detail, style="command") from None


def guards_in_evaluation(*, fits_confidence: bool) -> bool:
    """Whether an evaluation of a saved model decodes with the guards (`guards`): the one rule that scoring
    (`evaluation.translator`: the score command, the studies' `score_sets`, the promotion test) and calibration
    (`calibration.rated_translations`) read.

    Calibration (`fits_confidence`) runs without them: it fits the confidence of the model's first decode (the
    features of the translation its search gave), which a guard's re-decode would replace, and the guards read the
    very calibration being fitted (the length guard's band, a copy's confidence, the confidence a re-decode must
    keep), so that a fit would depend on the one it replaces. Scoring runs with them, as every translation path
    does by default: a score is what the model's decode gives its users, re-decodes included (the shipped models'
    scores.json are the score command's so). The trust study weighs the guards themselves: calibration's
    translations against the default options'."""
    return not fits_confidence


def request_fields() -> dict[str, str]:
    """The server's request fields that set options: request field -> option."""
    return {
        field.metadata["request"]: field.name
        for field in dataclasses.fields(TranslationOptions)
        if field.metadata["request"]
    }


__all__ = [
    "FORMALITIES",
    "FORMATS",
    "GROUPS",
    "OptionError",
    "TranslationOptions",
    "add_arguments",
    "from_args",
    "from_keywords",
    "guards_in_evaluation",
    "option",
    "request_fields",
]
