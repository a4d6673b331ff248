"""DeepL's API beside LibreTranslate's, in the shapes DeepL's own clients and Weblate's DeepL backend send and read:
`POST /v2/translate`, `GET`/`POST /v2/languages`, `GET /v3/languages`, `GET`/`POST /v2/usage`, the glossaries of v2
and v3 (`deepl_glossaries`), and documents (`POST /v2/document`, its status and its result) over the server's file
machinery (`uploads`).

A request's key is DeepL's `Authorization: DeepL-Auth-Key KEY` header (or its `auth_key` field), checked against the
server's API keys; refusals are DeepL's `{"message": ...}` with its status codes: 400 a bad parameter (named), 403 a
bad key, 404 an unknown glossary or document, 413 a request over the server's or its key's limits, 429 a client over
--req_limit or its key's requests per minute, 456 a key's day quota spent (`keys`), 503 a queue still full after
`DEEPL_QUEUE_WAIT_S`. Translations go through the same `Service` as LibreTranslate's: the batcher, the cache, the
accepted suggestions.
"""

import asyncio
import json
import os

from ..options import OptionError, TranslationOptions
from .deepl_fields import VARIANTS, deepl_code, deepl_fields, deepl_route, served_code, store_of
from .deepl_glossaries import add_glossary_routes, glossary_entries
from .deepl_text import (
    check_whole,
    flag,
    keep_format,
    put_back,
    refuse_unimplemented,
    split_of,
    tags_of,
    take_out,
    texts_of,
)
from .fields import RequestError, TranslateRequest
from .languages import language_name
from .served import PivotModel
from .uploads import translate_upload


# Weblate's DeepL backend waits 5 s for an answer: a request over a full queue waits less than that for room
DEEPL_QUEUE_WAIT_S = 4.0
# /v2/usage's character_limit where the server sets none (DeepL's clients need a number)
NO_CHARACTER_LIMIT = 10**12
VARIANT_NAMES = {
    "EN-GB": "English (British)",
    "EN-US": "English (American)",
    "PT-BR": "Portuguese (Brazilian)",
    "PT-PT": "Portuguese (European)",
}
RESOURCES = ("translate_text", "glossary", "write")


def options_of(fields: dict, texts_format: str) -> TranslationOptions:
    """The translation options of `/v2/translate`'s `formality` and `context`."""
    given = {"format": texts_format}
    formality = fields.get("formality")
    if formality not in (None, ""):
        given["formality"] = str(formality).lower()
    if fields.get("context") not in (None, ""):
        given["context"] = fields["context"]
    try:
        return TranslationOptions(**given)
    except OptionError as error:
        raise RequestError(f"Value for '{error.option}' not supported: {error.detail}") from None


def sources_targets(service) -> tuple[list[str], list[str]]:
    return sorted({s for s, _ in service.routes}), sorted({t for _, t in service.routes})


async def translate_text(service, app, request) -> dict:
    """`/v2/translate`: each text translated, `detected_source_language` (the source given, or detected) and, when
    asked, `billed_characters` (the text's characters); the characters counted for the key (`/v2/usage`)."""
    deepl = await deepl_fields(service, request)
    fields = deepl.fields
    refuse_unimplemented(fields)
    texts = texts_of(fields, service.limits)
    service.keys.charge(request, sum(map(len, texts)), deepl=True)  # a key of --keys_db: its limits (413, 456)
    tag_handling, ignored = tags_of(fields)
    split = split_of(fields, tag_handling)
    preserve = flag(fields, "preserve_formatting", False)
    billed = flag(fields, "show_billed_characters", False)
    sources, targets = sources_targets(service)
    target = served_code(fields.get("target_lang"), "target_lang", targets)
    source = fields.get("source_lang")
    source = served_code(source, "source_lang", sources) if source not in (None, "") else "auto"
    taken = [take_out(text, ignored) for text in texts]
    shown = [text for text, _ in taken]
    if split == "nonewlines":
        shown = [text.replace("\r\n", " ").replace("\n", " ") for text in shown]
    options = options_of(fields, "html" if tag_handling else "text").replace(split_sentences=split != "0")
    asked = TranslateRequest(shown, True, source, target, 0, options)
    _, model = service.choose_model(asked)
    request.state.pair = f"{model.source}-{model.target}"  # the request's latency series (serving.counters)
    if fields.get("glossary_id") not in (None, ""):
        if source == "auto":
            raise RequestError("Parameter 'source_lang' is required with 'glossary_id'")
        entries = glossary_entries(store_of(app, service), deepl.owner, fields["glossary_id"], (source, target))
        asked.options = options.replace(glossary=entries)
    async with service.hold(model):
        if split == "0":
            check_whole(shown, model.engine.tokenizer)
        answer = await service.translated(request, asked, model, wait_s=DEEPL_QUEUE_WAIT_S)
    translations = []
    for text, (_, pairs), translated in zip(texts, taken, answer["translatedText"], strict=True):
        translated = put_back(translated, pairs)
        entry = {
            "detected_source_language": deepl_code(model.source),
            "text": keep_format(text, translated) if preserve else translated,
        }
        if billed:
            entry["billed_characters"] = len(text)
        translations.append(entry)
    await asyncio.to_thread(store_of(app, service).count, deepl.owner, sum(map(len, texts)))  # an fsync: off the loop
    return {"translations": translations}


def writes_registers(service, direction) -> bool:
    """Whether the model that writes `direction`'s target was trained with the register tags (a --models folder's
    model not loaded yet: as its config.json, read from its directory, says)."""
    served = direction.second if isinstance(direction, PivotModel) else direction
    if served.engine is not None:
        return bool(getattr(served.engine.config, "formality_tags", False))
    directory = service.folder.directory_of.get(id(served)) if service.folder is not None else None
    try:
        with open(os.path.join(directory, "config.json"), encoding="utf-8") as f:
            return bool(json.load(f).get("formality_tags", False))
    except (OSError, TypeError, ValueError, AttributeError):
        return False


def supports_formality(service, target: str) -> bool:
    """Whether every model writing `target` was trained with the register tags, so that formality more and less
    are translated whatever the source."""
    directions = [direction for (_, t), direction in service.routes.items() if t == target]
    return bool(directions) and all(writes_registers(service, direction) for direction in directions)


def languages(service, kind: str) -> list[dict]:
    """`/v2/languages`: the sources, or the targets (DeepL's variants of English and Portuguese) with
    `supports_formality`."""
    if kind not in ("source", "target"):
        raise RequestError(f"Value for 'type' not supported: {kind!r} (source or target)")
    sources, targets = sources_targets(service)
    if kind == "source":
        return [{"language": deepl_code(code), "name": language_name(code)} for code in sources]
    return [
        {"language": shown, "name": VARIANT_NAMES.get(shown, language_name(code)), "supports_formality": formal}
        for code in targets
        for formal in [supports_formality(service, code)]
        for shown in VARIANTS.get(code, (deepl_code(code),))
    ]


def v3_languages(service, resource) -> list[dict]:
    """`/v3/languages?resource=...`: each language with `usable_as_source`, `usable_as_target` and its `features`
    ("formality" for a target every model of which writes both registers); `write` (DeepL Write) has none here."""
    if resource not in RESOURCES:
        raise RequestError(f"Value for 'resource' not supported: {resource!r} ({', '.join(RESOURCES)})")
    if resource == "write":
        return []
    sources, targets = sources_targets(service)
    found = []
    for code in dict.fromkeys(sources + targets):
        formal = resource == "translate_text" and code in targets and supports_formality(service, code)
        entry = {"lang": deepl_code(code), "name": language_name(code), "usable_as_source": code in sources}
        found.append(entry | {"usable_as_target": code in targets, "features": ["formality"] if formal else []})
        if code in targets and resource == "translate_text":
            found += [
                {"lang": shown, "name": VARIANT_NAMES[shown], "usable_as_source": False, "usable_as_target": True}
                | {"features": ["formality"] if formal else []}
                for shown in VARIANTS.get(code, ())
            ]
    return found


async def upload_document(service, app, request) -> dict:
    """`POST /v2/document`: the file translated at once (`uploads.translate_upload`), kept for the key until its
    download; its `document_id` and `document_key`."""
    deepl = await deepl_fields(service, request)
    fields = deepl.fields
    if service.files is None:
        raise RequestError("Document translation is disabled on this server (--disable_files_translation)", 403)
    for name in ("output_format", "glossary_ids", "style_id", "translation_memory_id"):
        if fields.get(name) not in (None, ""):
            raise RequestError(f"Parameter '{name}' is not supported by this server for documents")
    sources, targets = sources_targets(service)
    target = served_code(fields.get("target_lang"), "target_lang", targets)
    source = fields.get("source_lang")
    source = served_code(source, "source_lang", sources) if source not in (None, "") else "auto"
    given = {"source": source, "target": target}
    if fields.get("formality") not in (None, ""):
        given["formality"] = str(fields["formality"]).lower()
    if fields.get("glossary_id") not in (None, ""):
        if source == "auto":
            raise RequestError("Parameter 'source_lang' is required with 'glossary_id'")
        given["glossary"] = dict(
            glossary_entries(store_of(app, service), deepl.owner, fields["glossary_id"], (source, target))
        )
    upload = (await request.form()).get("file")
    if fields.get("filename") not in (None, "") and hasattr(upload, "filename"):
        upload.filename = fields["filename"]  # DeepL's alternative to the file part's own name
    answer = await translate_upload(service, request, given, upload, deepl=True)
    name = answer["translatedFileUrl"].rsplit("/download_file/", 1)[1]
    document, key = store_of(app, service).add_document(deepl.owner, name)
    return {"document_id": document, "document_key": key}


async def found_document(service, app, request, document_id: str) -> tuple:
    deepl = await deepl_fields(service, request)
    store = store_of(app, service)
    found = store.document(deepl.owner, document_id, deepl.fields.get("document_key") or "")
    if found is None:
        raise RequestError(f"Document not found: {document_id!r} (or its document_key does not match)", 404)
    return store, found


def add_deepl_routes(app, service) -> None:
    """DeepL's routes on `app`, answered by `service` (`app.Service`)."""
    from fastapi import Request
    from fastapi.responses import JSONResponse, Response

    @app.post("/v2/translate")
    @deepl_route
    async def translate(request: Request):
        return JSONResponse(await translate_text(service, app, request))

    @app.get("/v2/languages")
    @app.post("/v2/languages")  # DeepL's client sends a form body; each method its own operation id
    @deepl_route
    async def v2_languages(request: Request):
        deepl = await deepl_fields(service, request)
        return JSONResponse(languages(service, deepl.fields.get("type") or "source"))

    @app.get("/v3/languages")
    @deepl_route
    async def v3_languages_route(request: Request):
        deepl = await deepl_fields(service, request)
        return JSONResponse(v3_languages(service, deepl.fields.get("resource")))

    @app.get("/v2/usage")
    @app.post("/v2/usage")
    @deepl_route
    async def usage(request: Request):
        deepl = await deepl_fields(service, request)
        keyed = service.keys.usage(request)  # a key of --keys_db: today's characters (UTC) and its day quota
        used, limit = keyed or (store_of(app, service).used(deepl.owner), 0)
        return JSONResponse({"character_count": used, "character_limit": limit or NO_CHARACTER_LIMIT})

    @app.post("/v2/document")
    @deepl_route
    async def document(request: Request):
        return JSONResponse(await upload_document(service, app, request))

    @app.post("/v2/document/{document_id}")
    @deepl_route
    async def document_status(request: Request, document_id: str):
        await found_document(service, app, request, document_id)
        return JSONResponse({"document_id": document_id, "status": "done", "seconds_remaining": 0})

    @app.post("/v2/document/{document_id}/result")
    @deepl_route
    async def document_result(request: Request, document_id: str):
        store, found = await found_document(service, app, request, document_id)
        data = service.files.take(found) if service.files is not None else None
        store.forget_document(document_id)
        if data is None:
            raise RequestError(f"Document not found: {document_id!r} (downloaded once, or expired)", 404)
        return Response(data, media_type="application/octet-stream")

    add_glossary_routes(app, service)


__all__ = ["DEEPL_QUEUE_WAIT_S", "add_deepl_routes", "languages", "supports_formality", "v3_languages"]
