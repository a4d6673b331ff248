"""Two server processes sharing one Redis under a bounded loopback load, against one process alone
(scripts/load_test.py --shared runs `run_shared_load_test`).

A redis-server on a free loopback port (no persistence), then, for `seconds` each, `clients` concurrent clients
sending one-sentence requests (the test split's sources, in order, over and over):
1. `transformer-mt-serve --workers 2 --redis URL --req_limit 1000000`: limits and cache go through Redis (the limit
   is never reached: every request pays for the shared count, none is refused);
2. one process, no --redis: the single-process answers and latencies.
Correctness: every answer of (1) equals (2)'s answer to the same sentence (sentences (2) did not reach are asked of it
afterwards). Latency: p50/p95 of all requests, and of each sentence's first request (the model) and the later ones
(the cache). No throughput figure: the clients, Redis and the servers share the machine's cores.
"""

import asyncio
import contextlib
import shutil
import socket
import statistics
import subprocess
import time

from transformer_mt.checkpoints import read_config
from transformer_mt.configuration import TransformerMTConfig
from transformer_mt.data import load_parallel_data
from transformer_mt.machine import matmul_gflops

from .serving import _server


@contextlib.contextmanager
def redis_server():
    """Debian's redis-server on a free loopback port, without persistence; its URL."""
    program = shutil.which("redis-server")
    if program is None:
        raise RuntimeError("redis-server is not installed (.ci/install-debian installs it)")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [program, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=10)


async def _ask(url: str, texts: list[str], clients: int, source: str, target: str, seconds: float | None) -> dict:
    """`clients` clients sending `texts` in order, one a request: until `seconds` have passed, going round the
    texts again (None: each text once). Every answer, with its latency and whether its text was asked before."""
    import aiohttp

    answers, position, started = [], iter(range(10**9 if seconds else len(texts))), time.perf_counter()
    seen = set()

    async def client(session):
        for index in position:
            if seconds and time.perf_counter() - started > seconds:
                return
            text = texts[index % len(texts)]
            repeat = text in seen
            seen.add(text)
            start = time.perf_counter()
            async with session.post(url + "/translate", json={"q": text, "source": source, "target": target}) as got:
                body = await got.json()
            answers.append(
                {
                    "text": text,
                    "status": got.status,
                    "answer": body.get("translatedText"),
                    "seconds": time.perf_counter() - start,
                    "repeat": repeat,
                }
            )

    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=120)) as session:
        await asyncio.gather(*(client(session) for _ in range(clients)))
    return {"answers": answers, "seconds": time.perf_counter() - started}


def _latencies(answers: list[dict]) -> dict:
    def percentiles(values):
        if len(values) < 2:
            return {"requests": len(values), "p50_ms": None, "p95_ms": None}
        return {
            "requests": len(values),
            "p50_ms": 1000 * statistics.median(values),
            "p95_ms": 1000 * statistics.quantiles(values, n=20)[-1],
        }

    return {
        "all": percentiles([a["seconds"] for a in answers]),
        "first": percentiles([a["seconds"] for a in answers if not a["repeat"]]),
        "repeat": percentiles([a["seconds"] for a in answers if a["repeat"]]),
    }


def shared_load_test(
    model_dir: str,
    sentences: list[str],
    source: str,
    target: str,
    engine: str = "auto",
    clients: int = 8,
    seconds: float = 30,
) -> dict:
    """See the module's docstring."""
    settings = (engine, 512, None, 2.0)
    with redis_server() as redis_url:
        with _server(
            model_dir, *settings, extra=("--workers", "2", "--redis", redis_url, "--req_limit", "1000000")
        ) as url:
            asyncio.run(_ask(url, sentences[-16:], 2, source, target, None))  # warm-up, outside the measured texts
            shared = asyncio.run(_ask(url, sentences, clients, source, target, seconds))
    with _server(model_dir, *settings) as url:
        asyncio.run(_ask(url, sentences[-16:], 2, source, target, None))
        alone = asyncio.run(_ask(url, sentences, clients, source, target, seconds))
        reference = {a["text"]: a["answer"] for a in alone["answers"] if a["status"] == 200}
        missing = sorted({a["text"] for a in shared["answers"]} - set(reference))
        if missing:
            extra = asyncio.run(_ask(url, missing, clients, source, target, None))
            reference.update({a["text"]: a["answer"] for a in extra["answers"] if a["status"] == 200})
    differing = [a["text"] for a in shared["answers"] if a["status"] != 200 or a["answer"] != reference.get(a["text"])]
    statuses = {}
    for answer in shared["answers"]:
        statuses[str(answer["status"])] = statuses.get(str(answer["status"]), 0) + 1
    return {
        "clients": clients,
        "seconds": seconds,
        "engine": engine,
        "shared": {
            "requests": len(shared["answers"]),
            "distinct_texts": len({a["text"] for a in shared["answers"]}),
            "statuses": statuses,
            "latency": _latencies(shared["answers"]),
        },
        "alone": {"requests": len(alone["answers"]), "latency": _latencies(alone["answers"])},
        "answers_equal_to_one_process": len(shared["answers"]) - len(differing),
        "answers_differing": differing,
    }


def run_shared_load_test(
    model_dir: str, data_dir: str, engine: str = "auto", clients: int = 8, seconds: float = 30
) -> dict:
    """`shared_load_test` on the test split's sources of `data_dir`, with the machine's matmul figure (taken
    first)."""
    config = read_config(model_dir, TransformerMTConfig.model_type, "TransformerMT")
    source, target = config.get("source_lang"), config.get("target_lang")
    sentences = list(load_parallel_data(data_dir, source, target)["test"][source])
    gflops = matmul_gflops()
    results = shared_load_test(model_dir, sentences, source, target, engine, clients, seconds)
    results["matmul_gflops"] = gflops
    return results


def shared_load_report(results: dict) -> str:
    rows = []
    for name, label in (("shared", "2 workers, --redis"), ("alone", "1 process")):
        latency = results[name]["latency"]
        cells = [
            f"{latency[kind]['p50_ms'] or 0:.0f} / {latency[kind]['p95_ms'] or 0:.0f}"
            for kind in ("all", "first", "repeat")
        ]
        rows.append(f"| {label} | {results[name]['requests']} | " + " | ".join(cells) + " |")
    shared = results["shared"]
    return "\n".join(
        [
            f"{results['clients']} clients, {results['seconds']:g} s each, engine {results['engine']}",
            "",
            "| server | requests | p50 / p95 ms, all | first request of a text | later requests |",
            "| --- | ---: | ---: | ---: | ---: |",
            *rows,
            "",
            f"2 workers: {shared['distinct_texts']} distinct texts, answers by status "
            f"{', '.join(f'{k}: {v}' for k, v in sorted(shared['statuses'].items()))}; "
            f"{results['answers_equal_to_one_process']} of {shared['requests']} answers equal to one process's, "
            f"{len(results['answers_differing'])} differ",
            f"Machine: fp32 2048x2048 matmul, 2 threads: {results['matmul_gflops']:.0f} GFLOP/s",
        ]
    )


__all__ = ["run_shared_load_test", "shared_load_report", "shared_load_test"]
