"""Text in and out of the commands: lines read from UTF-8 bytes (`read_lines`), and outputs written whole or not at
all (`atomic_output`). Imports nothing of the package."""

import contextlib
import os
import sys
from collections.abc import Iterable, Iterator
from typing import TextIO


def read_lines(stream: Iterable[bytes], name: str, problems: list[str] | None = None) -> Iterator[str]:
    """The lines of a UTF-8 byte stream, without line ends. A line that is not UTF-8 is an error naming it; with a
    `problems` list, the error message goes there instead and the line reads as empty (so line numbers hold)."""
    for number, raw in enumerate(stream, 1):
        try:
            line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as error:
            message = f"{name}, line {number}: not valid UTF-8 ({error.reason} at byte {error.start})"
            if problems is None:
                raise ValueError(message) from None
            problems.append(message)
            line = ""
        yield line.rstrip("\r\n")


@contextlib.contextmanager
def atomic_output(path: str | None) -> Iterator[TextIO]:
    """stdout, or a new file at `path` written whole or not at all: written as `path`.partial, renamed to `path`
    when the block ends, removed when it fails."""
    if path is None:
        yield sys.stdout
        return
    partial = path + ".partial"
    try:
        with open(partial, "w", encoding="utf-8") as output:
            yield output
    except BaseException:
        os.remove(partial)
        raise
    os.replace(partial, path)


__all__ = ["atomic_output", "read_lines"]
