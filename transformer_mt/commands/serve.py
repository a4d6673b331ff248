"""The serve command (scripts/serve.py) as named steps: its flags, whose defaults are `Limits`' own, and the engine
settings' flags, the translate command's (`parse_args`), the models it serves, one per language direction
(`served_models`), and `serve`, which starts the app."""

import argparse
import importlib.util
import json
import os
import signal
import sys

from ..engines import add_engine_arguments, engine_settings, load_engine
from ..serving.folder import ModelFolder, add_folder_arguments, check_folder_args, codes, offered_pairs, parse_pairs
from ..serving.keys import read_api_keys
from ..serving.languages import warm_up
from ..serving.limits import Limits
from ..serving.proxy import Forwarded, add_proxy_arguments, check_proxy_args, uvicorn_settings
from ..serving.reload import POLL_SECONDS, watch
from ..serving.suggestion_store import DEFAULT_DB
from ..serving.suggestions import MODES, suggestions_of
from ..serving.uploads import DEFAULT_DIRECTORY, DEFAULT_EXPIRY_MINUTES, FileStore
from ..tags import model_target_languages
from .environment import help_epilog, read_environment


def parse_args(argv=None, description: str | None = None) -> argparse.Namespace:
    """The serve command's flags, checked: a one-line parser error (exit 2) for a value that cannot work."""
    parser = build_parser(description)
    args = parser.parse_args(argv)
    check_args(parser, args)
    return args


def build_parser(description: str | None = None) -> argparse.ArgumentParser:
    """The serve command's parser, its flags' defaults read from their variables (`commands.environment`)."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="*", metavar="MODEL", help="Model directories, one per language direction.")
    parser.add_argument("--host", default="127.0.0.1", help="Address to listen on (default: loopback only).")
    parser.add_argument("--port", type=int, default=5000, help="LibreTranslate's default port, 5000.")
    add_engine_arguments(parser, export=False)  # one export per --model would need a flag per model
    add_folder_arguments(parser)
    add_limit_arguments(parser)
    add_file_arguments(parser)
    add_suggestion_arguments(parser)
    add_proxy_arguments(parser)
    parser.add_argument(
        "--shutdown_timeout_s",
        type=float,
        default=SHUTDOWN_TIMEOUT_S,
        help="On SIGTERM the server stops accepting connections, finishes the requests in flight for at most this "
        "many seconds (then cancels the rest) and exits 0 (default %(default)s: below Kubernetes' 30 s grace).",
    )
    parser.add_argument(
        "--watch_seconds",
        type=float,
        default=POLL_SECONDS,
        help="Every this many seconds each process looks whether a MODEL directory (a symlink "
        "transformer-mt-promote switches) holds other weights, and swaps them in without "
        "dropping a request (serving.reload; default %(default)s; 0: never).",
    )
    read_environment(parser)  # TRANSFORMER_MT_<FLAG>: a container's or a unit file's settings
    parser.epilog = help_epilog(parser)
    return parser


def add_limit_arguments(parser: argparse.ArgumentParser) -> None:
    """What a request may ask, how requests are batched and shared between processes (`Limits`' defaults), and
    the confidence below which a sentence is answered with its source."""
    parser.add_argument("--char_limit", type=int, default=Limits.char_limit, help="Characters per request (all of q).")
    parser.add_argument(
        "--batch_limit", type=int, default=Limits.batch_limit, help="Texts per request when q is a list."
    )
    parser.add_argument(
        "--req_limit", type=int, default=Limits.req_limit, help="Requests per minute per client (0: no limit)."
    )
    parser.add_argument("--api_keys", help="A file of API keys, one a line: requests must carry one (403 else).")
    parser.add_argument("--keys_db", help="A SQLite file of API keys with quotas (transformer-mt-keys); 403 else.")
    parser.add_argument(
        "--metrics_token",
        help="/metrics answers only requests with `Authorization: Bearer TOKEN` (401 else; default: open). "
        "Give it as TRANSFORMER_MT_METRICS_TOKEN rather than here, where other users' ps shows it.",
    )
    parser.add_argument(
        "--redis",
        metavar="URL",
        help="Share the request limits and the translation cache with the "
        "other processes given the same Redis, e.g. redis://127.0.0.1:6379/0 (default: this "
        "process's own; docs/serving.md, several processes).",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="Processes answering on --port, each loading the models (with --redis they share limits and cache).",
    )
    parser.add_argument(
        "--max_batch",
        type=int,
        help="Sentences per engine call at most (default: 8 per "
        "CTranslate2 worker call, 32 for generate(); measured in docs/serving.md).",
    )
    parser.add_argument(
        "--max_wait_ms", type=float, default=Limits.max_wait_ms, help="How long a batch waits for more requests."
    )
    parser.add_argument(
        "--queue_limit",
        type=int,
        default=Limits.queue_limit,
        help="Sentences waiting at most; a request past it waits for room (--queue_wait_s), then 503.",
    )
    parser.add_argument(
        "--queue_wait_s",
        type=float,
        default=Limits.queue_wait_s,
        help="Seconds a request over --queue_limit waits for room before a 503 (Weblate switches a service "
        "off for 30 minutes after one 503 and gives a LibreTranslate-type service 20 s).",
    )
    parser.add_argument(
        "--min_confidence",
        type=float,
        help="Answer a sentence whose calibrated confidence is below this with its source, flagged "
        "(a request's min_confidence field overrides it; the models need a calibration.json).",
    )


def add_file_arguments(parser: argparse.ArgumentParser) -> None:
    """/translate_file: its limits, where translated files wait, and the switch that turns it off."""
    parser.add_argument(
        "--file_size_limit", type=int, default=Limits.file_size_limit, help="Bytes per /translate_file upload."
    )
    parser.add_argument(
        "--file_char_limit", type=int, default=Limits.file_char_limit, help="Characters of text per uploaded file."
    )
    parser.add_argument(
        "--files_dir",
        default=DEFAULT_DIRECTORY,
        help="Where translated files wait for their download; processes serving one folder answer "
        "each other's downloads (default: %(default)s).",
    )
    parser.add_argument(
        "--files_expiry_minutes",
        type=float,
        default=DEFAULT_EXPIRY_MINUTES,
        help="A translated file never downloaded is deleted after this (a download deletes it).",
    )
    parser.add_argument(
        "--disable_files_translation",
        action="store_true",
        help="Answer /translate_file with 403 (LibreTranslate's flag).",
    )


def add_suggestion_arguments(parser: argparse.ArgumentParser) -> None:
    """/suggest and the translation memory: the mode and the store."""
    parser.add_argument(
        "--suggestions",
        nargs="?",
        const="review",
        choices=MODES,
        help="Take /suggest (off without it): review (the default when given) keeps each for an admin "
        "(transformer-mt-suggestions); accept takes those that pass the filters at once (needs "
        "--api_keys). Accepted ones answer /translate as a translation memory.",
    )
    parser.add_argument(
        "--suggestions_db",
        default=DEFAULT_DB,
        metavar="PATH",
        help="The SQLite file of suggestions, shared by every process given it (default: "
        "%(default)s in the working directory).",
    )


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """A parser error (exit 2) for a value of `args` that cannot work."""
    if args.min_confidence is not None and not 0 <= args.min_confidence <= 1:
        parser.error(f"--min_confidence is a probability in [0, 1], got {args.min_confidence}")
    try:
        engine_settings(args)
    except ValueError as error:
        parser.error(str(error))
    for name in (
        "port",
        "char_limit",
        "batch_limit",
        "max_batch",
        "queue_limit",
        "file_size_limit",
        "file_char_limit",
    ):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    for name in ("req_limit", "max_wait_ms", "queue_wait_s"):
        if getattr(args, name) < 0:
            parser.error(f"--{name} must be >= 0, got {getattr(args, name)}")
    if args.files_expiry_minutes <= 0:
        parser.error(f"--files_expiry_minutes must be > 0, got {args.files_expiry_minutes}")
    if args.shutdown_timeout_s < 0:
        parser.error(f"--shutdown_timeout_s must be >= 0, got {args.shutdown_timeout_s}")
    if args.watch_seconds < 0:
        parser.error(f"--watch_seconds must be >= 0 (0: never), got {args.watch_seconds}")
    check_folder_args(parser, args)
    check_proxy_args(parser, args)
    if args.workers < 1:
        parser.error(f"--workers must be >= 1, got {args.workers}")
    if args.suggestions == "accept" and not (args.api_keys or args.keys_db):
        parser.error(
            "--suggestions accept needs --api_keys or --keys_db: suggestions taken without review must come from "
            "known clients (or use --suggestions review)"
        )


def limits_of(args: argparse.Namespace) -> Limits:
    return Limits(
        char_limit=args.char_limit,
        batch_limit=args.batch_limit,
        req_limit=args.req_limit,
        api_keys=read_api_keys(args.api_keys) if args.api_keys else None,
        keys_db=args.keys_db,
        metrics_token=args.metrics_token,
        max_batch=args.max_batch,
        max_wait_ms=args.max_wait_ms,
        queue_limit=args.queue_limit,
        queue_wait_s=args.queue_wait_s,
        file_size_limit=args.file_size_limit,
        file_char_limit=args.file_char_limit,
    )


def file_store(args: argparse.Namespace) -> FileStore | None:
    """Where translated files wait, or None with --disable_files_translation."""
    return None if args.disable_files_translation else FileStore(args.files_dir, args.files_expiry_minutes)


def served_models(args: argparse.Namespace) -> list:
    """One ServedModel per direction: a model trained on several targets (transformer_mt.tags) serves each."""
    from ..serving.app import ServedModel

    models, only = [], codes(getattr(args, "load_only", None))  # a Namespace of its own may not have it
    for directory in args.models:
        engine, weights = load_served(directory, args)
        source = engine.config.source_lang
        targets = model_target_languages(engine.config, engine.tokenizer) or [engine.config.target_lang]
        if not source or not all(targets):
            raise ValueError(
                f"{directory}/config.json has no source_lang and target_lang, which say the direction "
                "it serves: set them in config.json (training, averaging and converting write them)"
            )
        for target in targets:
            if only is not None and not {source, target} <= set(only):
                print(f"{directory}: {source}->{target} passed over, not of --load_only {args.load_only}", flush=True)
                continue
            print(f"{directory}: {source}->{target}, engine: {engine.name} ({engine.reason})", flush=True)
            check_calibration(directory, engine, args)
            models.append(ServedModel(engine, source, target, args.min_confidence, weights))
        if not models or models[-1].engine is not engine:
            raise ValueError(f"{directory} translates none of --load_only {args.load_only}: drop it or widen the list")
    return models


def model_folder(args: argparse.Namespace, explicit: list) -> "ModelFolder | None":
    """The --models folder's pairs that no MODEL of `explicit` serves, their ServedModels unloaded (then the
    --preload pairs loaded); None without --models."""
    from ..serving.app import ServedModel

    if not args.models_dir:
        return None
    pairs, passed_over = offered_pairs(args.models_dir, codes(args.prefer) or [], codes(args.load_only))
    for directory in passed_over:
        print(f"{directory}: passed over, another model of its pair wins (--prefer)", flush=True)
    served = {(model.source, model.target) for model in explicit}
    groups = {}
    for (source, target), directory in sorted(pairs.items(), key=lambda item: item[1]):
        if (source, target) in served:
            print(f"{directory}: passed over, a MODEL given by itself serves {source}->{target}", flush=True)
            continue
        groups[directory] = [ServedModel(None, source, target, args.min_confidence)]
        print(f"{directory}: {source}->{target}, loaded on its first request", flush=True)
    settings = engine_settings(args)
    # the engine calls the batcher runs at once, before any engine is loaded: generate()'s 1, CTranslate2's workers
    generate = settings.engine == "transformers" or importlib.util.find_spec("ctranslate2") is None
    workers = 1 if generate else settings.inter_threads or max(1, (os.cpu_count() or 1) // settings.intra_threads)
    folder = ModelFolder(groups, lambda directory: load_checked(directory, args), args.max_loaded_models, workers)
    for pair in parse_pairs(args.preload):
        if pairs[pair] in groups:
            folder.load_now(pairs[pair])
    return folder


def load_checked(directory: str, args: argparse.Namespace) -> tuple:
    """`load_served`, and the calibration --min_confidence needs (a folder's model is checked when it loads)."""
    engine, weights = load_served(directory, args)
    check_calibration(directory, engine, args)
    return engine, weights


def check_calibration(directory: str, engine, args: argparse.Namespace) -> None:
    if args.min_confidence is not None and engine.calibration is None:
        raise ValueError(
            f"--min_confidence needs {directory}'s calibrated confidence, and "
            f"{engine.calibration_problem or 'it holds no calibration.json'}: fit one with "
            f"transformer-mt-score --model {directory} --calibrate DATA"
        )


def load_served(directory: str, args: argparse.Namespace) -> tuple:
    """`directory`'s engine as the flags ask, and its weights' identity (the translation cache's key): what the
    server starts with, and what `serving.reload` swaps in."""
    from ..serving.shared import model_identity

    settings = engine_settings(args)
    engine = load_engine(directory, settings)
    return engine, model_identity(directory, engine, settings.quantization)


SHUTDOWN_TIMEOUT_S = 25.0  # seconds the requests in flight get after SIGTERM: less than Kubernetes' 30 s grace
WORKERS_ENV = "TRANSFORMER_MT_SERVE_ARGS"  # the serve command's arguments (JSON), read by each of --workers' processes
FACTORY = "transformer_mt.commands.serve:create"  # how uvicorn's workers build the app (an import string)
# uvicorn kills and restarts a worker that does not answer its health check within this (its default, 5 s, is less
# than importing torch and loading the models takes on a busy machine: the workers were restarted for ever)
WORKER_HEALTHCHECK_S = 120


def app_of(args: argparse.Namespace):
    """The app the serve command's `args` describe, its models loaded: what `serve` runs, and each worker builds."""
    from ..serving.app import create_app

    models = served_models(args)
    folder = model_folder(args, models)
    if folder is not None:
        models += [model for group in folder.groups.values() for model in group]
    app = create_app(models, limits_of(args), file_store(args), args.redis, suggestions_of(args), folder)
    app.add_middleware(Forwarded, trusted=args.forwarded_allow_ips)  # outermost: it reads the proxy's headers
    warm_up()
    if args.watch_seconds:  # each process polls its models: a promotion reaches every one
        app.state.watcher = watch(app, args.models, lambda directory: load_served(directory, args), args.watch_seconds)
    return app


def create():
    """uvicorn's factory for `--workers N` (FACTORY): uvicorn starts each worker from an import string, so `serve`
    hands its arguments over in the environment (WORKERS_ENV, JSON) and each worker builds the same app from them,
    loading the models itself."""
    return app_of(argparse.Namespace(**json.loads(os.environ[WORKERS_ENV])))


def serve(args: argparse.Namespace) -> None:
    """Load the models, then answer on --host:--port until stopped. With --workers N, uvicorn starts N processes
    that build the app from FACTORY, each loading the models (loaded here first: a damaged model stops the command
    before any worker starts)."""
    import uvicorn

    # uvicorn shuts down gracefully on SIGTERM, then raises the signal again for the handler it found: this one, so
    # that a stop asked for exits 0 (systemd, Kubernetes) rather than by the signal
    signal.signal(signal.SIGTERM, lambda number, frame: None)
    graceful = {"timeout_graceful_shutdown": args.shutdown_timeout_s, **uvicorn_settings(args)}
    if args.workers == 1:
        uvicorn.run(app_of(args), host=args.host, port=args.port, **graceful)
        return
    if not args.redis:
        print(
            f"warning: --workers {args.workers} without --redis: each process has its own request limits and "
            "translation cache",
            file=sys.stderr,
            flush=True,
        )
    model_folder(argparse.Namespace(**{**vars(args), "preload": None}), served_models(args))
    os.environ[WORKERS_ENV] = json.dumps(vars(args))
    uvicorn.run(
        FACTORY,
        factory=True,
        workers=args.workers,
        host=args.host,
        port=args.port,
        timeout_worker_healthcheck=WORKER_HEALTHCHECK_S,
        **graceful,
    )


__all__ = [
    "FACTORY",
    "build_parser",
    "WORKERS_ENV",
    "WORKER_HEALTHCHECK_S",
    "app_of",
    "create",
    "file_store",
    "limits_of",
    "load_checked",
    "load_served",
    "model_folder",
    "parse_args",
    "serve",
    "served_models",
]
