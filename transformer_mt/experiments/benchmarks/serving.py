"""The server under load, against offline batch translation with the same engine (scripts/load_test.py runs
`run_load_test`).

Three measurements, each engine in a process of its own, loopback only, bounded in count and time:
1. offline: the sentences translated at once, in length-sorted batches of 16 (translate.py's default), by the same
   engine (a worker process): what the engine does with all the sentences in hand;
2. the server (a `scripts/serve.py` process) under `clients` concurrent clients, each sending one-sentence
   requests until `requests` are answered: requests/s, sentences/s, p50/p95 latency, answers by status, and the
   batching efficiency, the server's sentences/s as a share of offline;
3. overload: `overload_clients` clients at once against a queue of `queue_limit` sentences: every request is
   answered, each with 200 or 503 (with Retry-After), and nothing else.
"""

import asyncio
import collections
import contextlib
import socket
import statistics
import subprocess
import sys
import time

from transformer_mt.checkpoints import read_config
from transformer_mt.configuration import TransformerMTConfig
from transformer_mt.data import load_parallel_data
from transformer_mt.engines import ENGINES, load_engine
from transformer_mt.machine import matmul_gflops
from transformer_mt.options import TranslationOptions

from .harness import run_worker


def offline_worker(spec: dict) -> dict:

    engine = load_engine(spec["model_dir"], spec["engine"])
    sentences, size = spec["sentences"], spec["batch_size"]
    engine.translate_sentences(sentences[:size], TranslationOptions(batch_size=size))  # warm-up
    start = time.perf_counter()
    # all at once: length-sorted batches, every worker busy
    engine.translate_sentences(sentences, TranslationOptions(batch_size=size))
    return {"engine": engine.name, "sentences_per_second": len(sentences) / (time.perf_counter() - start)}


async def _clients(
    url: str, sentences: list[str], clients: int, requests: int, source: str, target: str, timeout: float
) -> dict:
    """`clients` concurrent clients (aiohttp: the lightest well-kept client, so that the load generator takes little
    of the machine it shares with the server) sending one-sentence requests until `requests` are sent."""
    import aiohttp

    latencies, statuses, retry_after = [], collections.Counter(), set()
    counter = iter(range(requests))

    async def client(session):
        for index in counter:
            start = time.perf_counter()
            body = {"q": sentences[index % len(sentences)], "source": source, "target": target}
            try:
                async with session.post(url + "/translate", json=body) as answer:
                    await answer.read()
                    status, retry = answer.status, answer.headers.get("Retry-After")
            except (aiohttp.ClientError, asyncio.TimeoutError) as error:
                statuses[type(error).__name__] += 1
                continue
            statuses[status] += 1
            if status == 200:
                latencies.append(time.perf_counter() - start)
            elif status == 503:
                retry_after.add(retry)

    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=timeout)) as session:
        start = time.perf_counter()
        await asyncio.gather(*(client(session) for _ in range(clients)))
        seconds = time.perf_counter() - start
    answered = statuses.get(200, 0)
    return {
        "clients": clients,
        "requests": requests,
        "seconds": seconds,
        "requests_per_second": requests / seconds,
        "sentences_per_second": answered / seconds,
        "statuses": {str(k): v for k, v in statuses.items()},
        "retry_after": sorted(filter(None, retry_after)),
        "latency_p50_ms": 1000 * statistics.median(latencies) if latencies else None,
        "latency_p95_ms": 1000 * statistics.quantiles(latencies, n=20)[-1] if len(latencies) > 1 else None,
    }


@contextlib.contextmanager
def _server(
    model_dir: str,
    engine: str,
    queue_limit: int,
    max_batch: int | None,
    max_wait_ms: float,
    startup: float = 180,
    extra: tuple[str, ...] = (),
):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "transformer_mt.scripts.serve",
            model_dir,
            "--port",
            str(port),
            "--engine",
            engine,
            "--queue_limit",
            str(queue_limit),
            "--max_wait_ms",
            str(max_wait_ms),
            *(["--max_batch", str(max_batch)] if max_batch else []),
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + startup
        while process.poll() is None and time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
            time.sleep(0.2)
        if process.poll() is not None or time.monotonic() >= deadline:
            raise RuntimeError(f"the server did not start: {process.communicate(timeout=10)[0]}")
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=30)


def load_test(
    model_dir: str,
    sentences: list[str],
    source: str,
    target: str,
    engine: str = "auto",
    clients: int = 16,
    requests: int = 800,
    overload_clients: int = 256,
    queue_limit: int = 64,
    max_batch: int | None = None,
    max_wait_ms: float = 2.0,
    offline_batch: int = 16,
    timeout: float = 120,
    repeats: int = 3,
) -> dict:
    """Offline, then the server at `clients` clients, `repeats` times interleaved (the server stays up and idle
    while offline runs); then overloaded; see the module's docstring. The batching efficiency of each repeat is its
    server's sentences/s over its offline sentences/s; the result holds them all, their min and median."""
    spec = {"model_dir": model_dir, "engine": engine, "sentences": sentences, "batch_size": offline_batch}
    offline, loaded = [], []
    with _server(model_dir, engine, queue_limit, max_batch, max_wait_ms) as url:
        asyncio.run(_clients(url, sentences, clients, min(64, requests), source, target, timeout))  # warm-up
        for _ in range(repeats):
            offline.append(run_worker(offline_worker, spec, threads=2))
            loaded.append(asyncio.run(_clients(url, sentences, clients, requests, source, target, timeout)))
        overloaded = asyncio.run(
            _clients(url, sentences, overload_clients, overload_clients * 2, source, target, timeout)
        )
    efficiencies = [run["sentences_per_second"] / alone["sentences_per_second"] for run, alone in zip(loaded, offline)]
    middle = sorted(range(repeats), key=efficiencies.__getitem__)[(repeats - 1) // 2]  # the median repeat's
    return {
        "engine": offline[0]["engine"],
        "repeats": repeats,
        "offline_sentences_per_second": [alone["sentences_per_second"] for alone in offline],
        "loaded": loaded[middle],
        "loaded_runs": loaded,
        "overloaded": overloaded,
        "queue_limit": queue_limit,
        "max_batch": max_batch,
        "max_wait_ms": max_wait_ms,
        "offline_batch": offline_batch,
        "batching_efficiencies": efficiencies,
        "batching_efficiency_min": min(efficiencies),
        "batching_efficiency_median": statistics.median(efficiencies),
    }


def run_load_test(
    model_dir: str,
    data_dir: str,
    engine: str = "auto",
    clients: int = 16,
    requests: int = 800,
    overload_clients: int = 256,
    queue_limit: int = 64,
    max_batch: int | None = None,
    max_wait_ms: float = 2.0,
    repeats: int = 3,
) -> dict:
    """`load_test` with the test split's sources of `data_dir` as the requests' texts, in the languages of the saved
    model (its config.json), and the machine's matmul figure (taken first) in the results."""
    config = read_config(model_dir, TransformerMTConfig.model_type, "TransformerMT")
    source, target = config.get("source_lang"), config.get("target_lang")
    if not source or not target:
        raise ValueError(f"{model_dir}/config.json has no source_lang and target_lang")
    sentences = list(load_parallel_data(data_dir, source, target)["test"][source])
    gflops = matmul_gflops()
    results = load_test(
        model_dir,
        sentences,
        source,
        target,
        engine,
        clients,
        requests,
        overload_clients,
        queue_limit,
        max_batch,
        max_wait_ms,
        repeats=repeats,
    )
    results["matmul_gflops"] = gflops
    return results


def add_load_test_arguments(parser) -> None:
    """scripts/load_test.py's flags: the model and its data, the clients and requests of each load, the server's
    batching, and --shared (two workers sharing Redis against one process)."""
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
    parser.add_argument("--shared", action="store_true", help="Two workers sharing Redis against one process.")
    parser.add_argument("--seconds", type=float, default=30, help="With --shared: how long each load lasts.")


def load_report(results: dict) -> str:
    rows = []
    for name in ("loaded", "overloaded"):
        run = results[name]
        p50, p95 = run["latency_p50_ms"], run["latency_p95_ms"]
        rows.append(
            f"| {run['clients']} clients | {run['requests']} | {run['requests_per_second']:.1f} | "
            f"{run['sentences_per_second']:.1f} | {p50 or 0:.0f} | {p95 or 0:.0f} | "
            f"{', '.join(f'{k}: {v}' for k, v in sorted(run['statuses'].items()))} |"
        )
    offline = ", ".join(f"{speed:.1f}" for speed in results["offline_sentences_per_second"])
    each = ", ".join(f"{efficiency:.2f}" for efficiency in results["batching_efficiencies"])
    return "\n".join(
        [
            f"engine {results['engine']}, queue limit {results['queue_limit']} sentences, batches of up to "
            f"{results['max_batch'] or 'the default'} waiting {results['max_wait_ms']} ms; offline (batches of "
            f"{results['offline_batch']}), each repeat: {offline} sentences/s",
            "",
            f"the loaded row is the median repeat's of {results['repeats']}",
            "",
            "| load | requests | requests/s | sentences/s | p50 ms | p95 ms | answers by status |",
            "| --- | --- | --- | --- | --- | --- | --- |",
            *rows,
            "",
            f"batching efficiency at {results['loaded']['clients']} clients (the server's sentences/s / offline batch "
            f"translation's, each repeat: {each}): min {results['batching_efficiency_min']:.2f}, median "
            f"{results['batching_efficiency_median']:.2f}",
            *(
                [f"Machine: fp32 2048x2048 matmul, 2 threads: {results['matmul_gflops']:.0f} GFLOP/s"]
                if "matmul_gflops" in results
                else []
            ),
        ]
    )
