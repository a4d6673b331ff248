"""Plain text (.txt): one text a line, each sent whole (its sentences are split downstream), blank lines and line
ends kept; a line's leading and trailing whitespace belongs to the file, not to the model.

Also what the other text formats share: bytes read as UTF-8 (a byte order mark kept) and written back alike, lines
with their own line ends, and `spread`, which writes one translation over several slots (a paragraph's lines, a
sentence's cues) in proportion to the source's lengths.
"""

import re
from collections.abc import Callable

from ..text.sentences import rewrap
from . import FormatError, Translated


BOM = "\ufeff"
LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")  # a line with its own line end, or the last without one


def decode(data: bytes, format: str) -> tuple[str, str]:
    """The text of `data` (UTF-8) without its byte order mark, and the mark ("" if none); invalid UTF-8 is a
    FormatError naming `format`."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise FormatError(format, f"not UTF-8 ({error.reason} at byte {error.start})") from None
    return (text[1:], BOM) if text.startswith(BOM) else (text, "")


def encode(text: str, bom: str) -> bytes:
    return (bom + text).encode("utf-8")


def lines(text: str) -> list[str]:
    """The lines of `text`, each with its own line end: "".join(lines(text)) == text."""
    return LINE.findall(text)


def ending(line: str) -> str:
    """A line's line end ("\\r\\n", "\\n", "\\r" or "")."""
    return line[len(line.rstrip("\r\n")) :]


def spread(text: str, lengths: list[int], breakable: Callable[[int], bool] | None = None) -> list[str]:
    """`text` cut at whitespace into len(lengths) pieces, piece k taking about the share lengths[k] / sum(lengths)
    of its characters; `breakable(i)` (the whitespace at index i may be cut there) narrows the cuts. Each piece
    is stripped; with fewer words than pieces the last pieces are empty."""
    if len(lengths) <= 1:
        return [text.strip()] * len(lengths)
    text = text.strip()
    cuts = [match.start() for match in re.finditer(r"\s+", text) if breakable is None or breakable(match.start())]
    total, chosen, done, first = max(1, sum(lengths)), [], 0, 0
    for k, length in enumerate(lengths[:-1]):
        done += length
        left = len(lengths) - 2 - k  # cuts still needed after this one
        options = cuts[first : len(cuts) - left]
        if not options:
            break
        target = len(text) * done / total
        best = min(range(len(options)), key=lambda i: abs(options[i] - target))
        chosen.append(options[best])
        first += best + 1
    bounds = [0, *chosen, len(text)]
    pieces = [text[start:end].strip() for start, end in zip(bounds, bounds[1:])]
    return pieces + [""] * (len(lengths) - len(pieces))


def translate(data: bytes, translate_texts) -> Translated:
    """A plain text file translated line by line, one call for the file."""
    text, bom = decode(data, "text")
    found = lines(text)
    todo = [k for k, line in enumerate(found) if line.strip()]
    translations = translate_texts([found[k].strip() for k in todo], "text") if todo else []
    for k, translation in zip(todo, translations, strict=True):
        body = found[k][: len(found[k]) - len(ending(found[k]))]
        found[k] = rewrap(body, translation) + ending(found[k])
    return Translated(encode("".join(found), bom), len(todo))


__all__ = ["decode", "encode", "ending", "lines", "spread", "translate"]
