"""Two API keys with different day quotas through two worker processes sharing one Redis, and a key without limits
beside them (scripts/load_test.py --keys runs `run_keys_quota_test`).

A redis-server on a free loopback port (no persistence), a key store with `quotas` (characters per UTC day) and one
open key, and `transformer-mt-serve --workers 2 --redis URL --keys_db FILE`; then `clients` concurrent clients send
`requests` one-sentence requests per key (the test split's sources, in order), the keys' requests interleaved. Held
to its quota, a key's admitted characters are at most its quota, every request refused for it would still not fit
in what is left at the end (the count only grows), every refusal is the day-quota 429, and the store and Redis count
what was admitted; nothing of the open key is refused.
"""

import asyncio
import collections
import os
import tempfile
import time

import redis

from transformer_mt.checkpoints import read_config
from transformer_mt.configuration import TransformerMTConfig
from transformer_mt.data import load_parallel_data
from transformer_mt.machine import git_commit, matmul_gflops
from transformer_mt.serving.keys import KeyStore, day_count, utc_day

from .serving import _server
from .shared_load import redis_server


QUOTAS = {"small": 2_000, "large": 5_000}  # characters per day: about 35 and 87 test sentences (57 characters each)


async def _send(url: str, asked: list[tuple[str, str, str]], clients: int, source: str, target: str) -> list:
    """`asked` ((key name, key, text) in order) sent by `clients` clients: (key name, characters, status, body)."""
    import aiohttp

    answers, position = [], iter(asked)

    async def client(session):
        for name, key, text in position:
            fields = {"q": text, "source": source, "target": target, "api_key": key}
            async with session.post(url + "/translate", json=fields) as got:
                answers.append((name, len(text), got.status, await got.json()))

    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=120)) as session:
        await asyncio.gather(*(client(session) for _ in range(clients)))
    return answers


def held(name: str, quota: int | None, answers: list, admitted: dict) -> dict:
    """One key's figures and whether it was held to its quota (None: a key without limits, never refused)."""
    mine = [answer for answer in answers if answer[0] == name]
    statuses = collections.Counter(str(status) for _, _, status, _ in mine)
    refused = [(characters, body) for _, characters, status, body in mine if status != 200]
    used = sum(characters for _, characters, status, _ in mine if status == 200)
    if quota is None:
        ok = not refused
    else:
        ok = (
            used <= quota
            and all(characters > quota - used for characters, _ in refused)
            and all(body.get("error", "").startswith(f"Slowdown: {quota} characters per day") for _, body in refused)
        )
    return {
        "quota": quota,
        "requests": len(mine),
        "statuses": dict(statuses),
        "admitted_characters": used,
        "counted": admitted.get(name),
        "held": ok and admitted.get(name) == used,
    }


def keys_quota_test(
    model_dir: str,
    sentences: list[str],
    source: str,
    target: str,
    quotas: dict = QUOTAS,
    requests: int = 150,
    clients: int = 8,
    engine: str = "auto",
) -> dict:
    """See the module's docstring."""
    with tempfile.TemporaryDirectory() as folder, redis_server() as redis_url:
        store = KeyStore(os.path.join(folder, "keys.sqlite3"))
        secrets = {name: store.add(name, day_limit=quota)[1] for name, quota in {**quotas, "open": 0}.items()}
        texts = [sentences[i % len(sentences)] for i in range(requests)]
        asked = [(name, secrets[name], text) for text in texts for name in secrets]
        extra = ("--workers", "2", "--redis", redis_url, "--keys_db", store.path)
        with _server(model_dir, engine, 512, None, 2.0, extra=extra) as url:
            answers = asyncio.run(_send(url, asked, clients, source, target))
        day = utc_day(time.time())
        counted = {row["name"]: row["characters"] for row in store.usage(day)}
        shared = redis.Redis.from_url(redis_url)
        in_redis = {name: int(shared.get(day_count(store.find(key)["id"], day)) or 0) for name, key in secrets.items()}
    keys = {name: held(name, quotas.get(name), answers, counted) for name in secrets}
    for name in keys:
        keys[name]["counted_in_redis"] = in_redis[name]
        keys[name]["held"] = keys[name]["held"] and in_redis[name] == keys[name]["admitted_characters"]
    return {"clients": clients, "requests_per_key": requests, "engine": engine, "workers": 2, "keys": keys}


def run_keys_quota_test(model_dir: str, data_dir: str, engine: str = "auto", clients: int = 8) -> dict:
    """`keys_quota_test` on the test split's sources of `data_dir`, with the commit and the machine's matmul figure
    (taken first)."""
    config = read_config(model_dir, TransformerMTConfig.model_type, "TransformerMT")
    source, target = config.get("source_lang"), config.get("target_lang")
    sentences = list(load_parallel_data(data_dir, source, target)["test"][source])
    gflops = matmul_gflops()
    results = keys_quota_test(model_dir, sentences, source, target, clients=clients, engine=engine)
    return {"commit": git_commit(), "matmul_gflops": round(gflops, 1), **results}


def keys_quota_report(results: dict) -> str:
    rows = [
        f"| {name} | {key['quota'] or '-'} | {key['requests']} | "
        f"{', '.join(f'{k}: {v}' for k, v in sorted(key['statuses'].items()))} | {key['admitted_characters']} | "
        f"{'yes' if key['held'] else 'NO'} |"
        for name, key in results["keys"].items()
    ]
    return "\n".join(
        [
            f"2 workers sharing Redis, {results['clients']} clients, {results['requests_per_key']} requests per key",
            "",
            "| key | quota (characters/day) | requests | statuses | admitted characters | held |",
            "| --- | ---: | ---: | --- | ---: | --- |",
            *rows,
            "",
            f"Machine: fp32 2048x2048 matmul, 2 threads: {results['matmul_gflops']:.0f} GFLOP/s",
        ]
    )


__all__ = ["QUOTAS", "keys_quota_report", "keys_quota_test", "run_keys_quota_test"]
