"""`transformer-mt-serve`: translation over HTTP with LibreTranslate's API (`app`), dynamic batching (`batcher`),
HTML that keeps its markup (`markup`) and language identification (`languages`). Needs the `[serve]` extra."""

from .app import Limits, ServedModel, create_app


__all__ = ["Limits", "ServedModel", "create_app"]
