"""Translate with a saved TransformerMT model: text from arguments, a file, or stdin; one translation per line.

    python scripts/translate.py --model runs/main-sinusoidal "Click the Save button." "Close the dialog."
    python scripts/translate.py --model runs/main-sinusoidal --input sentences.txt --output sentences.de
    echo "Open the file." | python scripts/translate.py --model runs/main-sinusoidal
    accelerate launch --multi_gpu --num_processes 2 scripts/translate.py --model ... --input big.txt --output big.de

Input is streamed and batched by length; output line n is the translation of input line n (an empty line gives
an empty line). Under `accelerate launch` (or torchrun) the processes share the batches and the main process
writes the output, the same bytes as one process writes. A line that cannot be read (not UTF-8) is left empty in
the output and named at the end, with exit status 2. --output is written whole or not at all, never over a file.
"""

import argparse
import contextlib
import os
import sys

from tqdm.auto import tqdm

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
    args = parser.parse_args(argv)
    if args.input is not None and not os.path.isfile(args.input):
        parser.error(f"--input {args.input!r} does not exist")
    if args.output is not None and os.path.exists(args.output):
        parser.error(f"--output {args.output!r} exists; translations never replace a file (choose another name)")
    for name in ("num_beams", "batch_size", "max_new_tokens", "chunk_size"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    return args


@command
def main(argv=None):
    args = parse_args(argv)
    state = process_state()
    model, tokenizer = load_translator(args.model)
    model.to(state.device)
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
        progress = stack.enter_context(tqdm(total=total, unit="lines",
                                            disable=args.no_progress or not state.is_main_process or None))
        try:
            count = translate_stream(model, tokenizer, lines, lambda line: print(line, file=output),
                             num_beams=args.num_beams, batch_size=args.batch_size,
                             max_new_tokens=args.max_new_tokens, chunk_size=args.chunk_size, progress=progress.update)
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
