"""The translate command's options (scripts/translate.py), checked, and the generate() controls they give. The
translation API itself is `transformer_mt.translation`."""

import argparse
import os


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
    if args.source_lang is not None and args.no_split_sentences:
        parser.error("--source_lang applies to sentence splitting: drop it or --no_split_sentences")
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


__all__ = ["decoding_options", "parse_args"]
