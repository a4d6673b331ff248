"""Load test of transformer-mt-serve, run by hand: offline batch translation, then a server process under 16
concurrent clients, then overloaded; loopback only, bounded in count and time.

    python scripts/load_test.py models/transformer-mt-en-de [--clients 16] [--requests 800] [--repeats 3]
        [--json out.json]

Reports requests/s, sentences/s, p50/p95 latency and answers by status for each load, and the batching efficiency:
the server's sentences/s at --clients clients as a share of offline batch translation of the same sentences with
the same engine, per repeat (offline and loaded runs interleaved), with their min and median
(`transformer_mt.benchmarks.serving`). Run it on a quiet machine.
"""

import argparse
import json

from transformer_mt.benchmarks.serving import load_report, load_test
from transformer_mt.checkpoints import read_config
from transformer_mt.cli import command
from transformer_mt.configuration import TransformerMTConfig
from transformer_mt.data import load_parallel_data
from transformer_mt.engines import ENGINES
from transformer_mt.machine import matmul_gflops


@command
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model_dir")
    parser.add_argument("--data", default="data/en-de", help="Its test split's sources are the requests' texts.")
    parser.add_argument("--engine", choices=ENGINES, default="auto")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--requests", type=int, default=800)
    parser.add_argument("--overload_clients", type=int, default=256)
    parser.add_argument("--queue_limit", type=int, default=64)
    parser.add_argument("--max_batch", type=int, help="The server's --max_batch (default: its own default).")
    parser.add_argument("--max_wait_ms", type=float, default=2.0)
    parser.add_argument("--repeats", type=int, default=3, help="Offline and loaded runs, interleaved.")
    parser.add_argument("--json", help="Also write the results here.")
    args = parser.parse_args(argv)
    for name in ("clients", "requests", "overload_clients", "queue_limit", "max_batch", "repeats"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    config = read_config(args.model_dir, TransformerMTConfig.model_type, "TransformerMT")
    source, target = config.get("source_lang"), config.get("target_lang")
    if not source or not target:
        raise ValueError(f"{args.model_dir}/config.json has no source_lang and target_lang")
    sentences = list(load_parallel_data(args.data, source, target)["test"][source])
    gflops = matmul_gflops()
    results = load_test(args.model_dir, sentences, source, target, args.engine, args.clients, args.requests,
                        args.overload_clients, args.queue_limit, args.max_batch, args.max_wait_ms,
                        repeats=args.repeats)
    results["matmul_gflops"] = gflops
    print(load_report(results))
    print(f"Machine: fp32 2048x2048 matmul, 2 threads: {gflops:.0f} GFLOP/s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
