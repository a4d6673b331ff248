"""Translate with a saved TransformerMT model: text from arguments, a file, or stdin; one translation per line.

    python scripts/translate.py --model runs/main-sinusoidal "Click the Save button." "Close the dialog."
    python scripts/translate.py --model runs/main-sinusoidal --input sentences.txt --output sentences.de
    echo "Open the file." | python scripts/translate.py --model runs/main-sinusoidal
    python scripts/translate.py --model runs/main-sinusoidal --num_beams 5 --num_return_sequences 5 "Close it."
    python scripts/translate.py --model runs/main-sinusoidal --do_sample --top_p 0.9 --seed 1 --input mono.en
    accelerate launch --multi_gpu --num_processes 2 scripts/translate.py --model ... --input big.txt --output big.de

Input is streamed and batched by length; output line n is the translation of input line n (an empty line gives
an empty line). Under `accelerate launch` (or torchrun) the processes share the batches and the main process
writes the output, the same bytes as one process writes. A line that cannot be read (not UTF-8) is left empty in
the output and named at the end, with exit status 2. --output is written whole or not at all, never over a file.
With --num_return_sequences N (or --scores) each input line gives N TSV rows: line number, rank, score (as beam
search ranks: log-probability / length**length_penalty), translation; an empty line gives none. From a terminal,
or with --interactive, each line is translated as soon as it is read.
"""

import argparse
import contextlib
import itertools
import os
import sys

from tqdm.auto import tqdm
from transformers import set_seed

from transformer_mt.checkpoints import load_translator
from transformer_mt.cli import command
from transformer_mt.pipelines import process_state, read_lines, translate_stream


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="A directory written by the training script.")
    parser.add_argument("text", nargs="*", help="Sentences to translate (default: read --input or stdin).")
    parser.add_argument("--input", help="A UTF-8 file with one sentence per line.")
    parser.add_argument("--output", help="Write the translations here (default: stdout); it must not exist yet.")
    parser.add_argument("--num_beams", type=int, help="Beam size (default: the model's generation config).")
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--max_new_tokens", type=int, help="Longest translation (default: relative to the input).")
    parser.add_argument("--chunk_size", type=int, default=4096, help="Lines read, sorted and batched at a time.")
    parser.add_argument("--no_progress", action="store_true", help="No progress bar on stderr.")
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
    parser.add_argument("--interactive", action="store_true",
                        help="Translate each line as it arrives (on by default when stdin is a terminal).")
    args = parser.parse_args(argv)
    if args.input is not None and not os.path.isfile(args.input):
        parser.error(f"--input {args.input!r} does not exist")
    if args.output is not None and os.path.exists(args.output):
        parser.error(f"--output {args.output!r} exists; translations never replace a file (choose another name)")
    for name in ("num_beams", "batch_size", "max_new_tokens", "chunk_size", "no_repeat_ngram_size",
                 "num_return_sequences", "top_k"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    if args.top_p is not None and not 0 < args.top_p <= 1:
        parser.error(f"--top_p must be in (0, 1], got {args.top_p}")
    if args.temperature is not None and not args.temperature > 0:
        parser.error(f"--temperature must be > 0, got {args.temperature}")
    sampling = [name for name in ("top_k", "top_p", "temperature", "seed") if getattr(args, name) is not None]
    if sampling and not args.do_sample:
        parser.error(f"--{sampling[0]} applies to sampling: add --do_sample")
    return args


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


@command
def main(argv=None):
    args = parse_args(argv)
    state = process_state()
    model, tokenizer = load_translator(args.model)
    model.to(state.device)
    options = decoding_options(args, model.generation_config)
    if args.seed is not None:
        set_seed(args.seed)
    nbest = args.num_return_sequences > 1 or args.scores
    interactive = args.interactive or (not args.text and not args.input and sys.stdin.isatty())
    problems = []
    with contextlib.ExitStack() as stack:
        if args.text:
            lines, name, total = args.text, None, len(args.text)
        elif args.input:
            with open(args.input, "rb") as counted:
                total = sum(1 for _ in counted)
            lines = read_lines(stack.enter_context(open(args.input, "rb")), args.input, problems)
            name = args.input
        else:
            lines, name, total = read_lines(sys.stdin.buffer, "<stdin>", problems), "<stdin>", None
        partial = args.output + ".partial" if args.output and state.is_main_process else None
        output = stack.enter_context(open(partial, "w", encoding="utf-8")) if partial else sys.stdout
        progress = stack.enter_context(tqdm(total=total, unit="lines", disable=args.no_progress or interactive
                                            or not state.is_main_process or None))
        line_numbers = itertools.count(1)

        def write(translation):
            number = next(line_numbers)
            if nbest:  # one TSV row per hypothesis: line number, rank, score, translation
                for rank, (text, score) in enumerate(translation, 1):
                    print(f"{number}\t{rank}\t{score:.4f}\t{text}", file=output, flush=interactive)
            else:
                print(translation, file=output, flush=interactive)

        try:
            count = translate_stream(model, tokenizer, lines, write, num_beams=args.num_beams,
                                     batch_size=args.batch_size, max_new_tokens=args.max_new_tokens,
                                     chunk_size=1 if interactive else args.chunk_size, progress=progress.update,
                                     num_return_sequences=args.num_return_sequences, scores=nbest, **options)
        except BaseException:
            if partial:
                os.remove(partial)
            raise
    if partial:
        os.replace(partial, args.output)
    if count == 0 and state.is_main_process:
        print(f"warning: {name or 'the input'} held no lines: nothing was translated (give sentences as arguments, "
              "--input FILE, or lines on stdin)", file=sys.stderr)
    if problems:
        if not state.is_main_process:
            raise SystemExit(2)  # the main process says why
        shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
        raise ValueError(f"{len(problems)} line(s) of {name} could not be read and are empty in the output: {shown}")


if __name__ == "__main__":
    main()
