"""/metrics worth watching (transformer_mt.serving.counters): every answer counted by route and status, timed by
route and language pair, the models loaded as a gauge, and the route behind --metrics_token's bearer token."""

import pytest

from .utils import require


require("fastapi", "the server needs the [serve] extra: pip install -e '.[serve]'")
from fastapi.testclient import TestClient  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from transformer_mt.serving import Limits  # noqa: E402

from .test_serving import fake_app  # noqa: E402


def samples(client, **headers) -> dict:
    """{(name, labels as a sorted tuple): value} of every sample /metrics gives."""
    text = client.get("/metrics", headers=headers).text
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_answers_are_counted_by_route_and_status_and_timed_by_route_and_pair():
    with TestClient(fake_app()) as client:
        for text in ("Open the file.", "Close it."):
            assert client.post("/translate", json={"q": text, "source": "en", "target": "de"}).status_code == 200
        assert client.post("/translate", json={"q": "x", "source": "en", "target": "xx"}).status_code == 400
        assert client.get("/no/such/route").status_code == 404
        found = samples(client)
    assert found[("transformer_mt_requests_total", (("route", "/translate"), ("status", "200")))] == 2
    assert found[("transformer_mt_requests_total", (("route", "/translate"), ("status", "400")))] == 1
    assert found[("transformer_mt_requests_total", (("route", "unmatched"), ("status", "404")))] == 1
    assert found[("transformer_mt_request_seconds_count", (("pair", "en-de"), ("route", "/translate")))] == 2
    assert found[("transformer_mt_request_seconds_count", (("pair", "-"), ("route", "/translate")))] == 1  # refused
    assert found[("transformer_mt_loaded_models", ())] == 2  # fake_app's en-de and de-en


@pytest.mark.parametrize("given, status", [(None, 401), ("Bearer wrong", 401), ("Bearer s3cret", 200)])
def test_metrics_answers_only_its_bearer_token(given, status):
    with TestClient(fake_app(Limits(metrics_token="s3cret"))) as client:
        answer = client.get("/metrics", headers={"Authorization": given} if given else {})
    assert answer.status_code == status
    if status == 401:
        assert answer.json() == {
            "error": "/metrics needs the bearer token of --metrics_token (Authorization: Bearer TOKEN)"
        }
    with TestClient(fake_app()) as client:
        assert client.get("/metrics").status_code == 200  # open without a token
