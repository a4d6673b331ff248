"""Translation speed of generate() vs CTranslate2 (float32 and int8) on the same sentences, batches and threads.

    python scripts/benchmark_ctranslate2.py runs/main-sinusoidal [--data data/en-de] [--num_sentences 200]

Only the decoding calls are timed; see `transformer_mt.benchmark` for what is compared and how.
"""

import argparse
import os

import ctranslate2
import torch
import transformers

from transformer_mt.benchmark import benchmark, format_table
from transformer_mt.cli import command
from transformer_mt.data import load_parallel_data


@command
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model_dir", help="A trained TransformerMT directory (model and tokenizer).")
    parser.add_argument("--data", default="data/en-de", help="Parallel data; its test split's source side is used.")
    parser.add_argument("--source_lang", default="en")
    parser.add_argument("--target_lang", default="de")
    parser.add_argument("--num_sentences", type=int, default=200)
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--max_new_tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads(),
                        help="torch.set_num_threads and CTranslate2's intra_threads (default: torch's).")
    args = parser.parse_args(argv)
    # The checkpoint's generation config sets max_length; --max_new_tokens overrides it, which transformers warns
    # about once per batch.
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    if not os.path.isdir(args.model_dir):  # else from_pretrained reads the path as a Hub model id
        raise FileNotFoundError(f"Model directory {args.model_dir!r} does not exist.")
    test = load_parallel_data(args.data, args.source_lang, args.target_lang)["test"]
    sentences = test[args.source_lang][: args.num_sentences]
    rows = benchmark(args.model_dir, sentences, args.batch_size, args.max_new_tokens, args.threads)
    print(f"{len(sentences)} sentences, batch size {args.batch_size}, max_new_tokens {args.max_new_tokens}, "
          f"{args.threads} threads, CTranslate2 {ctranslate2.__version__}, torch {torch.__version__}")
    print(format_table(rows, len(sentences)))


if __name__ == "__main__":
    main()
