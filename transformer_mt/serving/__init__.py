"""`transformer-mt-serve`: translation over HTTP with LibreTranslate's API (`app`), dynamic batching (`batcher`),
its limits and their defaults (`limits`), request fields (`fields`), language identification (`languages`), a
folder of models loaded on demand (`folder`) and a fine-tuned model's promotion (`promotion`); the command is
`transformer_mt.commands.serve`. Needs the `[serve]` extra, so the app is imported when first asked for."""

from .limits import Limits


def __getattr__(name: str):
    if name in ("ServedModel", "create_app"):
        from . import app

        return getattr(app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Limits", "ServedModel", "create_app"]
