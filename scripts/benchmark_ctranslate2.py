"""Translation speed of generate() vs CTranslate2 (float32 and int8) on the same sentences, batches and threads.

    python scripts/benchmark_ctranslate2.py runs/main-sinusoidal [--data data/en-de] [--num_sentences 200]

Each engine decodes in a process of its own (CTranslate2 slows torch in the same process), interleaved over
repeats; tokens/s (best and median) and ratios to generate() (see `transformer_mt.experiments.benchmarks.harness`).
"""

import argparse
import os

import transformers

from transformer_mt.commands.cli import command
from transformer_mt.data import load_parallel_data
from transformer_mt.experiments.benchmarks import compare_with_ctranslate2, ctranslate2_report, save_results


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
    parser.add_argument(
        "--threads", type=int, default=1, help="torch and CTranslate2 threads (one: see docs/results.md, CTranslate2)."
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", help="Also write the results here.")
    args = parser.parse_args(argv)
    transformers.logging.set_verbosity_error()  # the checkpoint's max_length vs --max_new_tokens, once per batch
    if not os.path.isdir(args.model_dir):  # else from_pretrained reads the path as a Hub model id
        raise FileNotFoundError(f"Model directory {args.model_dir!r} does not exist.")
    test = load_parallel_data(args.data, args.source_lang, args.target_lang)["test"]
    results = compare_with_ctranslate2(
        args.model_dir,
        test[args.source_lang][: args.num_sentences],
        args.batch_size,
        args.max_new_tokens,
        args.threads,
        args.repeats,
    )
    print(ctranslate2_report(results))
    save_results(results, args.json)


if __name__ == "__main__":
    main()
