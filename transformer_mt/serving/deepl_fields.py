"""What every route of DeepL's API shares: the key and the fields of a request (`deepl_fields`), DeepL's error body
(`deepl_route`: `{"message": ...}` with DeepL's status codes, where LibreTranslate's routes answer `{"error": ...}`),
DeepL's language codes mapped to the served ones and back (`served_code`, `deepl_code`), a glossary's entries as
TSV or CSV (`parse_entries`, `write_entries`), and the store the routes keep their state in (`store_of`)."""

import csv
import functools
import io
import os

from .deepl_store import DEFAULT_DB, DeepLStore, owner_of
from .fields import RequestError, request_values


KEY_PREFIX = "DeepL-Auth-Key "
# DeepL's target codes of one language written in several ways; a target listed here is answered in its variants
VARIANTS = {"en": ("EN-GB", "EN-US"), "pt": ("PT-BR", "PT-PT")}
ENTRY_FORMATS = ("tsv", "csv")


class DeepLRequest:
    """A request's fields (the query string's and the body's, `fields.request_values`) and its `owner`: the key's
    SHA-256 prefix that its glossaries, usage and documents are kept under."""

    def __init__(self, fields: dict, owner: str):
        self.fields, self.owner = fields, owner


async def deepl_fields(service, request) -> DeepLRequest:
    """The request's fields, its client counted against --req_limit and its key checked against the server's API
    keys (the `Authorization: DeepL-Auth-Key KEY` header, or DeepL's older `auth_key` field)."""
    fields = await request_values(request)
    header = request.headers.get("authorization", "")
    if header and not header.startswith(KEY_PREFIX):
        raise RequestError(f"Authorization must be 'DeepL-Auth-Key <key>', got {header.split(' ')[0]!r}", 403)
    key = header[len(KEY_PREFIX) :].strip() if header else fields.get("auth_key")
    service.check_client(request, {"api_key": key})
    return DeepLRequest(fields, owner_of(key if isinstance(key, str) else None))


def deepl_route(handler):
    """`handler`'s refusals answered in DeepL's shape, `{"message": ...}` with the RequestError's status (a 503
    with Retry-After), so that DeepL's clients read them; LibreTranslate's routes keep theirs."""
    from fastapi.responses import JSONResponse

    @functools.wraps(handler)
    async def answered(*args, **kwargs):
        try:
            return await handler(*args, **kwargs)
        except RequestError as error:
            headers = {"Retry-After": "1"} if error.status == 503 else None
            message = str(error).removeprefix("Invalid request: ")
            return JSONResponse({"message": message}, status_code=error.status, headers=headers)

    return answered


def served_code(value, name: str, codes) -> str:
    """The served language of DeepL's code `value` (any case; a variant, "EN-US", "PT-BR", as its language) for
    the parameter `name`; a 400 naming the parameter, the value and the `codes` served otherwise."""
    shown = ", ".join(code.upper() for code in codes)
    if value is None or value == "":
        raise RequestError(f"Parameter '{name}' not specified (a language code: {shown})")
    code = value.strip().lower().split("-")[0] if isinstance(value, str) else None
    if code not in codes:
        raise RequestError(f"Value for '{name}' not supported: {value!r}; this server translates {shown}")
    return code


def deepl_code(code: str) -> str:
    """A served language as DeepL writes it in answers: upper case."""
    return code.upper()


def parse_entries(text, format: str, name: str = "entries") -> list[tuple[str, str]]:
    """A glossary's entries from DeepL's `tsv` (term TAB translation a line) or `csv` (term,translation[,...]) text;
    a 400 naming the line otherwise: an entry without a translation, an empty term, a term given twice."""
    if format not in ENTRY_FORMATS:
        raise RequestError(f"Value for 'entries_format' not supported: {format!r} (tsv or csv)")
    if not isinstance(text, str):
        raise RequestError(f"Parameter '{name}' must be the entries as {format.upper()} text, got {text!r}")
    rows = csv.reader(io.StringIO(text)) if format == "csv" else (line.split("\t") for line in text.splitlines())
    entries, seen = [], set()
    for number, row in enumerate(rows, 1):
        if not row or not "".join(row).strip():
            continue
        if len(row) < 2 or not row[0].strip() or not row[1].strip():
            raise RequestError(f"Invalid glossary entries: line {number} ({row!r}) is not a term and its translation")
        term, translation = row[0].strip(), row[1].strip()
        if term in seen:
            raise RequestError(f"Invalid glossary entries: line {number} gives the term {term!r} a second time")
        seen.add(term)
        entries.append((term, translation))
    if not entries:
        raise RequestError(f"Parameter '{name}' holds no entry")
    return entries


def write_entries(entries: list[tuple[str, str]], format: str) -> str:
    """Entries as DeepL answers them: TSV lines, or CSV rows."""
    if format == "csv":
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerows(entries)
        return out.getvalue()
    return "".join(f"{term}\t{translation}\n" for term, translation in entries)


def store_of(app, service) -> DeepLStore:
    """The app's DeepL store, opened on its first use at `app.state.deepl_db` when set, else beside the suggestions'
    file (with --suggestions), else `DEFAULT_DB` in the working directory."""
    store = getattr(app.state, "deepl_store", None)
    if store is None:
        path = getattr(app.state, "deepl_db", None)
        if path is None and service.suggestions is not None:
            path = os.path.join(os.path.dirname(os.path.abspath(service.suggestions.store.path)), DEFAULT_DB)
        store = app.state.deepl_store = DeepLStore(path or DEFAULT_DB)
    return store


__all__ = [
    "DeepLRequest",
    "ENTRY_FORMATS",
    "VARIANTS",
    "deepl_code",
    "deepl_fields",
    "deepl_route",
    "parse_entries",
    "served_code",
    "store_of",
    "write_entries",
]
