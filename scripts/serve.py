"""Serve translation models over HTTP with LibreTranslate's API, so that the applications that speak it work unchanged.

    pip install -e ".[serve,fast]"
    python scripts/serve.py models/transformer-mt-en-de                   # http://127.0.0.1:5000
    python scripts/serve.py runs/en-de runs/de-en --port 8080 --api_keys keys.txt --req_limit 60
    python scripts/serve.py --models models --preload en-de --max_loaded_models 2   # each pair loaded on demand
    curl -s 127.0.0.1:5000/translate -H 'Content-Type: application/json' \
        -d '{"q": "Open the file. Close the window.", "source": "en", "target": "de"}'

One model per language direction (its config's source_lang and target_lang; --models DIR: every model of a folder,
each loaded on its first request), each loaded strictly: a damaged model stops the server before it starts (one of
a folder, its first request), with one line naming the file. Requests are batched as they arrive (--max_batch
sentences, waiting at most --max_wait_ms for more), paragraphs are split into sentences as translate.py splits them,
and a full queue (--queue_limit sentences) answers 503 instead of stalling. Listens on 127.0.0.1 unless --host says
otherwise. Routes, limits and how to point an application at it: docs/serving.md.
"""

from transformer_mt.commands.cli import command
from transformer_mt.commands.serve import parse_args, serve


@command
def main(argv=None):
    serve(parse_args(argv, __doc__))


if __name__ == "__main__":
    main()
