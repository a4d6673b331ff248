"""Load test of transformer-mt-serve, run by hand: offline batch translation, then a server process under 16
concurrent clients, then overloaded; loopback only, bounded in count and time.

    python scripts/load_test.py models/transformer-mt-en-de [--clients 16] [--requests 800] [--repeats 3]
        [--json out.json]
    python scripts/load_test.py models/transformer-mt-en-de --shared [--clients 8] [--seconds 30]

Reports requests/s, sentences/s, p50/p95 latency and answers by status for each load, and the batching efficiency:
the server's sentences/s at --clients clients as a share of offline batch translation of the same sentences with
the same engine, per repeat (offline and loaded runs interleaved), with their min and median
(`transformer_mt.experiments.benchmarks.serving`). Run it on a quiet machine. --shared instead runs two worker
processes sharing a redis-server against one process for --seconds each: every answer compared with one process's,
and the latencies (`transformer_mt.experiments.benchmarks.shared_load`); --keys, two API keys of different day quotas
and an open one through two workers sharing Redis (`transformer_mt.experiments.benchmarks.keys_quota`).
"""

import argparse

from transformer_mt.commands.cli import command
from transformer_mt.experiments.benchmarks import save_results
from transformer_mt.experiments.benchmarks.keys_quota import keys_quota_report, run_keys_quota_test
from transformer_mt.experiments.benchmarks.serving import add_load_test_arguments, load_report, run_load_test
from transformer_mt.experiments.benchmarks.shared_load import run_shared_load_test, shared_load_report


@command
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_load_test_arguments(parser)
    parser.add_argument("--keys", action="store_true", help="Two keys' day quotas through two workers and Redis.")
    args = parser.parse_args(argv)
    for name in ("clients", "requests", "overload_clients", "queue_limit", "max_batch", "repeats"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    if args.keys:
        results = run_keys_quota_test(args.model_dir, args.data, args.engine, args.clients)
        print(keys_quota_report(results))
        return save_results(results, args.json)
    if args.shared:
        results = run_shared_load_test(args.model_dir, args.data, args.engine, args.clients, args.seconds)
        print(shared_load_report(results))
        return save_results(results, args.json)
    results = run_load_test(
        args.model_dir,
        args.data,
        args.engine,
        args.clients,
        args.requests,
        args.overload_clients,
        args.queue_limit,
        args.max_batch,
        args.max_wait_ms,
        args.repeats,
    )
    print(load_report(results))
    save_results(results, args.json)


if __name__ == "__main__":
    main()
