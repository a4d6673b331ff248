"""The server's HTTP API: LibreTranslate's, so that the applications that speak it work unchanged.

Routes: `POST /translate`, `POST /detect`, `GET /languages`, `GET /frontend/settings`, `POST /translate_file` and
`GET /download_file/...` (`serving.uploads`), `POST /suggest` (`serving.suggestions`) in LibreTranslate's shapes,
`GET /health` (`{"status": "ok"}`, as LibreTranslate answers), `GET /ready` (what is loaded and what can be: a
`--models` folder's pairs load on demand, `serving.folder`), `GET /metrics` (Prometheus' counters:
`serving.counters`), `GET /spec` (the OpenAPI description), and `GET /`, a page that calls the same API. Fields are
read from the query string and from a JSON, urlencoded or multipart body alike (`request_values`), because each
client sends them its own way; unknown fields are ignored. Errors are `{"error": "..."}`: 400 for a bad or missing
field, an unsupported language or pair, or a request over a limit; 403 for a bad API key; 404 and 405 for an
unknown route or method; 429 for a client over its requests per minute; 503 (with Retry-After) when the queue
stays full for --queue_wait_s; 500 otherwise. Every answer carries CORS headers, and preflights are answered.
"""

import asyncio
import contextlib
import hmac
import logging
import time
from importlib import resources

from ..options import TranslationOptions
from ..text.markup import html_text
from ..translation import assemble, segment, text_flags
from .batcher import Batcher, Overloaded
from .counters import Counters
from .deepl import add_deepl_routes
from .fields import RequestError, TranslateRequest, add_error_handlers, request_values, translate_request
from .folder import ModelFolder
from .keys import KeyGate
from .languages import CONFIDENT, detect, language_name
from .limits import Limits
from .reload import forget_weights
from .served import Direction, PivotModel, ServedModel, pivot_models
from .shared import SharedState
from .suggestions import Suggestions, client_of, suggest_fields
from .uploads import FileStore, add_file_routes, supported_formats


logger = logging.getLogger(__name__)


class Service:
    """What the routes do, for `models` (one per language direction) under `limits`."""

    def __init__(
        self,
        models: list[ServedModel],
        limits: Limits,
        files: FileStore | None = None,
        redis: str | None = None,
        suggestions: Suggestions | None = None,
        folder: ModelFolder | None = None,
    ):
        self.models, self.limits, self.files, self.folder = models, limits, files, folder
        self.suggestions = suggestions  # None: /suggest is off
        self.pairs = {(model.source, model.target): model for model in models}
        if len(self.pairs) < len(models):
            raise ValueError(
                f"two models serve the same language pair: {', '.join(f'{m.source}->{m.target}' for m in models)}"
            )
        self.routes = self.pairs | pivot_models(models)  # and the pairs two models translate through English
        concurrency = max(model.engine.workers if model.engine else folder.workers for model in models)
        self.batcher = Batcher(
            lambda key, sentences: self.routes[key[0]].translate(sentences, *key[1:]),
            max_batch=limits.batch_size(concurrency),
            max_wait=limits.max_wait_ms / 1000,
            max_queued=limits.queue_limit,
            concurrency=concurrency,
            queue_wait=limits.queue_wait_s,
        )
        self.counters = Counters(self.batcher, models)
        self.shared = SharedState(limits.req_limit, redis, self.counters.cache)  # limits, cache: --redis shares them
        self.keys = KeyGate(limits.api_keys, limits.keys_db, self.shared.store)  # --api_keys, --keys_db
        if folder is not None:
            folder.changed = self.model_changed

    def model_changed(self, models: list[ServedModel], loaded: bool) -> None:
        """A --models folder's model loaded or unloaded: its /metrics series, and the weights suggestions knew."""
        for model in models:
            self.counters.model_served(model, loaded)
        forget_weights(models, self)

    def check_client(self, request, fields: dict) -> None:
        """Every request counts towards its client's limit per minute, a refused one too; then its key (`KeyGate`)."""
        if self.shared.limit is not None:
            self.shared.limit.check(request.client.host if request.client else "?")
        self.keys.check(request, fields)

    def check_metrics_token(self, request) -> None:
        """With --metrics_token, /metrics answers only `Authorization: Bearer TOKEN` (401 otherwise)."""
        token = self.limits.metrics_token
        given = request.headers.get("authorization", "")
        if token is not None and not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
            raise RequestError("/metrics needs the bearer token of --metrics_token (Authorization: Bearer TOKEN)", 401)

    async def translate(self, request, fields: dict) -> dict:
        asked = translate_request(fields, self.limits)
        detected, model = self.choose_model(asked)
        request.state.pair = f"{model.source}-{model.target}"  # the request's latency series
        async with self.hold(model):  # a model of a --models folder: loaded, and never unloaded meanwhile
            answer = await self.translated(request, asked, model)
        if asked.source == "auto":
            answer["detectedLanguage"] = detected if asked.is_list else detected[0]
        return answer

    def choose_model(self, asked: TranslateRequest) -> tuple[list[dict] | None, Direction]:
        """The model for the request's pair; for source "auto", each text's detected language (a text detected
        with less than CONFIDENT is taken to be in the source language of the model for the target)."""
        if asked.source != "auto":
            return None, self.served(asked.source, asked.target)
        if not asked.texts:
            raise RequestError("Invalid request: q is an empty list, so there is no language to detect")
        targets = [model for model in self.models if model.target == asked.target]
        if not targets:
            raise RequestError(f"{asked.target} is not supported")  # LibreTranslate's words
        detected = []
        for text in asked.texts:
            best = detect(html_text(text) if asked.format == "html" else text, 1)[0]
            if best["confidence"] < CONFIDENT:
                best = {"confidence": best["confidence"], "language": targets[0].source}
            detected.append(best)
        sources = {entry["language"] for entry in detected}
        for source in sources:
            self.served(source, asked.target)  # a confident other language is a 400 naming what can be translated
        if len(sources) > 1:
            raise RequestError(f"q mixes languages ({', '.join(sorted(sources))}); send one language per request")
        return detected, self.served(sources.pop(), asked.target)

    def served(self, source: str, target: str) -> Direction:
        """The direction of a language pair (a model's, or two models' through English); a language no model has is
        "xx is not supported" (LibreTranslate's words, which its own tests read), a pair of known languages that no
        model translates names those that are."""
        if (source, target) in self.routes:
            return self.routes[(source, target)]
        for language, known in ((source, {s for s, _ in self.pairs}), (target, {t for _, t in self.pairs})):
            if language not in known:
                raise RequestError(f"{language} is not supported")
        supported = ", ".join(f"{s}->{t}" for s, t in self.routes)
        raise RequestError(f"{source}->{target} is not a supported language pair; this server translates {supported}")

    async def decoded(
        self,
        model: Direction,
        options: TranslationOptions,
        sentences: list[str],
        alone: list[bool] | None = None,
        wait_s: float | None = None,
    ) -> list:
        """The hypotheses of `sentences` through the batcher, with other requests' of the same model and options;
        inline elements' own texts (`alone`) batched apart, as they decode without guards or alignment; over a
        full queue, waiting for room up to `wait_s` (default --queue_wait_s)."""
        pair = (model.source, model.target)
        if not alone or not any(alone):
            return await self.batcher.translate((pair, options), sentences, wait_s)
        found = [None] * len(sentences)
        for own in (False, True):
            group = [i for i, flag in enumerate(alone) if flag == own]
            for i, hypotheses in zip(
                group, await self.batcher.translate((pair, options, own), [sentences[i] for i in group], wait_s)
            ):
                found[i] = hypotheses
        return found

    async def translated(
        self, request, asked: TranslateRequest, model: Direction, recall: bool = True, wait_s: float | None = None
    ) -> dict:
        """translatedText (and alternatives): the texts taken apart into sentences (`translation.segment`: HTML
        runs of text first), the sentences batched with other requests' (`Batcher`), each text put back together;
        `confidence`, per text, its calibrated confidence (its weakest sentence's) when the model has a calibration;
        `flags`, per text, when any text has one (`quality.Flags.as_json`): the placeholders, URLs, numbers, ... put
        back where the model lost them and those still lost, the guards still firing after a re-decode, whether it
        was decoded again, whether a sentence was left untranslated below the request's `min_confidence`; with
        `recall`, a text that matches an accepted suggestion is answered by it unless the request's glossary or
        `min_confidence` passes it over (`suggestions.Recall`), the others by the model."""
        if recall and self.suggestions is not None and (found := self.suggestions.recall(model, asked)) is not None:
            return await found.answer(lambda rest: self.translated(request, rest, model, False, wait_s))
        weights = model.weights  # read before the engine is: a swap (serving.reload) changes the engine, then this
        options = model.options(asked)
        if (cached := self.shared.cache.get(model, options, asked)) is not None:  # the same text, model and options
            return cached
        segments = segment(asked.texts, options, model.engine.config)
        hypotheses = await until_disconnected(
            request, self.decoded(model, options, segments.sentences, segments.alone, wait_s)
        )
        texts = [
            text_hypotheses or [("", None)] * options.num_return_sequences
            for text_hypotheses in assemble(segments, hypotheses)
        ]
        ranks = [
            [text_hypotheses[min(k, len(text_hypotheses) - 1)][0] for text_hypotheses in texts]
            for k in range(options.num_return_sequences)
        ]
        answer = {"translatedText": ranks[0] if asked.is_list else ranks[0][0]}
        if asked.alternatives:
            alternatives = [[rank[i] for rank in ranks[1:]] for i in range(len(asked.texts))]
            answer["alternatives"] = alternatives if asked.is_list else alternatives[0]
        flags = text_flags(segments, hypotheses)
        if options.confidence:
            confidences = [text.confidence for text in flags]
            answer["confidence"] = confidences if asked.is_list else confidences[0]
        if any(text.notable for text in flags):  # a field LibreTranslate's clients ignore
            shown = [text.as_json() for text in flags]
            answer["flags"] = shown if asked.is_list else shown[0]
        self.counters.count_flags(flags)
        if model.weights == weights:  # no swap while it was made: cached under the weights that made it
            self.shared.cache.put(model, options, asked, answer)
        return answer

    async def suggest(self, request, fields: dict) -> dict:
        """LibreTranslate's /suggest, judged and stored (`serving.suggestions`); 403 in its words when off."""
        if self.suggestions is None:
            raise RequestError("Suggestions are disabled on this server.", 403)
        self.shared.store.require_up()  # with --redis, a 503 while Redis is down (serving.shared)
        fields = suggest_fields(fields, self.limits.char_limit)
        model = self.served(fields["source"], fields["target"])
        request.state.pair = f"{model.source}-{model.target}"
        async with self.hold(model):
            return await asyncio.to_thread(self.suggestions.suggest, model, fields, client_of(request, fields))

    def hold(self, model: Direction):
        """An async context in which `model` is loaded and stays loaded (`folder.ModelFolder.hold`): a pivot's two
        hops both."""
        if isinstance(model, PivotModel):
            return self.held_hops(model)
        return self.folder.hold(model) if self.folder is not None else contextlib.nullcontext(model)

    @contextlib.asynccontextmanager
    async def held_hops(self, model: PivotModel):
        async with self.hold(model.first), self.hold(model.second):
            yield model

    def ready(self) -> dict:
        """What is loaded and what can be (a --models folder's pairs load on their first request)."""
        pairs = {
            f"{model.source}-{model.target}": self.folder is None or self.folder.is_loaded(model)
            for model in self.models
        }
        loaded = [pair for pair, is_loaded in pairs.items() if is_loaded]
        answer = {"status": "ready", "loaded": loaded, "available": list(pairs)}
        return answer | (self.folder.status() if self.folder is not None else {})

    def detect(self, fields: dict) -> list[dict]:
        text = fields.get("q")
        if not isinstance(text, str) or not text.strip():
            raise RequestError(
                "Invalid request: missing q parameter"
                if text is None
                else "Invalid request: q must be a non-empty string"
            )
        if len(text) > self.limits.char_limit:
            raise RequestError(f"Invalid request: request ({len(text)}) exceeds text limit ({self.limits.char_limit})")
        return detect(text)

    def languages(self) -> list[dict]:
        """Every language the server has, as a source or a target, with the targets it translates into directly or
        through English (none for a target only), as LibreTranslate lists its installed languages: clients take a
        pair as supported only when both its codes are listed (Weblate)."""
        codes = dict.fromkeys(code for model in self.models for code in (model.source, model.target))
        return [
            {
                "code": code,
                "name": language_name(code),
                "targets": [target for source, target in self.routes if source == code],
            }
            for code in codes
        ]

    def frontend_settings(self) -> dict:
        first, keyed = self.models[0], self.keys.required
        return {
            "apiKeys": keyed,
            "keyRequired": keyed,
            "charLimit": self.limits.char_limit,
            "frontendTimeout": 500,
            "suggestions": self.suggestions is not None,
            "filesTranslation": self.files is not None,
            "supportedFilesFormat": supported_formats() if self.files is not None else [],
            "language": {
                "source": {"code": first.source, "name": language_name(first.source)},
                "target": {"code": first.target, "name": language_name(first.target)},
            },
        }

    def health(self) -> dict:
        """LibreTranslate's answer, exactly: the details are on `/metrics`."""
        return {"status": "ok"}


def create_app(
    models: list[ServedModel],
    limits: Limits | None = None,
    files: FileStore | None = None,
    redis: str | None = None,
    suggestions: Suggestions | None = None,
    folder: ModelFolder | None = None,
):
    """The FastAPI application serving `models` (one per language direction) under `limits` (batching included):
    LibreTranslate's routes over a `Service`, its errors as `{"error": ...}`, CORS on every answer; `files` keeps
    translated files for their download (None: /translate_file is off); `redis`: the URL of the Redis that several
    processes share limits and cache through (`serving.shared`; None: this process's own); `suggestions`: /suggest
    and the translation memory (`serving.suggestions`; None: off); `folder`: the models
    among `models` loaded on demand (`serving.folder`; None: all loaded)."""
    from fastapi import FastAPI, Request
    from fastapi.middleware.cors import CORSMiddleware
    from fastapi.responses import HTMLResponse, JSONResponse, Response

    service = Service(models, limits or Limits(), files, redis, suggestions, folder)

    async def lifespan(app):
        service.batcher.start()
        yield
        await service.batcher.stop()

    app = FastAPI(title="transformer-mt", lifespan=lifespan)
    app.add_middleware(CORSMiddleware, allow_origins=["*"], allow_methods=["*"], allow_headers=["*"])
    app.state.service, app.state.models = service, models
    app.middleware("http")(counted(service))

    add_error_handlers(app)

    # answers are JSONResponse at once: plain dicts and lists of strings need none of FastAPI's encoding pass
    @app.post("/translate")
    async def translate(request: Request):
        fields = await request_values(request)
        service.check_client(request, fields)
        return JSONResponse(await service.translate(request, fields))

    @app.post("/detect")
    async def detect_language(request: Request):
        fields = await request_values(request)
        service.check_client(request, fields)
        return JSONResponse(service.detect(fields))

    @app.post("/suggest")
    async def suggest(request: Request):
        fields = await request_values(request)
        service.check_client(request, fields)
        return JSONResponse(await service.suggest(request, fields))

    add_file_routes(app, service)
    add_deepl_routes(app, service)
    app.get("/languages")(service.languages)
    app.get("/frontend/settings")(service.frontend_settings)
    app.get("/health")(service.health)
    app.get("/ready")(service.ready)

    @app.get("/spec")
    async def spec(request: Request):
        """The API's description (OpenAPI), where LibreTranslate serves its own; behind --url_prefix, its server."""
        return JSONResponse(app.openapi() | {"servers": [{"url": request.scope.get("root_path") or "/"}]})

    @app.get("/metrics")
    async def metrics(request: Request):
        service.check_metrics_token(request)
        return Response(service.counters.exposition(), media_type=service.counters.content_type)

    @app.get("/", response_class=HTMLResponse)
    async def page():
        return resources.files(__package__).joinpath("page.html").read_text(encoding="utf-8")

    return app


def counted(service: Service):
    """The middleware that counts every answer by route and status and times it by route and pair (`counters`; the
    routes that name a pair set `request.state.pair`)."""

    async def count(request, call_next):
        start = time.perf_counter()
        response = await call_next(request)
        route = getattr(request.scope.get("route"), "path", "unmatched")
        pair = getattr(request.state, "pair", "-")
        service.counters.answered(route, response.status_code, pair, time.perf_counter() - start)
        return response

    return count


async def until_disconnected(request, work):
    """The result of `work`, or a cancelled `work` (its queue slot freed) when the client goes away first."""
    task = asyncio.ensure_future(work)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=0.25)
            if done:
                return task.result()
            if await request.is_disconnected():
                task.cancel()
                raise RequestError("the client went away", 499)
    except Overloaded as error:
        raise RequestError(str(error), 503) from None
    except ValueError as error:  # a request larger than the whole queue
        raise RequestError(f"Invalid request: {error}") from None
    finally:
        if not task.done():
            task.cancel()


__all__ = ["Limits", "ServedModel", "Service", "create_app", "until_disconnected"]
