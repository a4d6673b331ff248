"""`transformer-mt-serve`: translation over HTTP with LibreTranslate's API (`app`), dynamic batching (`batcher`),
HTML that keeps its markup (`markup`) and language identification (`languages`). Needs the `[serve]` extra;
`markup` alone needs only BeautifulSoup (the `[files]` extra translates HTML files with it), so the app is imported
when first asked for."""


def __getattr__(name: str):
    if name in ("Limits", "ServedModel", "create_app"):
        from . import app

        return getattr(app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Limits", "ServedModel", "create_app"]
