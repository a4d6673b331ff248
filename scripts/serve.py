"""Serve translation models over HTTP with LibreTranslate's API, so that the applications that speak it work unchanged.

    pip install -e ".[serve,fast]"
    python scripts/serve.py models/transformer-mt-en-de                   # http://127.0.0.1:5000
    python scripts/serve.py runs/en-de runs/de-en --port 8080 --api_keys keys.txt --req_limit 60
    curl -s 127.0.0.1:5000/translate -H 'Content-Type: application/json' \
        -d '{"q": "Open the file. Close the window.", "source": "en", "target": "de"}'

One model per language direction (its config's source_lang and target_lang), each loaded strictly: a damaged model
stops the server before it starts, with one line naming the file. Requests are batched as they arrive (--max_batch
sentences, waiting at most --max_wait_ms for more), paragraphs are split into sentences as translate.py splits them,
and a full queue (--queue_limit sentences) answers 503 instead of stalling. Listens on 127.0.0.1 unless --host says
otherwise. Routes, limits and how to point an application at it: docs/serving.md.
"""

import argparse

from transformer_mt.cli import command
from transformer_mt.engines import DEFAULT_INTRA_THREADS, ENGINES


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="+", metavar="MODEL", help="Model directories, one per language direction.")
    parser.add_argument("--host", default="127.0.0.1", help="Address to listen on (default: loopback only).")
    parser.add_argument("--port", type=int, default=5000, help="LibreTranslate's default port, 5000.")
    parser.add_argument("--engine", choices=ENGINES, default="auto", help="As translate.py's --engine.")
    parser.add_argument("--quantization", choices=("float32", "int8", "int8_float32", "int16"),
                        help="CTranslate2's weights (default float32).")
    parser.add_argument("--intra_threads", type=int, default=DEFAULT_INTRA_THREADS)
    parser.add_argument("--inter_threads", type=int)
    parser.add_argument("--char_limit", type=int, default=5000, help="Characters per request (all of q).")
    parser.add_argument("--batch_limit", type=int, default=32, help="Texts per request when q is a list.")
    parser.add_argument("--req_limit", type=int, default=0, help="Requests per minute per client (0: no limit).")
    parser.add_argument("--api_keys", help="A file of API keys, one a line: requests must carry one (403 else).")
    parser.add_argument("--max_batch", type=int, help="Sentences per engine call at most (default: 8 per "
                        "CTranslate2 worker call, 32 for generate(); measured in docs/serving.md).")
    parser.add_argument("--max_wait_ms", type=float, default=2.0, help="How long a batch waits for more requests.")
    parser.add_argument("--queue_limit", type=int, default=512, help="Sentences waiting at most; then 503.")
    args = parser.parse_args(argv)
    for name in ("port", "char_limit", "batch_limit", "max_batch", "queue_limit", "intra_threads"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    for name in ("req_limit", "max_wait_ms"):
        if getattr(args, name) < 0:
            parser.error(f"--{name} must be >= 0, got {getattr(args, name)}")
    return args


def read_api_keys(path: str) -> frozenset[str]:
    with open(path, encoding="utf-8") as f:
        keys = frozenset(line.strip() for line in f if line.strip() and not line.startswith("#"))
    if not keys:
        raise ValueError(f"--api_keys {path!r} holds no keys (one a line)")
    return keys


def served_models(args) -> list:
    """One ServedModel per direction: a model trained on several targets (transformer_mt.tags) serves each."""
    from transformer_mt.engines import load_engine
    from transformer_mt.serving import ServedModel
    from transformer_mt.tags import model_target_languages, target_language_id

    models = []
    for directory in args.models:
        engine = load_engine(directory, args.engine, quantization=args.quantization,
                             intra_threads=args.intra_threads, inter_threads=args.inter_threads)
        source, languages = engine.config.source_lang, model_target_languages(engine.config, engine.tokenizer)
        targets = languages or [engine.config.target_lang]
        if not source or not all(targets):
            raise ValueError(f"{directory}/config.json has no source_lang and target_lang, which say the direction "
                             "it serves: set them in config.json (training, averaging and converting write them)")
        for target in targets:
            print(f"{directory}: {source}->{target}, engine: {engine.name} ({engine.reason})", flush=True)
            language_id = target_language_id(engine.config, engine.tokenizer, target) if languages else None
            models.append(ServedModel(engine, source, target, language_id))
    return models


@command
def main(argv=None):
    args = parse_args(argv)
    import uvicorn

    from transformer_mt.serving import Limits, create_app
    from transformer_mt.serving.languages import warm_up

    limits = Limits(char_limit=args.char_limit, batch_limit=args.batch_limit, req_limit=args.req_limit,
                    api_keys=read_api_keys(args.api_keys) if args.api_keys else None)
    app = create_app(served_models(args), limits, max_batch=args.max_batch, max_wait=args.max_wait_ms / 1000,
                     max_queued=args.queue_limit)
    warm_up()
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
