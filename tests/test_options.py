"""The options object (transformer_mt.options): checked once, frozen and hashable, and the one source of the
translate command's flags and the server's option fields."""

import argparse
import dataclasses

import pytest

from transformer_mt.commands.translate import parse_args
from transformer_mt.options import (
    OptionError,
    TranslationOptions,
    add_arguments,
    from_args,
    from_keywords,
    request_fields,
)


@pytest.mark.parametrize(
    "changes, python, command",
    [
        ({"num_beams": 0}, "num_beams must be >= 1, got 0", "--num_beams must be >= 1, got 0"),
        ({"batch_size": -2}, "batch_size must be >= 1, got -2", "--batch_size must be >= 1, got -2"),
        ({"top_p": 1.5, "do_sample": True}, "top_p must be in (0, 1], got 1.5", "--top_p must be in (0, 1], got 1.5"),
        ({"temperature": 0.0, "do_sample": True}, "temperature must be > 0, got 0.0", "--temperature must be > 0"),
        (
            {"top_k": 5},
            "top_k applies to sampling: add do_sample=True",
            "--top_k applies to sampling: add --do_sample",
        ),
        ({"seed": 1}, "seed applies to sampling: add do_sample=True", "--seed applies to sampling: add --do_sample"),
        (
            {"source_lang": "de", "split_sentences": False},
            "source_lang applies to sentence splitting: drop it or split_sentences=False",
            "--source_lang applies to sentence splitting: drop it or --no_split_sentences",
        ),
        (
            {"source_prefix": "<B T>"},
            "source_prefix is one tag without spaces, such as <BT>, got '<B T>'",
            "--source_prefix is one tag without spaces",
        ),
        ({"format": "xml"}, "format must be one of text, html, got 'xml'", "--format must be one of text, html"),
        (
            {"alignments": True, "scores": True},
            "alignments aligns each text's one translation: drop num_return_sequences and scores",
            "--alignments aligns each line's one translation: drop --num_return_sequences and --scores",
        ),
        ({"bad_words": [" "]}, "bad_words holds ' ': a forbidden word must hold text", "--bad_words holds ' '"),
        ({"fold_case": "no"}, "fold_case must be true or false, got 'no'", "--no_fold_case must be true or false"),
        ({"repair_spans": 1}, "repair_spans must be true or false, got 1", "--no_repair_spans must be true or false"),
    ],
)
def test_a_value_that_cannot_work_is_named_in_the_callers_words(changes, python, command):
    with pytest.raises(OptionError) as refused:
        TranslationOptions(**changes)
    assert str(refused.value) == python and refused.value.for_command().startswith(command)
    assert isinstance(refused.value, ValueError)  # the commands' one-line errors catch it


def test_options_are_frozen_hashable_and_equal_by_value():
    first = TranslationOptions(num_beams=4, bad_words=["Save", "Open"])
    second = TranslationOptions(num_beams=4, bad_words=("Save", "Open"))
    assert first == second and hash(first) == hash(second) and len({first, second}) == 1  # the batcher's key
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.num_beams = 5
    assert first.replace(num_beams=5).num_beams == 5 and first.num_beams == 4
    with pytest.raises(OptionError, match="num_beams must be >= 1"):
        first.replace(num_beams=0)  # a changed copy is checked again


def test_more_hypotheses_than_beams_is_refused_against_the_generation_config():
    from transformers import GenerationConfig

    assert TranslationOptions(num_return_sequences=3, num_beams=4).beams(GenerationConfig()) == 4
    assert TranslationOptions(num_return_sequences=3, do_sample=True).beams(GenerationConfig(num_beams=1)) == 1
    with pytest.raises(OptionError) as refused:
        TranslationOptions(num_return_sequences=3).beams(GenerationConfig(num_beams=2))
    assert refused.value.for_command() == (
        "--num_return_sequences 3 needs at least as many beams (--num_beams, now 2) or --do_sample."
    )


def test_the_keyword_form_sets_fields_and_passes_other_controls_to_generate():
    options = from_keywords(num_beams=2, typical_p=0.9, bad_words=["Save"])
    assert (options.num_beams, options.bad_words, options.generate_kwargs) == (2, ("Save",), (("typical_p", 0.9),))
    assert options.generate_controls() == {"typical_p": 0.9}
    assert from_keywords(TranslationOptions(num_beams=3), max_new_tokens=5) == TranslationOptions(
        num_beams=3, max_new_tokens=5
    )
    with pytest.raises(OptionError, match="generate_kwargs repeat options of their own: num_beams"):
        TranslationOptions(generate_kwargs=(("num_beams", 2),))


def flagged_fields() -> list[dataclasses.Field]:
    return [field for field in dataclasses.fields(TranslationOptions) if field.metadata["flag"]]


def test_every_option_with_help_is_a_flag_of_the_translate_command_and_back():
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    flags = {action.dest: action.option_strings for action in parser._actions if action.dest != "help"}
    assert set(flags) == {field.name for field in flagged_fields()}
    assert flags["split_sentences"] == ["--no_split_sentences"] and flags["num_beams"] == ["--num_beams"]
    assert flags["fold_case"] == ["--no_fold_case"]  # a boolean on by default is turned off by its flag
    assert parse_args(["--model", "m", "--no_fold_case", "text"]).options == TranslationOptions(fold_case=False)
    assert parse_args(["--model", "m", "--no_repair_spans", "text"]).options == TranslationOptions(repair_spans=False)
    args = parse_args(
        [
            "--model",
            "m",
            "--num_beams",
            "4",
            "--no_split_sentences",
            "--do_sample",
            "--seed",
            "3",
            "--bad_words",
            "Save",
            "Open",
            "--format",
            "html",
            "--length_penalty",
            "0.6",
            "text",
        ]
    )
    assert args.options == TranslationOptions(
        num_beams=4,
        split_sentences=False,
        do_sample=True,
        seed=3,
        bad_words=("Save", "Open"),
        format="html",
        length_penalty=0.6,
    )
    assert parse_args(["--model", "m", "text"]).options == TranslationOptions()  # unset flags keep the defaults


def test_an_option_added_to_the_dataclass_becomes_a_flag_without_touching_the_command(monkeypatch):
    """What 'adding an option touches the dataclass and the one place that maps it' means for the command."""
    extra = dataclasses.make_dataclass(
        "Extended",
        [
            (
                "min_confidence",
                float | None,
                dataclasses.field(
                    default=None,
                    metadata={
                        "help": "Abstain below this.",
                        "group": "returned",
                        "request": "min_confidence",
                        "flag": True,
                    },
                ),
            )
        ],
        bases=(TranslationOptions,),
        frozen=True,
    )
    monkeypatch.setattr("transformer_mt.options.TranslationOptions", extra)
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert from_args(parser.parse_args(["--min_confidence", "0.5"])).min_confidence == 0.5
    assert request_fields()["min_confidence"] == "min_confidence"


def test_the_server_reads_option_fields_as_the_metadata_names_them():
    from transformer_mt.serving.fields import RequestError, request_options

    assert request_fields() == {
        "context": "context",
        "formality": "formality",
        "format": "format",
        "fold_case": "fold_case",
        "repair_spans": "repair_spans",
        "min_confidence": "min_confidence",
        "guards": "guards",
        "glossary_ignore_case": "glossary_ignore_case",
    }
    assert request_options({"q": "x", "context": "Menu", "formality": "prefer_less"}) == TranslationOptions(
        context="Menu", formality="prefer_less"
    )
    with pytest.raises(RequestError, match="formality must be one of default, more, less, prefer_more"):
        request_options({"q": "x", "formality": "polite"})
    for given in ("0.25", 0.25):  # a form's text, JSON's number
        assert request_options({"q": "x", "min_confidence": given}) == TranslationOptions(min_confidence=0.25)
    with pytest.raises(RequestError, match=r"Invalid request: min_confidence is a probability in \[0, 1\], got 2.0"):
        request_options({"min_confidence": "2"})
    assert request_options({"q": "x", "format": "html"}) == TranslationOptions(format="html")
    for off in (False, "false", "False"):  # JSON's false, a form's or query string's text
        assert request_options({"q": "x", "fold_case": off}) == TranslationOptions(fold_case=False)
        assert request_options({"q": "x", "repair_spans": off}) == TranslationOptions(repair_spans=False)
    with pytest.raises(RequestError, match="Invalid request: fold_case must be true or false, got 'maybe'"):
        request_options({"fold_case": "maybe"})
    assert request_options({"q": "x"}) == TranslationOptions()
    with pytest.raises(RequestError, match="Invalid request: format must be one of text, html, got 'xml'"):
        request_options({"format": "xml"})
