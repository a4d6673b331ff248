"""What the server counts, for `GET /metrics` in Prometheus' text format (prometheus-client): requests by route and
status, the time each took by route and language pair (a histogram), the models loaded, sentences and batches
translated, the sentences waiting, and what the quality steps found (guards that fired,
re-decodes, abstentions, protected spans put back or lost). `/health` says only `{"status": "ok"}`, as LibreTranslate's
does; the details are here.

Each application has its own registry, so that several in one process (tests) count apart.
"""

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST


LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 60.0)  # seconds; Weblate waits 20


class Counters:
    """The server's counters, in a registry of their own; `sentence_flags` counts one translated sentence's."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self, batcher, models: list):
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "transformer_mt_requests",
            "Requests answered, by route and status.",
            ["route", "status"],
            registry=self.registry,
        )
        self.flags = Counter(
            "transformer_mt_sentence_flags",
            "Translated sentences a quality step flagged, by flag "
            "(loop, copy, length, redecoded, abstained, span_repaired, span_removed, span_lost, "
            "term_missed, term_redecoded, term_placed, term_forced, register_unknown, pivot).",
            ["flag"],
            registry=self.registry,
        )
        self.cache = Counter(
            "transformer_mt_translation_cache",
            "Translation requests looked up in the cache "
            "(serving.shared), by result: hit (answered without the model), miss, or skipped "
            "(Redis down).",
            ["result"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "transformer_mt_request_seconds",
            "Seconds from a request's arrival to its answer, by route and language pair ('-': none).",
            ["route", "pair"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.loaded = Gauge("transformer_mt_loaded_models", "Models loaded now.", registry=self.registry)
        self.registry.register(_BatcherCollector(batcher))
        self.served = Gauge(
            "transformer_mt_model_info",
            "The models served: one series per language pair (a --models folder's while it is loaded).",
            ["source", "target", "engine", "calibrated"],
            registry=self.registry,
        )
        for model in models:
            if model.engine is not None:  # a --models folder's is counted when it loads
                self.model_served(model, True)

    def model_served(self, model, served: bool) -> None:
        """`model`'s series, set when it is loaded, removed when a --models folder unloads it (its engine still
        set)."""
        labels = (
            model.source,
            model.target,
            model.engine.name,
            str(getattr(model.engine, "calibration", None) is not None).lower(),
        )
        if served:
            self.served.labels(*labels).set(1)
            self.loaded.inc()
        else:
            self.served.remove(*labels)
            self.loaded.dec()

    def answered(self, route: str, status: int, pair: str, seconds: float) -> None:
        """One request answered: its route (the path template, "unmatched" for none), status, pair, time."""
        self.requests.labels(route, str(status)).inc()
        self.latency.labels(route, pair).observe(seconds)

    def count_flags(self, flags) -> None:
        """Count the flags of the sentences of one answer (`quality.Flags` each)."""
        for sentence in flags:
            for name in sentence.names():
                self.flags.labels(name).inc()

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class _BatcherCollector:
    """The batcher's own counts, read when scraped."""

    def __init__(self, batcher):
        self.batcher = batcher

    def collect(self):
        yield GaugeMetricFamily(
            "transformer_mt_queued_sentences", "Sentences waiting for a batch.", value=self.batcher.queued
        )
        yield CounterMetricFamily("transformer_mt_batches", "Batches translated.", value=self.batcher.batches)
        yield CounterMetricFamily("transformer_mt_sentences", "Sentences translated.", value=self.batcher.sentences)


__all__ = ["Counters"]
