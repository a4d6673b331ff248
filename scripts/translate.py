"""Translate with a saved TransformerMT model: text from arguments, a file, or stdin; one translation per line.

    python scripts/translate.py --model runs/main-sinusoidal "Click the Save button." "Close the dialog."
    python scripts/translate.py --model runs/main-sinusoidal --input sentences.txt --output sentences.de
    echo "Open the file." | python scripts/translate.py --model runs/main-sinusoidal
    python scripts/translate.py --model runs/main-sinusoidal --num_beams 5 --num_return_sequences 5 "Close it."
    python scripts/translate.py --model runs/main-sinusoidal --do_sample --top_p 0.9 --seed 1 --input mono.en
    accelerate launch --multi_gpu --num_processes 2 scripts/translate.py --model ... --input big.txt --output big.de

Each line is split into sentences (by --source_lang, default the model config's source_lang), the sentences are
translated in batches of similar length, and each line's translations are joined with the whitespace the line had
between its sentences (--no_split_sentences: each line is one sequence). Input is streamed; output line n is the
translation of input line n (an empty line gives an empty line). Under `accelerate launch` (or torchrun) the
processes share the batches and the main process writes the output, the same bytes as one process writes. A line
that cannot be read (not UTF-8) is left empty in the output and named at the end, with exit status 2. --output is
written whole or not at all, never over a file. With --num_return_sequences N (or --scores) each input line gives
N TSV rows: line number, rank, score, translation; hypothesis k joins each sentence's k-th, and its score is the
sum of theirs (each as beam search ranks: log-probability / length**length_penalty); an empty line gives none.
From a terminal, or with --interactive, each line is translated as soon as it is read.
"""

import contextlib
import itertools
import os
import sys

from tqdm.auto import tqdm
from transformers import set_seed

from transformer_mt.checkpoints import load_translator
from transformer_mt.cli import command
from transformer_mt.translate_command import decoding_options, parse_args
from transformer_mt.translation import process_state, read_lines, translate_stream


@command
def main(argv=None):
    args = parse_args(argv, __doc__)
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
                                     num_return_sequences=args.num_return_sequences, scores=nbest,
                                     split_sentences=not args.no_split_sentences, source_lang=args.source_lang,
                                     **options)
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
