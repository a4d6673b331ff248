"""translate.py's engines side by side: generate() (eager and compiled) against CTranslate2 (float32 and int8).

    python scripts/benchmark_engines.py models/transformer-mt-en-de [--repeat_split 4] [--repeats 2]

The test split, repeated to at least 2,000 lines, goes through what translate.py runs (sentence splitting, batches of
16, the model's generation config), once per configuration per repeat, each in a process of its own, interleaved;
start-up, warm-up and the one-time CTranslate2 export are not timed. Prints sentences/s (best and median), BLEU and
chrF on the test split, and the default engine's speed-up over --engine transformers
(`transformer_mt.experiments.benchmarks.engines`). Time it on a quiet machine, and state its matmul figure beside
the numbers.
"""

import argparse

import transformers

from transformer_mt.checkpoints import read_config
from transformer_mt.commands.cli import command
from transformer_mt.configuration import TransformerMTConfig
from transformer_mt.data import load_parallel_data
from transformer_mt.experiments.benchmarks import save_results
from transformer_mt.experiments.benchmarks.engines import CONFIGURATIONS, compare_engines, engines_report
from transformer_mt.machine import matmul_gflops


@command
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model_dir", help="A trained TransformerMT directory (model and tokenizer).")
    parser.add_argument("--data", default="data/en-de", help="Parallel data; its test split is translated.")
    parser.add_argument("--source_lang", default="en")
    parser.add_argument("--target_lang", default="de")
    parser.add_argument("--repeat_split", type=int, default=4, help="Translate the test split this many times over.")
    parser.add_argument("--repeats", type=int, default=2, help="Processes per configuration, interleaved.")
    parser.add_argument("--configurations", nargs="+", choices=list(CONFIGURATIONS), default=list(CONFIGURATIONS))
    parser.add_argument("--json", help="Also write the results here.")
    args = parser.parse_args(argv)
    for name in ("repeat_split", "repeats"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    read_config(args.model_dir, TransformerMTConfig.model_type, "TransformerMT")  # a clear error before any work
    transformers.logging.set_verbosity_error()
    test = load_parallel_data(args.data, args.source_lang, args.target_lang)["test"]
    sources, references = list(test[args.source_lang]), list(test[args.target_lang])
    configurations = {name: CONFIGURATIONS[name] for name in args.configurations}
    gflops = matmul_gflops()
    results = compare_engines(args.model_dir, sources * args.repeat_split, references, configurations, args.repeats)
    results["matmul_gflops"] = {"before": gflops, "after": matmul_gflops()}
    print(engines_report(results))
    print(
        f"Machine: fp32 2048x2048 matmul, 2 threads: {gflops:.0f} GFLOP/s before, "
        f"{results['matmul_gflops']['after']:.0f} after."
    )
    save_results(results, args.json)


if __name__ == "__main__":
    main()
