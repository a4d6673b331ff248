"""Documents in the formats people write them in, translated in place: each format's own parser finds the text,
`translate_texts` translates it, and everything else in the file is written back as it was.

Every format module has one entry, `translate(data, translate_texts) -> Translated`: `data` is the file's bytes,
`translate_texts(texts, format)` translates a list of texts in one call (`format` "text" for plain text, "html"
for an HTML fragment whose inline tags are carried through each whole sentence: `transformer_mt.text.markup`), and the
result is the translated file's bytes and how many texts were sent. A file the format's parser cannot read is a
`FormatError` naming the format and the reason (the server's 400).
"""

import dataclasses
import functools
from collections.abc import Callable


TranslateTexts = Callable[[list[str], str], list[str]]


class FormatError(ValueError):
    """A file its format's parser cannot read, or one refused before parsing (too large, a zip bomb, entities)."""

    def __init__(self, format: str, reason: str):
        super().__init__(f"cannot read this file as {format}: {reason}")
        self.format, self.reason = format, reason


@dataclasses.dataclass(frozen=True)
class Translated:
    data: bytes
    translated: int  # texts sent to translate_texts


def in_contexts(texts: list[str], contexts: list[str | None], translate_texts, translate_group) -> list:
    """Each text translated by `translate_group(texts, translate)`, once for the texts of each distinct context with
    `translate` = `translate_texts` given `context=` (a message's msgctxt, a unit's resname or note: read by a model
    trained with context as the second segment), and once for those without one, with `translate_texts` itself."""
    found = [None] * len(texts)
    for context in dict.fromkeys(contexts):
        indices = [i for i, own in enumerate(contexts) if own == context]
        translate = translate_texts if context is None else functools.partial(translate_texts, context=context)
        for i, translation in zip(indices, translate_group([texts[i] for i in indices], translate), strict=True):
            found[i] = translation
    return found


__all__ = ["FormatError", "TranslateTexts", "Translated", "in_contexts"]
