"""The serving defaults (transformer_mt.serving.limits) are written once: the serve command's flags, the app, the
batcher and docs/serving.md all state the values of `Limits`."""

import dataclasses

from transformer_mt.commands.serve import parse_args
from transformer_mt.serving.batcher import Batcher
from transformer_mt.serving.limits import LARGE_BATCH, SMALL_BATCH, Limits

from .utils import REPO


def test_the_flags_and_the_batcher_default_to_the_limits():
    args = parse_args(["model"])
    for field in dataclasses.fields(Limits):
        if hasattr(args, field.name) and field.name != "api_keys":
            assert getattr(args, field.name) == field.default, field.name
    batcher = Batcher(lambda key, sentences: sentences)
    assert (batcher.max_wait, batcher.max_queued, batcher.max_batch) == (
        Limits.max_wait_ms / 1000,
        Limits.queue_limit,
        LARGE_BATCH,
    )
    assert (Limits().batch_size(2), Limits().batch_size(1), Limits(max_batch=4).batch_size(2)) == (
        SMALL_BATCH,
        LARGE_BATCH,
        4,
    )


def test_the_docs_state_the_defaults():
    docs = (REPO / "docs" / "serving.md").read_text(encoding="utf-8")
    limits = Limits()
    for sentence in (
        f"`--max_wait_ms` ({limits.max_wait_ms:g} ms)",
        f"`--max_wait_ms {limits.max_wait_ms:g}`",
        f"`--queue_limit` | {limits.queue_limit} sentences",
        f"up to `--queue_wait_s` ({limits.queue_wait_s:g} s)",
        f"`--char_limit` | {limits.char_limit} characters",
        f"`--batch_limit` | {limits.batch_limit} texts",
        f"`--max_batch` {SMALL_BATCH} per CTranslate2 call, {LARGE_BATCH} for generate()",
    ):
        assert sentence in docs, sentence
