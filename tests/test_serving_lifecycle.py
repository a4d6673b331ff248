"""A clean stop (the serve command's SIGTERM): the server stops accepting connections, finishes the request in flight
and exits 0; --shutdown_timeout_s bounds how long it waits. On a real server process on loopback. (With --workers N
the supervisor's exit status is tested in test_serving_shared.py.)"""

import json
import signal
import socket
import threading
import time
import urllib.request

import pytest

from .utils import COPY_CORPUS, save_copy_model, serve_process


LONG = ("--char_limit", "200000", "--queue_limit", "8000")  # room for one long request


@pytest.fixture(scope="module")
def slow_model(tmp_path_factory):
    """A copy model whose long request takes seconds: greedy, up to 64 tokens a sentence."""
    path = tmp_path_factory.mktemp("lifecycle")
    save_copy_model(path, dict(num_beams=1, max_length=64))
    return path


def long_request(base: str, answers: list, sentences: int = 1600) -> None:
    """One text of `sentences` sentences (1,600: about 50,000 characters, seconds of decoding); its status and when
    it came."""
    text = " ".join(COPY_CORPUS[i % 8] for i in range(sentences))
    request = urllib.request.Request(
        f"{base}/translate",
        json.dumps({"q": text, "source": "en", "target": "de", "guards": False}).encode(),
        {"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as answer:
            answers.append((answer.status, time.monotonic(), json.loads(answer.read())))
    except OSError as error:  # cut off: the shutdown's bound passed
        answers.append((None, time.monotonic(), str(error)))


@pytest.mark.slow  # a server process, seconds of decoding
def test_sigterm_finishes_the_request_in_flight_refuses_new_ones_and_exits_0(slow_model):
    with serve_process(str(slow_model), "--engine", "transformers", *LONG) as (process, base):
        answers = []
        sender = threading.Thread(target=long_request, args=(base, answers, 3200))
        sender.start()
        time.sleep(1.0)  # the request is being decoded (for seconds more, even on a fast machine)
        process.send_signal(signal.SIGTERM)
        stopped = time.monotonic()
        time.sleep(0.5)
        with pytest.raises(OSError):  # no new connection is taken while the request in flight finishes
            socket.create_connection(("127.0.0.1", int(base.rsplit(":", 1)[1])), timeout=2).close()
        sender.join(120)
        assert process.wait(60) == 0, process.stdout.read()
    status, answered, body = answers[0]
    assert status == 200 and answered > stopped and body["translatedText"].startswith("Click the Save button.")


@pytest.mark.slow
def test_the_shutdown_waits_at_most_its_bound(slow_model):
    flags = ("--engine", "transformers", *LONG, "--shutdown_timeout_s", "0.5")
    with serve_process(str(slow_model), *flags) as (process, base):
        answers = []
        sender = threading.Thread(target=long_request, args=(base, answers, 6000))  # far longer than 1.5 s
        sender.start()
        time.sleep(1.0)
        process.send_signal(signal.SIGTERM)
        stopped = time.monotonic()
        assert process.wait(60) == 0
        sender.join(120)
    assert time.monotonic() - stopped < 20 and answers[0][0] is None  # the request was cut, not waited for
