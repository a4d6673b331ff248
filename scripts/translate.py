"""Translate with a saved TransformerMT model: text from arguments, a file, or stdin; one translation per line.

    python scripts/translate.py --model runs/main-sinusoidal "Click the Save button." "Close the dialog."
    python scripts/translate.py --model runs/main-sinusoidal --input sentences.txt --num_beams 5 --batch_size 32
    echo "Open the file." | python scripts/translate.py --model runs/main-sinusoidal
"""

import argparse
import os
import sys

from transformer_mt import translate
from transformer_mt.checkpoints import load_translator
from transformer_mt.cli import command
from transformer_mt.pipelines import read_lines


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="A directory written by the training script.")
    parser.add_argument("text", nargs="*", help="Sentences to translate (default: read --input or stdin).")
    parser.add_argument("--input", help="A UTF-8 file with one sentence per line.")
    parser.add_argument("--num_beams", type=int, help="Beam size (default: the model's generation config).")
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--max_new_tokens", type=int, help="Longest translation (default: the model's setting).")
    args = parser.parse_args(argv)
    if args.input is not None and not os.path.isfile(args.input):
        parser.error(f"--input {args.input!r} does not exist")
    for name in ("num_beams", "batch_size", "max_new_tokens"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    return args


@command
def main(argv=None):
    args = parse_args(argv)
    if args.text:
        texts = args.text
    elif args.input:
        with open(args.input, "rb") as stream:
            texts = [line for line in read_lines(stream, args.input) if line.strip()]
    else:
        texts = [line for line in read_lines(sys.stdin.buffer, "<stdin>") if line.strip()]
    model, tokenizer = load_translator(args.model)
    for translation in translate(model, tokenizer, texts, args.num_beams, args.batch_size, args.max_new_tokens):
        print(translation)


if __name__ == "__main__":
    main()
