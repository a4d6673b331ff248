"""What the server allows and how it batches, with their defaults in one place: the serve command's flags, the app,
the batcher and docs/serving.md all read `Limits` (a test holds the docs to it)."""

import dataclasses


# Sentences per engine call when --max_batch is not given: CTranslate2 decodes one call per worker, and at 16 clients
# small batches that start at once kept 0.78 of offline throughput against 0.56 for batches of up to 32; generate()
# takes one call at a time over every core, where larger batches pay (scripts/load_test.py, docs/serving.md).
SMALL_BATCH, LARGE_BATCH = 8, 32


@dataclasses.dataclass(frozen=True)
class Limits:
    """What one request may ask (LibreTranslate's --char-limit, --batch-limit, --req-limit; an uploaded file's bytes
    and characters), the API keys, and the
    batching: a batch waits `max_wait_ms` for more requests up to `max_batch` sentences, and at most
    `queue_limit` sentences wait; a request over it waits for room up to `queue_wait_s` (then 503)."""

    char_limit: int = 5000  # characters per request, all of q
    batch_limit: int = 32  # texts per request when q is a list
    alternatives_limit: int = 5
    req_limit: int = 0  # requests per minute per client; 0: none
    api_keys: frozenset[str] | None = None  # None: no key needed
    keys_db: str | None = None  # the SQLite file of keys with quotas (serving.keys); None: none
    metrics_token: str | None = None  # /metrics' bearer token; None: /metrics is open
    max_batch: int | None = None  # None: SMALL_BATCH per CTranslate2 worker call, LARGE_BATCH for generate()
    max_wait_ms: float = 2.0
    queue_limit: int = 512
    queue_wait_s: float = 10.0  # below the 20 s Weblate gives a LibreTranslate-type service
    file_size_limit: int = 20 * 2**20  # bytes per /translate_file upload (LibreTranslate sets none)
    file_char_limit: int = 200_000  # characters of text per uploaded file: about 40 pages

    def batch_size(self, concurrency: int) -> int:
        """Sentences per engine call for an engine that runs `concurrency` calls at once."""
        if self.max_batch is not None:
            return self.max_batch
        return SMALL_BATCH if concurrency > 1 else LARGE_BATCH


__all__ = ["LARGE_BATCH", "Limits", "SMALL_BATCH"]
