"""A request's fields, wherever its client put them, checked against the server's limits.

LibreTranslate's clients send the same fields in four ways: a JSON body (Mastodon, Weblate), an urlencoded form
(Discourse, libretranslatepy), a multipart form (Nextcloud), the query string of a POST (Translate You, Nextcloud's
/detect). `request_values` merges the query string and the body (the body wins); `translate_request` checks what
/translate needs and names the field, the value and what is allowed when it is wrong; the fields that set
translation options (`format`, `fold_case`) are read as `transformer_mt.options` says; `add_error_handlers` answers
every refused request, unknown route and failure as `{"error": ...}`.
"""

import dataclasses
import json
import logging

from ..options import OptionError, TranslationOptions
from ..options import request_fields as option_fields


logger = logging.getLogger(__name__)


class RequestError(Exception):
    """A request the server answers with `{"error": message}` and `status`."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


async def request_values(request) -> dict:
    """The query string's fields, then the body's: a JSON object, an urlencoded or a multipart form (a field sent
    several times is a list), or nothing."""
    fields = dict(request.query_params)
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
        try:
            form = await request.form()
        except Exception as error:  # the multipart parser's own errors
            raise RequestError(f"Invalid request: malformed form body ({error})") from None
        for name in form:
            values = [value for value in form.getlist(name) if isinstance(value, str)]
            if values:
                fields[name] = values if len(values) > 1 else values[0]
        return fields
    body = await request.body()
    if not body.strip():
        return fields
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise RequestError(f"Invalid request: the body is not valid JSON ({error})") from None
    if not isinstance(data, dict):
        raise RequestError(f"Invalid request: the JSON body must be an object of fields, got {type(data).__name__}")
    fields.update(data)
    return fields


@dataclasses.dataclass
class TranslateRequest:
    texts: list[str]
    is_list: bool
    source: str
    target: str
    alternatives: int
    options: TranslationOptions  # what the request's own fields set (format; transformer_mt.options)

    @property
    def format(self) -> str:
        return self.options.format


def translate_request(fields: dict, limits) -> TranslateRequest:
    """/translate's fields, checked: q (a string or a list of strings), source (a code or "auto"), target, format,
    alternatives; a RequestError naming the field otherwise."""
    q = fields.get("q")
    if q is None:
        raise RequestError("Invalid request: missing q parameter")
    is_list = isinstance(q, list)
    texts = q if is_list else [q]
    if not all(isinstance(text, str) for text in texts):
        kinds = sorted({type(text).__name__ for text in texts if not isinstance(text, str)})
        raise RequestError(f"Invalid request: q must be a string or a list of strings, got {', '.join(kinds)}")
    if is_list and len(texts) > limits.batch_limit:
        raise RequestError(f"Invalid request: request ({len(texts)} texts) exceeds batch limit ({limits.batch_limit})")
    characters = sum(map(len, texts))
    if characters > limits.char_limit:
        raise RequestError(f"Invalid request: request ({characters}) exceeds text limit ({limits.char_limit})")
    names = {}
    for name in ("source", "target"):
        value = fields.get(name)
        if not isinstance(value, str) or not value.strip():
            raise RequestError(
                f"Invalid request: missing {name} parameter"
                if value is None
                else f"Invalid request: {name} must be a language code, got {value!r}"
            )
        names[name] = value.strip().lower()
    alternatives = fields.get("alternatives") or 0
    try:
        alternatives = int(alternatives)
    except (TypeError, ValueError):
        raise RequestError(f"Invalid request: alternatives must be a whole number, got {alternatives!r}") from None
    if not 0 <= alternatives <= limits.alternatives_limit:
        raise RequestError(
            f"Invalid request: alternatives must be 0 to {limits.alternatives_limit}, got {alternatives}"
        )
    return TranslateRequest(texts, is_list, names["source"], names["target"], alternatives, request_options(fields))


def _scalar(value):
    """A form's or query string's "true"/"false" (any case) as a bool, a number as a float (JSON sends them as
    they are); any other value as it is."""
    if not isinstance(value, str):
        return value
    try:
        return float(value)
    except ValueError:
        return {"true": True, "false": False}.get(value.lower(), value)


def request_options(fields: dict) -> TranslationOptions:
    """The options a request's fields set, by the request field each option names in its metadata
    (`options.request_fields`); a value that cannot work is a RequestError naming the field."""
    given = {
        option: _scalar(fields[name]) for name, option in option_fields().items() if fields.get(name) not in (None, "")
    }
    if fields.get("glossary") not in (None, "", {}, []):  # an extension: {"source term": "target term", ...}
        glossary = fields["glossary"]
        if isinstance(glossary, str):  # a form's or query string's field: JSON text
            try:
                glossary = json.loads(glossary)
            except ValueError:
                raise RequestError(
                    "Invalid request: glossary must be a JSON object of source term -> target term "
                    "(null: kept as it is)"
                ) from None
        given["glossary"] = glossary
    try:
        return TranslationOptions(**given)
    except (OptionError, TypeError) as error:
        raise RequestError(f"Invalid request: {error}") from None


def add_error_handlers(app) -> None:
    """Every error answered as `{"error": ...}`: a refused request with its status (a 503 with Retry-After), an
    unknown route or method, and anything else as a 500 whose detail goes to the log."""
    from fastapi.responses import JSONResponse
    from starlette.exceptions import HTTPException as StarletteHTTPException

    @app.exception_handler(RequestError)
    async def request_error(request, error: RequestError):
        headers = {"Retry-After": "1"} if error.status == 503 else None
        return JSONResponse({"error": str(error)}, status_code=error.status, headers=headers)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request, error: StarletteHTTPException):
        """An unknown route (404) or method (405), answered as every error is: `{"error": ...}`."""
        return JSONResponse({"error": str(error.detail)}, status_code=error.status_code, headers=error.headers)

    @app.exception_handler(Exception)
    async def server_error(request, error: Exception):
        # Starlette answers this outside the CORS middleware: its headers are added here. The detail goes to the
        # log, not to the client.
        logger.exception("error answering %s %s", request.method, request.url.path)
        return JSONResponse(
            {"error": f"Internal server error ({type(error).__name__})"},
            status_code=500,
            headers={"Access-Control-Allow-Origin": "*"},
        )
