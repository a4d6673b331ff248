"""The translate command (scripts/translate.py) as named steps: its flags (`parse_args`: the options object's own,
`transformer_mt.options`, plus what says where text comes from and goes, and the engine settings' own,
`engines.settings`), its input (`input_lines`), its output written whole or not at all as lines or n-best TSV rows
(`line_writer`), and `run`, which does the whole command on `transformer_mt.translation`'s stream, or on a
structured file (`files.FORMATS`) in its format."""

import argparse
import contextlib
import itertools
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import TextIO

from tqdm.auto import tqdm

from ..checkpoints import load_translator
from ..documents.files import CONTEXT_SOURCES, DEFAULT_CONTEXTS, file_format, translate_file
from ..engines import add_engine_arguments, engine_settings, load_engine, resolve_device
from ..engines.alignment import Alignment, pharaoh
from ..engines.alignment import check_tokenizer as check_alignment_tokenizer
from ..engines.inputs import Hypotheses
from ..options import OptionError, TranslationOptions, add_arguments, from_args
from ..quality import Translation
from ..serving.folder import route
from ..steps import Pivot
from ..text.glossary import read_glossary
from ..translation import process_state, translate_stream, translate_texts
from .streams import atomic_output, read_lines


def parse_args(argv=None, description: str | None = None) -> argparse.Namespace:
    """The translate command's flags, checked: a one-line parser error (exit 2) for a value that cannot work.
    `args.options` is the `TranslationOptions` they give, `args.engine_settings` the `EngineSettings`."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="A directory written by the training script.")
    parser.add_argument(
        "--models",
        dest="models_dir",
        metavar="DIR",
        help="A folder of models (as transformer-mt-serve --models takes): the one translating "
        "--source_lang into --target_lang (the first by name of several) instead of --model.",
    )
    parser.add_argument("text", nargs="*", help="Texts to translate (default: read --input or stdin).")
    parser.add_argument(
        "--input",
        help="A UTF-8 file with one text per line, or a file translated in "
        "its own format: .po/.pot, .xlf/.xliff, .html, .md, .srt, .vtt, .json, .yaml/.yml, .docx, "
        ".pptx, .odt, .odp, .epub.",
    )
    parser.add_argument("--output", help="Write the translations here (default: stdout); it must not exist yet.")
    parser.add_argument("--chunk_size", type=int, default=4096, help="Lines read, sorted and batched at a time.")
    parser.add_argument("--no_progress", action="store_true", help="No progress bar on stderr.")
    add_arguments(parser)
    given = parser.add_argument_group("given text and alignments")
    given.add_argument(
        "--target_prefix",
        help="A UTF-8 file of prefixes, one per input line (empty: none): each "
        "translation begins with its line's prefix (with splitting on: the line's first sentence).",
    )
    given.add_argument(
        "--alignments",
        metavar="FILE",
        help="Also write each line's word alignment with its "
        "translation here, a line each: Pharaoh `i-j` pairs (source word i, target word j, from 0), "
        "from the cross-attention of the model's alignment_layer and alignment_heads "
        "(transformer_mt.engines.alignment).",
    )
    add_engine_arguments(parser)
    add_file_arguments(parser)
    parser.add_argument(
        "--glossary",
        metavar="FILE",
        help="Terms the translation must use: a TSV of a source term, a tab and its target term "
        "(none: the term stays as it is) a line (text.glossary; --glossary_ignore_case "
        "to match them in any case). Followed by a model trained with --term_annotation_share; "
        "any other model's translations are checked against it.",
    )
    parser.add_argument(
        "--interactive",
        action="store_true",
        help="Translate each line as it arrives (on by default when stdin is a terminal).",
    )
    args = parser.parse_args(argv)
    pick_model(parser, args)
    if args.glossary is not None and not os.path.isfile(args.glossary):
        parser.error(f"--glossary {args.glossary!r} does not exist")
    try:
        args.options = command_options(from_args(args), args)
    except OptionError as error:
        parser.error(error.for_command())
    except ValueError as error:  # a glossary line that is not one
        parser.error(f"--glossary: {error}")
    check_args(parser, args)
    return args


def add_file_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of a structured --input (`translate_structured_file`)."""
    parser.add_argument(
        "--context_from",
        nargs="+",
        choices=CONTEXT_SOURCES,
        default=sorted(DEFAULT_CONTEXTS),
        help="A structured --input, for a model trained with context: where each text's context is read from: "
        "msgctxt (a .po message's msgctxt, an XLIFF unit's resname or first note), comments (a .po message's "
        "#. comments where it has no msgctxt), keys (a JSON/YAML value's key path). Default: msgctxt; key paths "
        "cost the shipped en-fr model 2 BLEU (docs/translation.md).",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="A .po or XLIFF --input: translate entries that already have a translation too (default: keep them).",
    )
    parser.add_argument(
        "--trusted_above",
        type=float,
        metavar="CONFIDENCE",
        help="A .po or XLIFF --input: entries whose confidence is above this are not marked fuzzy "
        "(XLIFF: state translated); default: every entry is for review.",
    )


def pick_model(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """--model, or --models DIR's model of --source_lang -> --target_lang (or its two models through English,
    `args.pivot_model` the second): there the two flags choose the model, whose config then gives both (with
    --model they override its config's)."""
    args.pivot_model = None
    if (args.model is None) == (args.models_dir is None):
        parser.error("give --model DIR, or --models DIR with --source_lang and --target_lang (one of the two)")
    if args.models_dir is not None:
        try:
            args.model, *through = route(args.models_dir, args.source_lang, args.target_lang)
        except ValueError as error:
            parser.error(str(error))
        if through and args.alignments:
            parser.error(
                f"--alignments: {args.source_lang}-{args.target_lang} is translated through English by two "
                "models, and a word alignment is one model's"
            )
        args.pivot_model = through[0] if through else None
        args.source_lang = args.target_lang = None


def command_options(options: TranslationOptions, args: argparse.Namespace) -> TranslationOptions:
    """The flags' options as the command needs them: n-best rows carry scores, --alignments returns alignments,
    --glossary's file read."""
    glossary = read_glossary(args.glossary) if args.glossary else ()
    return options.replace(scores=options.nbest, alignments=args.alignments is not None, glossary=glossary)


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """A one-line parser error (exit 2) for a value or a combination of options that cannot work."""
    for name in ("input", "target_prefix"):
        if getattr(args, name) is not None and not os.path.isfile(getattr(args, name)):
            parser.error(f"--{name} {getattr(args, name)!r} does not exist")
    for name in ("output", "alignments"):
        if getattr(args, name) is not None and os.path.exists(getattr(args, name)):
            parser.error(
                f"--{name} {getattr(args, name)!r} exists; translations never replace a file (choose another name)"
            )
    if args.alignments is not None and args.alignments == args.output:
        parser.error(f"--alignments and --output are both {args.output!r}: give each its own file")
    if args.chunk_size < 1:
        parser.error(f"--chunk_size must be >= 1, got {args.chunk_size}")
    try:
        args.engine_settings = engine_settings(args)
    except ValueError as error:
        parser.error(str(error))
    kind = file_format(args.input) if args.input else None
    if kind and args.output is None:
        parser.error(f"--input {args.input!r} is a {kind} file: give --output, written in the same format")
    if kind and (args.options.nbest or args.target_prefix or args.alignments):
        parser.error(
            f"a {kind} file gets one translation per text, written in its format: drop "
            "--num_return_sequences, --scores, --target_prefix and --alignments"
        )
    if kind and args.options.format != "text":
        parser.error(f"a {kind} --input is read in its own format: drop --format")
    if args.overwrite and not kind:
        parser.error("--overwrite applies to a .po or XLIFF --input (its entries already translated)")
    if args.trusted_above is not None and (kind not in ("po", "xliff") or not 0 <= args.trusted_above <= 1):
        parser.error(
            f"--trusted_above is a confidence in [0, 1] for a .po or XLIFF --input, got "
            f"{args.trusted_above} for {args.input or 'lines'}"
        )


@contextlib.contextmanager
def input_lines(args, problems: list[str]) -> Iterator[tuple[Iterable[str], str | None, int | None]]:
    """The lines the command translates, the input's name for messages (None for texts given as arguments), and
    their count when known (for the progress bar). A file or stdin is read as UTF-8 (`read_lines`): a line that is
    not goes to `problems` and reads as empty."""
    if args.text:
        yield args.text, None, len(args.text)
    elif args.input:
        with open(args.input, "rb") as counted:
            total = sum(1 for _ in counted)
        with open(args.input, "rb") as stream:
            yield read_lines(stream, args.input, problems), args.input, total
    else:
        yield read_lines(sys.stdin.buffer, "<stdin>", problems), "<stdin>", None


def line_writer(
    output: TextIO, nbest: bool, flush: bool = False, alignments: TextIO | None = None, confidence: bool = False
) -> Callable[[str | Hypotheses, Alignment | None], None]:
    """`translate_stream`'s `write` for the command: a line per translation, or with `nbest` a TSV row per
    hypothesis (line number, rank, score, translation); with `confidence`, the line's calibrated confidence first
    (a TSV column: confidence, translation; in n-best rows before the translation); with `alignments`, each line's
    alignment there in Pharaoh format; `flush` after each, for a reader waiting on a pipe. A line left untranslated
    below --min_confidence, or whose translation a guard still flags, is named on stderr."""
    numbers = itertools.count(1)

    def write(translation, alignment=None):
        number = next(numbers)
        flags = getattr(translation, "flags", None)
        known = flags.confidence if flags else None
        rated = ("" if known is None else f"{known:.4f}") + "\t" if confidence else ""
        if nbest:
            for rank, (text, score) in enumerate(translation, 1):
                print(f"{number}\t{rank}\t{score:.4f}\t{rated}{text}", file=output, flush=flush)
        else:
            print(f"{rated}{translation}", file=output, flush=flush)
        if alignments is not None:
            print(pharaoh(alignment), file=alignments, flush=flush)
        if flags and (flags.abstained or flags.guards):
            print(f"line {number}: {flags.comment()}", file=sys.stderr)

    return write


def report_unreadable(problems: list[str], name: str, is_main_process: bool) -> None:
    """Fail (exit status 2) when lines could not be read: the main process names up to five of them."""
    if not problems:
        return
    if not is_main_process:
        raise SystemExit(2)  # the main process says why
    shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
    raise ValueError(f"{len(problems)} line(s) of {name} could not be read and are empty in the output: {shown}")


def run(args: argparse.Namespace) -> int:
    """Translate what `args` (from `parse_args`) name, as scripts/translate.py documents; returns the line count.

    Under a distributed launch every process translates its share of the batches and the main process writes.
    """
    state = process_state()
    model, tokenizer = load_translator(args.model)
    if args.alignments:
        check_alignment_tokenizer(tokenizer)  # before anything is translated
    options = args.options
    if options.source_prefix and options.source_prefix not in tokenizer.all_special_tokens and state.is_main_process:
        print(
            f"warning: --source_prefix {options.source_prefix}: the model's tokenizer has no such special token, so "
            "it is read as ordinary text (a model trained with --source_prefix holds its tag)",
            file=sys.stderr,
        )
    try:
        options.beams(model.generation_config)
    except OptionError as error:
        raise ValueError(error.for_command()) from None
    settings = args.engine_settings
    # placed here: under a launch each process takes the device the launcher gives it (auto), which load_engine keeps
    model.to(state.device if settings.device == "auto" else resolve_device(settings.device))
    engine = load_engine(
        args.model,
        settings.replace(device=None),
        model=model,
        tokenizer=tokenizer,
        main_process_first=state.main_process_first,
        sampling=options.do_sample,
        num_beams=options.num_beams,
    )
    if args.pivot_model is not None:  # --models without the pair: through English (steps.pivot)
        engine = Pivot(engine, load_engine(args.pivot_model, settings.replace(device=str(model.device))))
    if state.is_main_process:
        print(f"engine: {engine.name} ({engine.reason})", file=sys.stderr)
    try:
        if args.input and file_format(args.input):
            return translate_structured_file(args, engine, state)
        return translate_lines(args, engine, state)
    except OptionError as error:  # found against the model (a length past its position table)
        raise ValueError(error.for_command()) from None


def translate_lines(args: argparse.Namespace, engine, state) -> int:
    """Lines from the arguments, --input or stdin, through `translate_stream` into --output or stdout."""
    options = args.options
    interactive = args.interactive or (not args.text and not args.input and sys.stdin.isatty())
    problems = []
    with contextlib.ExitStack() as stack:
        lines, name, total = stack.enter_context(input_lines(args, problems))
        output = stack.enter_context(atomic_output(args.output if state.is_main_process else None))
        aligned = (
            stack.enter_context(atomic_output(args.alignments)) if args.alignments and state.is_main_process else None
        )
        progress = stack.enter_context(
            tqdm(
                total=total, unit="lines", disable=args.no_progress or interactive or not state.is_main_process or None
            )
        )
        prefixes = None
        if args.target_prefix:
            prefix_stream = stack.enter_context(open(args.target_prefix, "rb"))
            prefixes = (line or None for line in read_lines(prefix_stream, args.target_prefix))
        write = line_writer(output, options.nbest, interactive, aligned, options.confidence)
        count = translate_stream(
            engine,
            lines,
            write,
            options,
            target_prefix=prefixes,
            chunk_size=1 if interactive else args.chunk_size,
            progress=progress.update,
        )
    if count == 0 and state.is_main_process:
        print(
            f"warning: {name or 'the input'} held no lines: nothing was translated (give sentences as arguments, "
            "--input FILE, or lines on stdin)",
            file=sys.stderr,
        )
    report_unreadable(problems, name, state.is_main_process)
    return count


def translate_structured_file(args: argparse.Namespace, engine, state) -> int:
    """A structured --input (.po, XLIFF, HTML, Markdown, subtitles, string files, office documents), written to
    --output in its own format (`transformer_mt.documents.files`); one process."""
    if state.num_processes > 1:
        raise ValueError(
            f"{args.input}: a {file_format(args.input)} file is translated by one process; run it without a launcher"
        )

    def translate(texts: list[str], format: str = "text", context: str | None = None) -> list[str]:
        options = args.options.replace(format=format, context=context or args.options.context)
        return [
            Translation(hypotheses[0][0] if hypotheses else "", hypotheses.flags)
            for hypotheses in translate_texts(engine, texts, options)
        ]

    reads = getattr(engine.config, "source_context", False)
    if not reads and set(args.context_from) != DEFAULT_CONTEXTS:
        print(
            f"warning: --context_from {' '.join(args.context_from)} is not read: this model was not trained with "
            "context (--context_column)",
            file=sys.stderr,
        )
    with atomic_output(args.output) as output:
        output.close()  # translate_file writes by path; atomic_output renames it into place when this ends
        report = translate_file(
            args.input,
            output.name,
            translate,
            overwrite=args.overwrite,
            trusted_above=args.trusted_above,
            contexts=set(args.context_from) if reads else set(),
        )
    differ = len(report.placeholders_differ)
    differ = f"; placeholders or tags differ in {differ} (marked for review)" if differ else ""
    abstained = f"; {report.abstained} left untranslated below --min_confidence" if report.abstained else ""
    print(
        f"{args.input} -> {args.output} ({report.format}): {report.translated} translated, {report.kept} kept"
        f"{differ}{abstained}",
        file=sys.stderr,
    )
    return report.translated


__all__ = [
    "check_args",
    "command_options",
    "input_lines",
    "line_writer",
    "parse_args",
    "report_unreadable",
    "run",
    "translate_lines",
    "translate_structured_file",
]
