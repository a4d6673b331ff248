"""What several server processes share through Redis (the serve command's `--redis URL`), and what one process keeps
alone without it: the per-client limit per minute (`ClientLimit`) and the translation cache (`TranslationCache`).

The limit is the `limits` library's moving window (at most N requests in any 60 seconds, as the server counted them
before it was shared), in Redis with `--redis`, in this process's memory otherwise. The cache holds what an answer
needs per text (its translation, alternatives, confidence and flags, as JSON), keyed by the model (its weights'
SHA-256, engine, weight type and device: `model_identity`), the options (format included) and the text: in Redis for
CACHE_TTL_S with `--redis`, in an LRU of CACHE_SIZE texts per process otherwise.

While Redis is down (`SharedStore`), the limit is counted in this process and the cache is skipped: one warning when
the outage begins, one when it ends, and Redis is tried again at most every RETRY_S seconds, each call bounded by
TIMEOUT_S. `SharedStore.require_up` is what a route that needs the shared store calls: a 503 while it is down.
"""

import collections
import hashlib
import json
import logging
import time

import redis
from limits import RateLimitItemPerMinute, storage, strategies
from redis.backoff import NoBackoff
from redis.retry import Retry

from ..quality import weights_sha256
from .fields import RequestError


logger = logging.getLogger(__name__)

CACHE_SIZE = 4096  # texts per process without --redis (an entry is at most --char_limit characters and its answer)
CACHE_TTL_S = 24 * 3600  # a text's life in Redis: a day, so that a cache nobody asks again empties itself
RETRY_S = 1.0  # while Redis is down, requests go without it and one tries it again after this long
TIMEOUT_S = 0.25  # every Redis call's connect and read timeout: a lost Redis delays one request by this at most
PREFIX = "transformer-mt"  # of every key this server writes in Redis
ANSWER_FIELDS = ("translatedText", "alternatives", "confidence", "flags")  # the per-text fields of an answer


class StoreDown(Exception):
    """Redis did not answer (or is known to be down and not yet due for another try)."""


class SharedStore:
    """The Redis behind `url` (None: nothing shared) and whether it answers. `run` makes a call, or raises StoreDown
    while Redis is down; outages are logged once each."""

    def __init__(self, url: str | None):
        self.url = url
        self.shown = None if url is None else url.rsplit("@", 1)[-1]  # no password in the log
        self.client = (
            None
            if url is None
            else redis.Redis.from_url(
                url, socket_connect_timeout=TIMEOUT_S, socket_timeout=TIMEOUT_S, retry=Retry(NoBackoff(), 0)
            )
        )
        self.down_since: float | None = None
        self.retry_at = 0.0

    def run(self, call):
        """`call(client)`'s result; StoreDown when Redis fails or is known to be down (then no call is made)."""
        now = time.monotonic()
        if self.down_since is not None and now < self.retry_at:
            raise StoreDown(self.shown)
        try:
            result = call(self.client)
        except redis.RedisError as error:
            if self.down_since is None:
                self.down_since = now
                logger.warning(
                    "Redis at %s does not answer (%s): the request limits are counted per process and "
                    "the translation cache is skipped until it does",
                    self.shown,
                    error,
                )
            self.retry_at = now + RETRY_S
            raise StoreDown(self.shown) from error
        if self.down_since is not None:
            logger.warning(
                "Redis at %s answers again after %.0f s: limits and cache are shared again",
                self.shown,
                now - self.down_since,
            )
            self.down_since = None
        return result

    def up(self) -> bool:
        """Whether the shared store answers: True without --redis (nothing is shared), else a PING (none while an
        outage is known and not yet due for another try)."""
        if self.client is None:
            return True
        try:
            return bool(self.run(lambda client: client.ping()))
        except StoreDown:
            return False

    def require_up(self) -> None:
        """For the routes that cannot work without the shared store: a 503 (RequestError) while it is down."""
        if not self.up():
            raise RequestError(f"the shared store (Redis at {self.shown}) does not answer; try again later", 503)


class ClientLimit:
    """At most `per_minute` requests per client in any 60 seconds (`limits`' moving window): in Redis when the store
    has it, in this process otherwise and while Redis is down."""

    def __init__(self, per_minute: int, store: SharedStore):
        self.per_minute, self.store = per_minute, store
        self.item = RateLimitItemPerMinute(per_minute)
        self.local = strategies.MovingWindowRateLimiter(storage.MemoryStorage())
        self.shared = (
            None
            if store.client is None
            else strategies.MovingWindowRateLimiter(
                storage.RedisStorage(
                    store.url,
                    connection_pool=store.client.connection_pool,
                    key_prefix=f"{PREFIX}:limits",
                    retry=Retry(NoBackoff(), 0),
                )
            )
        )

    def check(self, client: str) -> None:
        """Count a request of `client`; a 429 (RequestError) when it is over the limit."""
        allowed = None
        if self.shared is not None:
            try:
                allowed = self.store.run(lambda _: self.shared.hit(self.item, client))
            except StoreDown:
                pass
        if allowed is None:
            allowed = self.local.hit(self.item, client)
        if not allowed:
            raise RequestError(f"Slowdown: {self.per_minute} per minute", 429)


class TranslationCache:
    """Answers per text: in Redis (CACHE_TTL_S) when the store has it, else an LRU of `size` texts in this process.
    A request is answered from it when every text of it is there; `counter` (a prometheus Counter labelled by
    result) counts hits, misses, and lookups skipped while Redis is down."""

    def __init__(self, store: SharedStore, counter=None, size: int = CACHE_SIZE):
        self.store, self.counter, self.size = store, counter, size
        self.local = collections.OrderedDict()  # key -> the text's answer as JSON, least recently used first

    def keys(self, model, options, texts: list[str]) -> list[str] | None:
        """Each text's key, or None when the answer is not to be cached: a model of unknown identity, sampling, no
        text."""
        identity = getattr(model, "weights", None)
        if identity is None or options.do_sample or not texts:
            return None
        head = json.dumps([identity, model.source, model.target, repr(options)])
        return [f"{PREFIX}:cache:{hashlib.sha256(json.dumps([head, text]).encode()).hexdigest()}" for text in texts]

    def get(self, model, options, asked) -> dict | None:
        """The answer to `asked` (`fields.TranslateRequest`) from the cache, or None."""
        keys = self.keys(model, options, asked.texts)
        if keys is None:
            return None
        if self.store.client is None:
            entries = [self.local.get(key) for key in keys]
            for key, entry in zip(keys, entries):
                if entry is not None:
                    self.local.move_to_end(key)
        else:
            try:
                entries = self.store.run(lambda client: client.mget(keys))
            except StoreDown:
                self.count("skipped")
                return None
        if any(entry is None for entry in entries):
            self.count("miss")
            return None
        self.count("hit")
        return answer_of([json.loads(entry) for entry in entries], asked.is_list)

    def put(self, model, options, asked, answer: dict) -> None:
        """Keep each text's part of `answer`; nothing while Redis is down."""
        keys = self.keys(model, options, asked.texts)
        if keys is None:
            return
        entries = entries_of(answer, asked.is_list, len(keys))
        if self.store.client is None:
            for key, entry in zip(keys, entries):
                self.local[key] = entry
                self.local.move_to_end(key)
            while len(self.local) > self.size:
                self.local.popitem(last=False)
            return

        def store(client):
            pipeline = client.pipeline(transaction=False)
            for key, entry in zip(keys, entries):
                pipeline.set(key, entry, ex=CACHE_TTL_S)
            return pipeline.execute()

        try:
            self.store.run(store)
        except StoreDown:
            pass

    def count(self, result: str) -> None:
        if self.counter is not None:
            self.counter.labels(result).inc()


def entries_of(answer: dict, is_list: bool, count: int) -> list[str]:
    """Each text's fields of `answer` (a list per field for a list request, a value for a string), as JSON."""
    columns = {name: answer[name] if is_list else [answer[name]] for name in ANSWER_FIELDS if name in answer}
    return [
        json.dumps({name: values[i] for name, values in columns.items()}, ensure_ascii=False) for i in range(count)
    ]


def answer_of(entries: list[dict], is_list: bool) -> dict:
    """The answer the texts' `entries` make, shaped as the model's: `flags` only when a text has one."""

    def shaped(values):
        return values if is_list else values[0]

    answer = {name: shaped([entry[name] for entry in entries]) for name in ANSWER_FIELDS[:3] if name in entries[0]}
    if any(entry.get("flags") for entry in entries):
        answer["flags"] = shaped([entry.get("flags", {}) for entry in entries])
    return answer


class SharedState:
    """The server's state that several processes share through the store of `redis_url` (None: this process's
    alone): the per-client limit (None when `req_limit` is 0) and the translation cache."""

    def __init__(self, req_limit: int = 0, redis_url: str | None = None, cache_counter=None):
        self.store = SharedStore(redis_url)
        self.limit = ClientLimit(req_limit, self.store) if req_limit else None
        self.cache = TranslationCache(self.store, cache_counter)


def model_identity(model_dir: str, engine, quantization: str | None) -> str:
    """What a served model's answers depend on beyond the request, for the cache's keys: its weights' SHA-256 (as a
    calibration records it), the engine, CTranslate2's weight type and the device."""
    weight_type = (quantization or "float32") if engine.name == "ctranslate2" else "-"
    return f"{weights_sha256(model_dir)}/{engine.name}/{weight_type}/{getattr(engine, 'device', 'cpu')}"


__all__ = [
    "CACHE_SIZE",
    "CACHE_TTL_S",
    "ClientLimit",
    "RETRY_S",
    "SharedState",
    "SharedStore",
    "StoreDown",
    "TranslationCache",
    "model_identity",
]
