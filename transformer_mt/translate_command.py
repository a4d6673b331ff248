"""The translate command (scripts/translate.py) as named steps: its options, checked (`parse_args`), the generate()
controls they give (`decoding_options`), its input (`input_lines`), its output written whole or not at all
(`atomic_output`) as lines or n-best TSV rows (`line_writer`), and `run`, which does the whole command on
`transformer_mt.translation`'s stream. Options a later engine or file format needs land here."""

import argparse
import contextlib
import itertools
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import TextIO

from tqdm.auto import tqdm
from transformers import set_seed

from .alignment import Alignment, pharaoh
from .alignment import check_tokenizer as check_alignment_tokenizer
from .checkpoints import load_translator
from .engines import DEFAULT_INTRA_THREADS, ENGINES, load_engine
from .files import file_format
from .translation import Hypotheses, process_state, read_lines, translate_stream


def parse_args(argv=None, description: str | None = None) -> argparse.Namespace:
    """The translate command's options, checked: a one-line parser error (exit 2) for a value that cannot work."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="A directory written by the training script.")
    parser.add_argument("text", nargs="*", help="Texts to translate (default: read --input or stdin).")
    parser.add_argument("--input", help="A UTF-8 file with one text per line.")
    parser.add_argument("--output", help="Write the translations here (default: stdout); it must not exist yet.")
    parser.add_argument("--num_beams", type=int, help="Beam size (default: the model's generation config).")
    parser.add_argument("--batch_size", type=int, default=16, help="Sentences per batch.")
    parser.add_argument("--max_new_tokens", type=int, help="Longest translation (default: relative to the input).")
    parser.add_argument("--chunk_size", type=int, default=4096, help="Lines read, sorted and batched at a time.")
    parser.add_argument("--no_progress", action="store_true", help="No progress bar on stderr.")
    sentences = parser.add_argument_group("sentences (each line is split into sentences, translated and joined)")
    sentences.add_argument("--source_lang", help="The language to split lines by (default: the model config's "
                           "source_lang).")
    sentences.add_argument("--no_split_sentences", action="store_true",
                           help="Translate each line as one sequence (what the model was trained on: one sentence).")
    decoding = parser.add_argument_group("decoding (generate()'s controls; default: the model's generation config)")
    decoding.add_argument("--length_penalty", type=float,
                          help="Beam scores are log-probability / length**length_penalty (> 1 favours longer).")
    decoding.add_argument("--no_repeat_ngram_size", type=int, help="Never repeat an n-gram of this size.")
    decoding.add_argument("--num_return_sequences", type=int, default=1,
                          help="N-best: write N hypotheses a line as TSV: line number, rank, score, translation.")
    decoding.add_argument("--scores", action="store_true", help="Write the TSV with scores even for 1 hypothesis.")
    decoding.add_argument("--do_sample", action="store_true", help="Sample instead of searching (back-translation).")
    decoding.add_argument("--top_k", type=int, help="Sample from the k most likely tokens.")
    decoding.add_argument("--top_p", type=float, help="Sample from the smallest set of tokens of this probability.")
    decoding.add_argument("--temperature", type=float, help="Divide the logits by this before sampling.")
    decoding.add_argument("--seed", type=int, help="Seed the sampling: the same seed gives the same output.")
    given = parser.add_argument_group("given text (transformer_mt.constraints)")
    given.add_argument("--target_prefix", help="A UTF-8 file of prefixes, one per input line (empty: none): each "
                       "translation begins with its line's prefix (with splitting on: the line's first sentence).")
    given.add_argument("--bad_words", nargs="+", metavar="WORD", help="Words no translation may contain.")
    given.add_argument("--target_lang", help="The language to write, for a model trained on several "
                       "(--target_lang_column): its token, >>xx<<, is forced first (transformer_mt.tags).")
    given.add_argument("--source_prefix", metavar="TAG", help="Begin every sentence with this tag, as the model was "
                       "trained (--source_prefix), e.g. <BT>.")
    given.add_argument("--alignments", metavar="FILE", help="Also write each line's word alignment with its "
                       "translation here, a line each: Pharaoh `i-j` pairs (source word i, target word j, from 0), "
                       "from the cross-attention of the model's alignment_layer and alignment_heads "
                       "(transformer_mt.alignment).")
    engines = parser.add_argument_group("engine (what decodes: generate(), or a CTranslate2 export of the model)")
    engines.add_argument("--engine", choices=ENGINES, default="auto",
                         help="auto (default): CTranslate2 when it is installed and the model exports as generate() "
                         "decodes, else transformers (generate()); the choice is said on stderr.")
    engines.add_argument("--ctranslate2_model", help="A CTranslate2 export of --model to use (default: one made once "
                         "into the cache, $TRANSFORMER_MT_CACHE or ~/.cache/transformer_mt, keyed by a hash of the "
                         "model's files).")
    engines.add_argument("--quantization", choices=("float32", "int8", "int8_float32", "int16"),
                         help="The cached export's weights (default float32, which gives generate()'s tokens).")
    engines.add_argument("--intra_threads", type=int, default=DEFAULT_INTRA_THREADS,
                         help=f"CTranslate2 threads per batch (default {DEFAULT_INTRA_THREADS}: fastest on the 2-core "
                         "machines measured in docs/translation.md).")
    engines.add_argument("--inter_threads", type=int,
                         help="CTranslate2 batches decoded at once (default: cores / --intra_threads).")
    parser.add_argument("--overwrite", action="store_true", help="A .po or XLIFF --input: translate entries that "
                        "already have a translation too (default: keep them).")
    parser.add_argument("--interactive", action="store_true",
                        help="Translate each line as it arrives (on by default when stdin is a terminal).")
    args = parser.parse_args(argv)
    check_args(parser, args)
    return args


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """A one-line parser error (exit 2) for a value or a combination of options that cannot work."""
    for name in ("input", "target_prefix"):
        if getattr(args, name) is not None and not os.path.isfile(getattr(args, name)):
            parser.error(f"--{name} {getattr(args, name)!r} does not exist")
    for name in ("output", "alignments"):
        if getattr(args, name) is not None and os.path.exists(getattr(args, name)):
            parser.error(f"--{name} {getattr(args, name)!r} exists; translations never replace a file (choose "
                         "another name)")
    if args.alignments is not None and (args.num_return_sequences > 1 or args.scores):
        parser.error("--alignments aligns each line's one translation: drop --num_return_sequences and --scores")
    if args.alignments is not None and args.alignments == args.output:
        parser.error(f"--alignments and --output are both {args.output!r}: give each its own file")
    if args.source_prefix is not None and (not args.source_prefix.strip() or len(args.source_prefix.split()) > 1):
        parser.error(f"--source_prefix is one tag without spaces, such as <BT>, got {args.source_prefix!r}")
    for name in ("num_beams", "batch_size", "max_new_tokens", "chunk_size", "no_repeat_ngram_size",
                 "num_return_sequences", "top_k", "intra_threads", "inter_threads"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    if args.top_p is not None and not 0 < args.top_p <= 1:
        parser.error(f"--top_p must be in (0, 1], got {args.top_p}")
    if args.temperature is not None and not args.temperature > 0:
        parser.error(f"--temperature must be > 0, got {args.temperature}")
    sampling = [name for name in ("top_k", "top_p", "temperature", "seed") if getattr(args, name) is not None]
    if sampling and not args.do_sample:
        parser.error(f"--{sampling[0]} applies to sampling: add --do_sample")
    fast = [name for name in ("ctranslate2_model", "quantization") if getattr(args, name) is not None]
    if fast and args.engine == "transformers":
        parser.error(f"--{fast[0]} applies to CTranslate2: drop it or --engine transformers")
    if args.ctranslate2_model is not None and args.quantization is not None:
        parser.error("--quantization applies to the cached export: an export given by --ctranslate2_model keeps its "
                     "own weights")
    kind = file_format(args.input) if args.input else None
    if kind and args.output is None:
        parser.error(f"--input {args.input!r} is a {kind} file: give --output, written in the same format")
    if kind and (args.num_return_sequences > 1 or args.scores or args.target_prefix or args.alignments):
        parser.error(f"a {kind} file gets one translation per text, written in its format: drop "
                     "--num_return_sequences, --scores, --target_prefix and --alignments")
    if args.overwrite and not kind:
        parser.error("--overwrite applies to a .po or XLIFF --input (its entries already translated)")
    if args.source_lang is not None and args.no_split_sentences:
        parser.error("--source_lang applies to sentence splitting: drop it or --no_split_sentences")


def decoding_options(args, generation_config) -> dict:
    """generate() keyword arguments of the decoding flags given; a one-line error for a combination that cannot
    work (more hypotheses than beams without sampling)."""
    options = {name: getattr(args, name) for name in ("length_penalty", "no_repeat_ngram_size", "top_k", "top_p",
                                                       "temperature") if getattr(args, name) is not None}
    if args.do_sample:
        options["do_sample"] = True
    beams = args.num_beams or generation_config.num_beams or 1
    if args.num_return_sequences > beams and not args.do_sample:
        raise ValueError(f"--num_return_sequences {args.num_return_sequences} needs at least as many beams "
                         f"(--num_beams, now {beams}) or --do_sample.")
    return options


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


@contextlib.contextmanager
def atomic_output(path: str | None) -> Iterator[TextIO]:
    """stdout, or a new file at `path` written whole or not at all: written as `path`.partial, renamed to `path`
    when the block ends, removed when it fails."""
    if path is None:
        yield sys.stdout
        return
    partial = path + ".partial"
    try:
        with open(partial, "w", encoding="utf-8") as output:
            yield output
    except BaseException:
        os.remove(partial)
        raise
    os.replace(partial, path)


def line_writer(output: TextIO, nbest: bool, flush: bool = False,
                alignments: TextIO | None = None) -> Callable[[str | Hypotheses, Alignment | None], None]:
    """`translate_stream`'s `write` for the command: a line per translation, or with `nbest` a TSV row per
    hypothesis (line number, rank, score, translation); with `alignments`, each line's alignment there in Pharaoh
    format; `flush` after each, for a reader waiting on a pipe."""
    numbers = itertools.count(1)

    def write(translation, alignment=None):
        number = next(numbers)
        if nbest:
            for rank, (text, score) in enumerate(translation, 1):
                print(f"{number}\t{rank}\t{score:.4f}\t{text}", file=output, flush=flush)
        else:
            print(translation, file=output, flush=flush)
        if alignments is not None:
            print(pharaoh(alignment), file=alignments, flush=flush)

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
    if args.source_prefix and args.source_prefix not in tokenizer.all_special_tokens and state.is_main_process:
        print(f"warning: --source_prefix {args.source_prefix}: the model's tokenizer has no such special token, so "
              "it is read as ordinary text (a model trained with --source_prefix holds its tag)", file=sys.stderr)
    model.to(state.device)
    options = decoding_options(args, model.generation_config)
    engine = load_engine(args.model, args.engine, model=model, tokenizer=tokenizer, export_dir=args.ctranslate2_model,
                         quantization=args.quantization, intra_threads=args.intra_threads,
                         inter_threads=args.inter_threads, main_process_first=state.main_process_first,
                         sampling=args.do_sample, num_beams=args.num_beams)
    if state.is_main_process:
        print(f"engine: {engine.name} ({engine.reason})", file=sys.stderr)
    if args.input and file_format(args.input):
        return translate_structured_file(args, model, tokenizer, engine, options, state)
    if args.seed is not None:
        set_seed(args.seed)
        if engine.name == "ctranslate2":
            import ctranslate2

            ctranslate2.set_random_seed(args.seed)
    nbest = args.num_return_sequences > 1 or args.scores
    interactive = args.interactive or (not args.text and not args.input and sys.stdin.isatty())
    problems = []
    with contextlib.ExitStack() as stack:
        lines, name, total = stack.enter_context(input_lines(args, problems))
        output = stack.enter_context(atomic_output(args.output if state.is_main_process else None))
        aligned = stack.enter_context(atomic_output(args.alignments)) if args.alignments and \
            state.is_main_process else None
        progress = stack.enter_context(tqdm(total=total, unit="lines", disable=args.no_progress or interactive
                                            or not state.is_main_process or None))
        prefixes = None
        if args.target_prefix:
            prefix_stream = stack.enter_context(open(args.target_prefix, "rb"))
            prefixes = (line or None for line in read_lines(prefix_stream, args.target_prefix))
        count = translate_stream(model, tokenizer, lines, line_writer(output, nbest, interactive, aligned),
                                 num_beams=args.num_beams, batch_size=args.batch_size,
                                 max_new_tokens=args.max_new_tokens, chunk_size=1 if interactive else args.chunk_size,
                                 progress=progress.update, num_return_sequences=args.num_return_sequences,
                                 scores=nbest, split_sentences=not args.no_split_sentences,
                                 source_lang=args.source_lang, engine=engine, target_prefix=prefixes,
                                 bad_words=args.bad_words, alignments=bool(args.alignments),
                                 target_lang=args.target_lang, source_prefix=args.source_prefix, **options)
    if count == 0 and state.is_main_process:
        print(f"warning: {name or 'the input'} held no lines: nothing was translated (give sentences as arguments, "
              "--input FILE, or lines on stdin)", file=sys.stderr)
    report_unreadable(problems, name, state.is_main_process)
    return count


def translate_structured_file(args, model, tokenizer, engine, options: dict, state) -> int:
    """A .po, XLIFF or HTML --input, written to --output in its own format (`transformer_mt.files`); one process."""
    from .files import translate_file
    from .translation import translate

    if state.num_processes > 1:
        raise ValueError(f"{args.input}: a .po, XLIFF or HTML file is translated by one process; run it without a "
                         "launcher")
    if args.seed is not None:
        set_seed(args.seed)

    def translate_texts(texts: list[str]) -> list[str]:
        return translate(model, tokenizer, texts, num_beams=args.num_beams, batch_size=args.batch_size,
                         max_new_tokens=args.max_new_tokens, split_sentences=not args.no_split_sentences,
                         source_lang=args.source_lang, engine=engine, bad_words=args.bad_words,
                         target_lang=args.target_lang, source_prefix=args.source_prefix, **options)

    with atomic_output(args.output) as output:
        output.close()  # translate_file writes by path; atomic_output renames it into place when this ends
        report = translate_file(args.input, output.name, translate_texts, overwrite=args.overwrite)
    differ = len(report.placeholders_differ)
    differ = f"; placeholders or tags differ in {differ} (marked for review)" if differ else ""
    print(f"{args.input} -> {args.output} ({report.format}): {report.translated} translated, {report.kept} kept"
          f"{differ}", file=sys.stderr)
    return report.translated


__all__ = ["atomic_output", "check_args", "decoding_options", "input_lines", "line_writer", "parse_args",
           "report_unreadable", "run", "translate_structured_file"]
