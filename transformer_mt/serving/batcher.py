"""Dynamic batching: sentences from requests that arrive within a few milliseconds are translated as one batch.

Requests put their sentences on one queue and wait. Whenever an engine call can start, the worker takes the oldest
request, waits up to `max_wait` seconds for more of the same kind (the same model and options) until
`max_batch` sentences, and translates them in one engine call on a thread of its own. At most `concurrency` calls
run at once: 1 for generate(), which already uses every core, and one per CTranslate2 worker (`inter_threads`), so
that one batch is decoded while the next forms. The queue is bounded: a request that would take it past
`max_queued` sentences waits for room up to `queue_wait` seconds (its own `wait_s` where the route gives one), and
is refused only then (`Overloaded`, which the server answers with 503 and Retry-After) instead of stalling: a
client such as Weblate switches a service off for 30 minutes after one 503, so a busy second is waited out. A
request whose client went away is cancelled, and its sentences leave the queue unless they are already being
translated.
"""

import asyncio
import dataclasses
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from .limits import LARGE_BATCH, Limits


class Overloaded(Exception):
    """The queue holds too many sentences to take a request's."""


@dataclasses.dataclass
class _Request:
    key: tuple
    sentences: list[str]
    future: asyncio.Future


class Batcher:
    """`await batcher.translate(key, sentences)` -> one result per sentence, from `run(key, sentences)` (a blocking
    function) called on batches of sentences from many requests."""

    def __init__(
        self,
        run: Callable[[tuple, list[str]], list],
        max_batch: int = LARGE_BATCH,
        max_wait: float = Limits.max_wait_ms / 1000,
        max_queued: int = Limits.queue_limit,
        concurrency: int = 1,
        queue_wait: float = Limits.queue_wait_s,
    ):
        self.run, self.max_batch, self.max_wait, self.max_queued = run, max_batch, max_wait, max_queued
        self.concurrency, self.queue_wait = concurrency, queue_wait
        self.waiting: list[_Request] = []
        self.queued = 0  # sentences waiting, not yet taken into a batch
        self.batches = self.sentences = 0  # translated so far: the batching efficiency's counts
        self._wake: asyncio.Event | None = None
        self._space: asyncio.Event | None = None  # set whenever sentences leave the queue
        self.waited = 0  # requests that waited for space (and were then admitted or refused)
        self._worker: asyncio.Task | None = None
        self._executor = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="transformer-mt-engine")
        self._running: set[asyncio.Task] = set()

    def start(self) -> None:
        self._wake, self._space = asyncio.Event(), asyncio.Event()
        self._worker = asyncio.get_running_loop().create_task(self._work())

    async def stop(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)
        self._executor.shutdown(wait=True)

    async def translate(self, key: tuple, sentences: list[str], wait_s: float | None = None) -> list:
        """One result per sentence; over a full queue, waits for space up to `wait_s` seconds (default
        `queue_wait`), then `Overloaded`."""
        if not sentences:
            return []
        if len(sentences) > self.max_queued:  # could never be admitted: no use retrying
            raise ValueError(
                f"the request holds {len(sentences)} sentences (or HTML text nodes); the queue takes "
                f"at most {self.max_queued} at a time: send fewer at once"
            )
        await self._admit(len(sentences), self.queue_wait if wait_s is None else wait_s)
        request = _Request(key, sentences, asyncio.get_running_loop().create_future())
        self.waiting.append(request)
        self.queued += len(sentences)
        self._wake.set()
        try:
            return await request.future
        except asyncio.CancelledError:
            if request in self.waiting:  # not taken yet: its slot is free again
                self.waiting.remove(request)
                self.queued -= len(sentences)
                self._space.set()
            raise

    async def _admit(self, count: int, wait_s: float) -> None:
        """Return once `count` more sentences fit the queue; `Overloaded` when they still do not after `wait_s`."""
        if self.queued + count <= self.max_queued:
            return
        self.waited += 1
        deadline = time.monotonic() + wait_s
        while self.queued + count > self.max_queued:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Overloaded(
                    f"the server is busy: {self.queued} sentences are waiting (limit {self.max_queued}), "
                    f"and no room came within {wait_s:g} s"
                )
            self._space.clear()
            try:
                await asyncio.wait_for(self._space.wait(), left)
            except asyncio.TimeoutError:
                pass

    async def _work(self) -> None:
        free = asyncio.Semaphore(self.concurrency)
        while True:
            await free.acquire()  # a batch is formed only when an engine call can start at once
            while not self.waiting:
                self._wake.clear()
                await self._wake.wait()
            deadline = time.monotonic() + self.max_wait
            key = self.waiting[0].key
            while self._count(key) < self.max_batch and time.monotonic() < deadline:
                self._wake.clear()
                try:
                    await asyncio.wait_for(self._wake.wait(), deadline - time.monotonic())
                except asyncio.TimeoutError:  # TimeoutError itself from Python 3.11
                    break
            task = asyncio.get_running_loop().create_task(self._translate(key, self._take(key)))
            self._running.add(task)
            task.add_done_callback(lambda done: (self._running.discard(done), free.release()))

    async def _translate(self, key: tuple, batch: list[_Request]) -> None:
        sentences = [sentence for request in batch for sentence in request.sentences]
        try:
            results = await asyncio.get_running_loop().run_in_executor(self._executor, self.run, key, sentences)
        except Exception as error:  # every request of the batch gets the error; the server goes on
            for request in batch:
                if not request.future.done():
                    request.future.set_exception(error)
            return
        self.batches, self.sentences = self.batches + 1, self.sentences + len(sentences)
        start = 0
        for request in batch:
            if not request.future.done():
                request.future.set_result(results[start : start + len(request.sentences)])
            start += len(request.sentences)

    def _count(self, key: tuple) -> int:
        return sum(len(request.sentences) for request in self.waiting if request.key == key)

    def _take(self, key: tuple) -> list[_Request]:
        """The waiting requests of `key`, oldest first, up to `max_batch` sentences (always at least one request)."""
        taken, count = [], 0
        for request in list(self.waiting):
            if request.key != key or (taken and count + len(request.sentences) > self.max_batch):
                continue
            taken.append(request)
            count += len(request.sentences)
            self.waiting.remove(request)
        self.queued -= count
        self._space.set()
        return taken
