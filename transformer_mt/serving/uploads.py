"""Files through the server, in LibreTranslate's shape: `POST /translate_file` (a multipart `file`, `source`,
`target`, `api_key`) answers `{"translatedFileUrl": ".../download_file/<token>.<name>"}`, and `GET /download_file/...`
hands the translated file over once.

The upload is read into memory, never stored; its translation is written to `FileStore`'s folder under an
unguessable token, so that any process serving the same folder answers the download. A translation is deleted when
it is downloaded (the first download takes it: a rename, atomic on one file system) or, never downloaded, after
`expiry` seconds (every store and take sweeps the folder).
"""

import asyncio
import mimetypes
import os
import re
import secrets
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

from ..documents import FormatError
from ..documents.files import DEFAULT_CONTEXTS, FORMATS, translate_bytes
from ..quality import Translation
from ..translation import assemble, segment, text_flags
from .fields import RequestError, TranslateRequest, request_options, request_values


DEFAULT_DIRECTORY = os.path.join(tempfile.gettempdir(), "transformer-mt-files")
DEFAULT_EXPIRY_MINUTES = 30.0  # long enough for a page or a client to fetch the result, short for the disk
TOKEN = re.compile(r"[A-Za-z0-9_-]{24}")  # secrets.token_urlsafe(18): 144 random bits
SAFE_NAME = re.compile(r"[^\w.() -]+")


def safe_filename(name: str) -> str:
    """A client's file name as a download's: its last path part, without control or path characters."""
    base = SAFE_NAME.sub("_", re.split(r"[\\/]", name or "")[-1]).strip(" .")
    return base or "translation"


class FileStore:
    """Translated files waiting for their download, in `directory` (shared by the processes that serve it)."""

    def __init__(self, directory: str = DEFAULT_DIRECTORY, expiry_minutes: float = DEFAULT_EXPIRY_MINUTES):
        if expiry_minutes <= 0:
            raise ValueError(f"files_expiry_minutes must be > 0, got {expiry_minutes}")
        self.directory, self.expiry = Path(directory), expiry_minutes * 60
        self.directory.mkdir(parents=True, exist_ok=True)

    def put(self, filename: str, data: bytes) -> str:
        """Store `data` as `filename`; the name to download it by: `<token>.<filename>`."""
        self.sweep()
        name = f"{secrets.token_urlsafe(18)}.{safe_filename(filename)}"
        partial = self.directory / f".{name}.partial"
        partial.write_bytes(data)
        os.replace(partial, self.directory / name)  # a download never sees half a file
        return name

    def take(self, name: str) -> bytes | None:
        """The file stored as `name`, deleted: None if there is none (never stored, downloaded, or expired)."""
        self.sweep()
        token, _, filename = name.partition(".")
        if not TOKEN.fullmatch(token) or safe_filename(filename) != filename:
            return None
        taken = self.directory / f".{name}.taken.{secrets.token_hex(4)}"
        try:
            os.rename(self.directory / name, taken)  # two processes asked at once: one gets it
        except FileNotFoundError:
            return None
        try:
            return taken.read_bytes()
        finally:
            taken.unlink(missing_ok=True)

    def sweep(self) -> None:
        """Delete what is older than the expiry (and what a crash left half written)."""
        oldest = time.time() - self.expiry
        for path in self.directory.iterdir():
            try:
                if path.stat().st_mtime < oldest:
                    path.unlink()
            except FileNotFoundError:  # another process swept it first
                pass


def media_type(filename: str) -> str:
    return mimetypes.guess_type(filename)[0] or "application/octet-stream"


def download_headers(filename: str) -> dict:
    """A download's headers: an attachment named `filename` (RFC 6266's UTF-8 form: names need not be ASCII)."""
    return {"Content-Disposition": f"attachment; filename*=UTF-8''{quote(filename)}"}


def add_file_routes(app, service) -> None:
    """`POST /translate_file` and `GET /download_file/{name}` on `app`, answered by `service` (`app.Service`)."""
    from fastapi import Request
    from fastapi.responses import JSONResponse, Response

    @app.post("/translate_file")
    async def translate_file(request: Request):
        fields = await request_values(request)
        service.check_client(request, fields)
        if service.files is None:
            raise RequestError("Files translation are disabled on this server.", 403)  # LibreTranslate's words
        return JSONResponse(await translate_upload(service, request, fields, (await request.form()).get("file")))

    @app.get("/download_file/{name}")
    async def download_file(name: str):
        data = service.files.take(name) if service.files is not None else None
        if data is None:
            raise RequestError("Invalid request: no such file (downloaded once, expired, or never made)", 404)
        filename = name.partition(".")[2]
        return Response(data, media_type=media_type(filename), headers=download_headers(filename))


def supported_formats() -> list[str]:
    """The extensions /translate_file takes, as `/frontend/settings` lists them."""
    return sorted(FORMATS)


async def translate_upload(service, request, fields: dict, upload, deepl: bool = False) -> dict:
    """/translate_file: the uploaded `file` translated in its format by the model of `source` and `target` (a
    `source` of "auto" takes the one model translating into `target`), stored for its download."""
    if not hasattr(upload, "read"):
        raise RequestError("Invalid request: missing file parameter")
    filename = upload.filename or ""
    kind = FORMATS.get(os.path.splitext(filename)[1].lower())
    if kind is None:
        raise RequestError(
            f"Invalid request: file format not supported: {filename!r} (supported: {', '.join(supported_formats())})"
        )
    limit = service.limits.file_size_limit
    data = await upload.read(limit + 1)
    if len(data) > limit:
        raise RequestError(f"Invalid request: the file exceeds the file size limit ({limit} bytes)")
    model = service.served(*_pair(service, fields))
    request.state.pair = f"{model.source}-{model.target}"
    async with service.hold(model):  # a --models folder's model: loaded, and kept while the file is translated
        return await _upload_translated(service, request, fields, model, data, kind, filename, deepl)


async def _upload_translated(
    service, request, fields: dict, model, data: bytes, kind: str, filename: str, deepl: bool = False
) -> dict:
    """The file's texts translated by `model` (held loaded) in pieces through the batcher, stored for download."""
    options = model.options(TranslateRequest([], True, model.source, model.target, 0, request_options(fields)))
    loop, sent = asyncio.get_running_loop(), [0]

    def translate_texts(texts: list[str], format: str = "text", context: str | None = None) -> list[str]:
        sent[0] += sum(map(len, texts))
        service.keys.charge(request, sum(map(len, texts)), deepl, per_request=False)  # a --keys_db key's day quota
        if sent[0] > service.limits.file_char_limit:
            raise RequestError(
                f"Invalid request: the file's text exceeds the file text limit "
                f"({service.limits.file_char_limit} characters)"
            )
        work = _texts_translated(
            service, model, texts, options.replace(format=format, context=context or options.context)
        )
        return asyncio.run_coroutine_threadsafe(work, loop).result()

    reads = DEFAULT_CONTEXTS if getattr(model.engine.config, "source_context", False) else frozenset()
    try:
        translated, _ = await asyncio.to_thread(translate_bytes, data, kind, translate_texts, contexts=reads)
    except FormatError as error:
        raise RequestError(f"Invalid request: {error}") from None
    name = service.files.put(filename, translated)
    return {"translatedFileUrl": f"{request.base_url}download_file/{name}"}


def _pair(service, fields: dict) -> tuple[str, str]:
    names = {}
    for name in ("source", "target"):
        value = fields.get(name)
        if not isinstance(value, str) or not value.strip():
            raise RequestError(f"Invalid request: missing {name} parameter")
        names[name] = value.strip().lower()
    if names["source"] == "auto":
        sources = [model.source for model in service.models if model.target == names["target"]]
        if len(sources) != 1:
            raise RequestError(
                f"Invalid request: source auto needs one model translating into {names['target']}; give source"
            )
        names["source"] = sources[0]
    return names["source"], names["target"]


async def _texts_translated(service, model, texts: list[str], options) -> list[Translation]:
    """Each text's best translation with its flags, its sentences batched with other requests' in pieces of at
    most half the queue, so that a long document never asks for more than the queue holds."""
    segments = segment(texts, options, model.engine.config)
    piece = max(1, service.limits.queue_limit // 2)
    hypotheses = []
    for start in range(0, len(segments.sentences), piece):
        hypotheses += await service.decoded(
            model,
            options,
            segments.sentences[start : start + piece],
            segments.alone[start : start + piece] if segments.alone else None,
        )
    return [
        Translation(text[0][0] if text else "", flags)
        for text, flags in zip(assemble(segments, hypotheses), text_flags(segments, hypotheses), strict=True)
    ]


__all__ = [
    "DEFAULT_DIRECTORY",
    "DEFAULT_EXPIRY_MINUTES",
    "FileStore",
    "add_file_routes",
    "download_headers",
    "media_type",
    "safe_filename",
    "supported_formats",
    "translate_upload",
]
