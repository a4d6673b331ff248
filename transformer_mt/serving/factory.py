"""The app of the serve command as uvicorn's factory, for `--workers N`: uvicorn starts each worker from an import
string (`command.FACTORY`), so the serve command hands its arguments over in the environment (`command.WORKERS_ENV`,
JSON) and each worker builds the same app from them, loading the models itself."""

import argparse
import json
import os

from .command import WORKERS_ENV, app_of


def create():
    """The app of the serve command whose arguments WORKERS_ENV holds."""
    return app_of(argparse.Namespace(**json.loads(os.environ[WORKERS_ENV])))


__all__ = ["create"]
