"""DeepL's glossary routes over `deepl_store`: v2's (`/v2/glossaries`: create, list, get, entries as TSV or CSV,
delete; `/v2/glossary-language-pairs`) and v3's (`/v3/glossaries` with `dictionaries`: create, list, get, entries,
PUT and PATCH, delete a glossary or one dictionary). A v2 glossary is a glossary of one dictionary; both APIs see
every glossary of the key, v2 those of one dictionary. `glossary_entries` gives `/v2/translate` a glossary's
entries for its pair, which the translation follows as a request's `glossary` (`options.glossary`)."""

from .deepl_fields import ENTRY_FORMATS, deepl_fields, deepl_route, parse_entries, served_code, store_of, write_entries
from .deepl_store import iso_time
from .fields import RequestError


def language_pairs(service) -> list[tuple[str, str]]:
    """The pairs a glossary may be made for: every pair the server translates."""
    return list(service.routes)


def checked_pair(service, source, target) -> tuple[str, str]:
    sources = sorted({s for s, _ in service.routes})
    targets = sorted({t for _, t in service.routes})
    return served_code(source, "source_lang", sources), served_code(target, "target_lang", targets)


def dictionary_of(service, given, where: str = "dictionaries") -> tuple[tuple[str, str], list]:
    """One dictionary of a request: its pair and entries (`entries`, as `entries_format` says: tsv unless given)."""
    if not isinstance(given, dict):
        raise RequestError(f"Parameter '{where}' must hold objects of source_lang, target_lang and entries")
    pair = checked_pair(service, given.get("source_lang"), given.get("target_lang"))
    return pair, parse_entries(given.get("entries"), given.get("entries_format") or "tsv")


def dictionaries_of(service, given) -> dict:
    if not isinstance(given, list) or not given:
        raise RequestError(f"Parameter 'dictionaries' must be a non-empty list of dictionaries, got {given!r}")
    found = {}
    for dictionary in given:
        pair, entries = dictionary_of(service, dictionary)
        if pair in found:
            raise RequestError(f"Parameter 'dictionaries' holds {pair[0]}->{pair[1]} twice")
        found[pair] = entries
    return found


def name_of(fields: dict, required: bool = True) -> str | None:
    name = fields.get("name")
    if name is None and not required:
        return None
    if not isinstance(name, str) or not name.strip():
        raise RequestError(f"Parameter 'name' must be a non-empty text, got {name!r}")
    return name


def v2_info(glossary: dict) -> dict:
    (source, target), entries = next(iter(glossary["dictionaries"].items()))
    return {
        "glossary_id": glossary["id"],
        "name": glossary["name"],
        "ready": True,
        "source_lang": source,
        "target_lang": target,
        "creation_time": iso_time(glossary["created"]),
        "entry_count": len(entries),
    }


def v3_dictionary(pair: tuple[str, str], entries: list) -> dict:
    return {"source_lang": pair[0], "target_lang": pair[1], "entry_count": len(entries)}


def v3_info(glossary: dict) -> dict:
    return {
        "glossary_id": glossary["id"],
        "name": glossary["name"],
        "dictionaries": [v3_dictionary(pair, entries) for pair, entries in glossary["dictionaries"].items()],
        "creation_time": iso_time(glossary["created"]),
    }


def found_glossary(store, owner: str, glossary_id: str, v2: bool = False) -> dict:
    """The key's glossary `glossary_id`; a 404 when it has none (a v2 route: none of one dictionary)."""
    glossary = store.glossary(owner, glossary_id)
    if glossary is None or (v2 and len(glossary["dictionaries"]) != 1):
        raise RequestError(f"Glossary not found: {glossary_id!r}", 404)
    return glossary


def glossary_entries(store, owner: str, glossary_id, pair: tuple[str, str]) -> tuple:
    """The entries `/v2/translate`'s `glossary_id` gives a translation of `pair` (as `options.glossary`); a 404 for
    an unknown glossary, a 400 when it has no dictionary of the pair."""
    if not isinstance(glossary_id, str) or not glossary_id:
        raise RequestError(f"Parameter 'glossary_id' must be a glossary's id, got {glossary_id!r}")
    glossary = found_glossary(store, owner, glossary_id)
    if pair not in glossary["dictionaries"]:
        held = ", ".join(f"{s}->{t}" for s, t in glossary["dictionaries"])
        raise RequestError(f"Glossary {glossary_id!r} has no dictionary of {pair[0]}->{pair[1]} (it holds {held})")
    return tuple(glossary["dictionaries"][pair])


def add_glossary_routes(app, service) -> None:
    """The glossary routes of v2 and v3 on `app`, over the app's store (`deepl_fields.store_of`)."""
    from fastapi import Request
    from fastapi.responses import JSONResponse, Response

    async def asked(request):
        return await deepl_fields(service, request), store_of(app, service)

    @app.get("/v2/glossary-language-pairs")
    @deepl_route
    async def glossary_language_pairs(request: Request):
        await asked(request)
        pairs = [{"source_lang": s, "target_lang": t} for s, t in language_pairs(service)]
        return JSONResponse({"supported_languages": pairs})

    @app.post("/v2/glossaries")
    @deepl_route
    async def create_v2(request: Request):
        deepl, store = await asked(request)
        fields = deepl.fields
        pair = checked_pair(service, fields.get("source_lang"), fields.get("target_lang"))
        entries = parse_entries(fields.get("entries"), fields.get("entries_format") or "tsv")
        glossary = store.create(deepl.owner, name_of(fields), {pair: entries}, 2)
        return JSONResponse(v2_info(glossary), status_code=201)

    @app.get("/v2/glossaries")
    @deepl_route
    async def list_v2(request: Request):
        deepl, store = await asked(request)
        glossaries = [v2_info(g) for g in store.glossaries(deepl.owner) if len(g["dictionaries"]) == 1]
        return JSONResponse({"glossaries": glossaries})

    @app.get("/v2/glossaries/{glossary_id}")
    @deepl_route
    async def get_v2(request: Request, glossary_id: str):
        deepl, store = await asked(request)
        return JSONResponse(v2_info(found_glossary(store, deepl.owner, glossary_id, v2=True)))

    @app.get("/v2/glossaries/{glossary_id}/entries")
    @deepl_route
    async def entries_v2(request: Request, glossary_id: str):
        deepl, store = await asked(request)
        glossary = found_glossary(store, deepl.owner, glossary_id, v2=True)
        accept = request.headers.get("accept", "text/tab-separated-values")
        format = "csv" if "text/csv" in accept else "tsv"
        media = "text/csv" if format == "csv" else "text/tab-separated-values"
        return Response(write_entries(next(iter(glossary["dictionaries"].values())), format), media_type=media)

    @app.delete("/v2/glossaries/{glossary_id}")
    @app.delete("/v3/glossaries/{glossary_id}")
    @deepl_route
    async def delete(request: Request, glossary_id: str):
        deepl, store = await asked(request)
        if not store.delete(deepl.owner, glossary_id):
            raise RequestError(f"Glossary not found: {glossary_id!r}", 404)
        return Response(status_code=204)

    add_v3_routes(app, service, asked)


def add_v3_routes(app, service, asked) -> None:
    """`/v3/glossaries`: glossaries of several dictionaries, as Weblate's DeepL backend syncs a project's."""
    from fastapi import Request
    from fastapi.responses import JSONResponse, Response

    @app.post("/v3/glossaries")
    @deepl_route
    async def create_v3(request: Request):
        deepl, store = await asked(request)
        dictionaries = dictionaries_of(service, deepl.fields.get("dictionaries"))
        glossary = store.create(deepl.owner, name_of(deepl.fields), dictionaries, 3)
        return JSONResponse(v3_info(glossary), status_code=201)

    @app.get("/v3/glossaries")
    @deepl_route
    async def list_v3(request: Request):
        deepl, store = await asked(request)
        return JSONResponse({"glossaries": [v3_info(glossary) for glossary in store.glossaries(deepl.owner)]})

    @app.get("/v3/glossaries/{glossary_id}")
    @deepl_route
    async def get_v3(request: Request, glossary_id: str):
        deepl, store = await asked(request)
        return JSONResponse(v3_info(found_glossary(store, deepl.owner, glossary_id)))

    @app.get("/v3/glossaries/{glossary_id}/entries")
    @deepl_route
    async def entries_v3(request: Request, glossary_id: str):
        deepl, store = await asked(request)
        glossary = found_glossary(store, deepl.owner, glossary_id)
        pair = checked_pair(service, deepl.fields.get("source_lang"), deepl.fields.get("target_lang"))
        if pair not in glossary["dictionaries"]:
            raise RequestError(f"Glossary {glossary_id!r} has no dictionary of {pair[0]}->{pair[1]}", 404)
        entries = write_entries(glossary["dictionaries"][pair], "tsv")
        shown = {"source_lang": pair[0], "target_lang": pair[1], "entries": entries, "entries_format": "tsv"}
        return JSONResponse({"dictionaries": [shown]})

    @app.put("/v3/glossaries/{glossary_id}/dictionaries")
    @deepl_route
    async def replace_dictionary(request: Request, glossary_id: str):
        deepl, store = await asked(request)
        found_glossary(store, deepl.owner, glossary_id)
        pair, entries = dictionary_of(service, deepl.fields, "body")
        store.update(deepl.owner, glossary_id, None, {pair: entries}, merge=False)
        return JSONResponse(v3_dictionary(pair, entries))

    @app.patch("/v3/glossaries/{glossary_id}")
    @deepl_route
    async def patch(request: Request, glossary_id: str):
        deepl, store = await asked(request)
        found_glossary(store, deepl.owner, glossary_id)
        name = name_of(deepl.fields, required=False)
        given = deepl.fields.get("dictionaries")
        dictionaries = dictionaries_of(service, given) if given is not None else {}
        if name is None and not dictionaries:
            raise RequestError("Give 'name' or 'dictionaries' (or both) to change a glossary")
        store.update(deepl.owner, glossary_id, name, dictionaries, merge=True)
        return JSONResponse(v3_info(found_glossary(store, deepl.owner, glossary_id)))

    @app.delete("/v3/glossaries/{glossary_id}/dictionaries")
    @deepl_route
    async def delete_dictionary(request: Request, glossary_id: str):
        deepl, store = await asked(request)
        pair = checked_pair(service, deepl.fields.get("source_lang"), deepl.fields.get("target_lang"))
        if not store.delete_dictionary(deepl.owner, glossary_id, pair):
            raise RequestError(f"Glossary {glossary_id!r} has no dictionary of {pair[0]}->{pair[1]}", 404)
        return Response(status_code=204)


__all__ = ["ENTRY_FORMATS", "add_glossary_routes", "glossary_entries", "language_pairs"]
