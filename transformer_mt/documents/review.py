"""What translating a file reports and how an entry is marked for a translator's review: `FileReport` (entries
translated, kept, left untranslated, and those whose placeholders differ), `placeholders_kept` (the same
placeholders, tags and protected spans as the source), an entry's flags, and whether it is trusted enough to go
unreviewed. The .po and XLIFF writers (`files`, `xliff`) share them."""

import collections
import dataclasses
import re

from ..quality import Flags, together
from ..text.spans import lost_spans, placeholders


TAG = re.compile(r"</?\w+[^>]*>")  # inline markup a message holds (<b>, <a href="%s">)
PLACEHOLDERS_DIFFER = (
    "transformer-mt: the translation's placeholders or tags differ from the source's, or it lost a URL, path or number"
)


@dataclasses.dataclass
class FileReport:
    format: str
    translated: int = 0
    kept: int = 0
    abstained: int = 0  # left untranslated: their confidence was below the minimum
    placeholders_differ: list[str] = dataclasses.field(default_factory=list)


def placeholders_kept(source: str, translation: str) -> bool:
    """Whether the translation holds the same placeholders and tags as the source (in any order), and every other
    protected span of it (URLs, paths, numbers by their digits, ...)."""

    def held(text: str) -> collections.Counter:
        return collections.Counter([*placeholders(text), *TAG.findall(text)])

    return held(source) == held(translation) and not lost_spans(source, translation)


def entry_flags(translations: list) -> Flags:
    """The flags of one entry's translations (`quality.Translation`s; plain strings have none)."""
    return together([getattr(translation, "flags", None) or Flags() for translation in translations])


def is_trusted(flags: Flags, trusted_above: float | None) -> bool:
    return (
        trusted_above is not None
        and flags.confidence is not None
        and flags.confidence > trusted_above
        and not flags.guards
        and not flags.abstained
        and not flags.spans.lost
    )


__all__ = ["PLACEHOLDERS_DIFFER", "TAG", "FileReport", "entry_flags", "is_trusted", "placeholders_kept"]
