"""Translate with a saved TransformerMT model: text from arguments, a file, or stdin; one translation per line.

    python scripts/translate.py --model runs/main-sinusoidal "Click the Save button." "Close the dialog."
    python scripts/translate.py --model runs/main-sinusoidal --input sentences.txt --output sentences.de
    echo "Open the file." | python scripts/translate.py --model runs/main-sinusoidal
    python scripts/translate.py --models models --source_lang de --target_lang en "Öffnen Sie die Datei."
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

from transformer_mt.commands.cli import command
from transformer_mt.commands.translate import parse_args, run


@command
def main(argv=None):
    run(parse_args(argv, __doc__))


if __name__ == "__main__":
    main()
