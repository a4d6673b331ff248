"""Protected spans found and compared: what a translation must carry unchanged (placeholders, URLs, e-mail
addresses, file paths, inline code, numbers, emoji), each kind one regex (`KINDS`, `PLACEHOLDER`); the spans of a
text, with where each is (`protected_spans`, `protected_ranges`, `placeholders`); and a translation's compared with
its source's as multisets, numbers by their digits: what it lost (`lost_spans`, `lost_placeholders`), the
placeholders it holds more often (`extra_placeholders`), both (`span_problems`). Imports nothing of the package;
`spans` masks the spans as reserved tokens and puts them back, and re-exports every name here.
"""

import collections
import re
from collections.abc import Callable
from typing import NamedTuple


# Each kind is one regex; KINDS' order decides where two kinds could start at one place (a URL holding `%s` is one
# URL). Placeholders: a literal `%%` (matched, then dropped, so "100%% done" holds none), printf (`%s`, `%1$s`,
# `%-5.2f`, `%ld`, `%(name)s`; `%*s`, `%.*s`: the width or precision an argument), HexChat's colours (`%C23`,
# `%C4,1`), Qt's `%1`..`%99`, a letter's code (strftime's `%Y`, HexChat's `%O`), `${var}`, `$1`, and format fields
# (`{0}`, `{name}`, `{!s}`, `{}`), i18next's and Angular's `{{name}}` and Rails' `%{name}` whole; no space flag and
# no bare `%`: "50% discount" and "100 %" hold none. Weblate's
# markers for the placeholders it sends a machine translation service are placeholders too: `[X14X]` (its
# LibreTranslate backend's, the placeholder's offset in the source) and `@@PH1@@` (its LLM backends').
PLACEHOLDER = re.compile(
    r"\[X\d+X\]|@@PH\d+@@|%%|%(?:\d+\$)?(?:\([\w.]+\))?[-+#0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|L|z|j|t|q)?"
    r"[sdifuxXeEgGcrop]|%C\d\d?(?:,\d\d?)?|%[1-9]\d?(?![\d$])|%[A-Za-z]|\$\{\w+\}|\$\d(?!\d)"
    r"|\{\{\s*[\w.]+\s*\}\}|%\{\w+\}|\{[\w.:!]*\}"
)
_URL = r"(?:\b(?:https?|ftp)://|\bwww\.)[^\s<>\"'`]*[^\s<>\"'`.,;:!?)\]]"  # trailing punctuation is the sentence's
_EMAIL = r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
# a path is a Unix path of two names or more (`/usr/share`, not "and/or", "km/h" or a lone `/`), one from home or
# here (`~/.config`, `./configure`), or a Windows one (`C:\Users\x`); a name ends before a trailing dot
_NAME = r"\.?[\w+@-]+(?:\.[\w+@-]+)*"
_PATH = (
    rf"(?<![\w/.~<\\])(?:(?:~|\.\.?)/{_NAME}|/{_NAME}/{_NAME})(?:/{_NAME})*/?"
    rf"|(?<!\w)[A-Za-z]:\\(?:{_NAME}\\?)*"
)
_CODE = r"`[^`'\s][^`'\n]*`"  # not GNU's `quote' style
# digits with inner separators (`1,234.5`, `10:30`, `2.0.1`) and an exponent (`3.4E+38`), compared by their digits
# alone; never inside a word ("amd64", "3D", "16th" are words, and the word is what a translation keeps) and never a
# piece of a longer number (the "1" of "16th", the "3.4" of "3.4E+38")
_NUMBER = r"(?<!\w)(?<!\w[.,:])\d+(?:[.,:]\d+)*(?:[eE][-+]?\d+)?(?![^\W\d]|\d|[.,:]\d|[eE][-+]?\d)"
# a pictograph, its presentation selector and skin tone, joined into one by zero-width joiners
_EMOJI_CHAR = (
    r"[\U0001F000-\U0001FAFF\u2600-\u27BF\u2B50\u2B55\u231A\u231B\u23E9-\u23FA]\uFE0F?"
    r"[\U0001F3FB-\U0001F3FF]?"
)
_EMOJI = rf"{_EMOJI_CHAR}(?:\u200D{_EMOJI_CHAR})*"
KINDS = {
    "code": _CODE,
    "url": _URL,
    "email": _EMAIL,
    "path": _PATH,
    "placeholder": PLACEHOLDER.pattern,
    "number": _NUMBER,
    "emoji": _EMOJI,
}
_SPAN = re.compile("|".join(f"(?P<{kind}>{pattern})" for kind, pattern in KINDS.items()))


class Span(NamedTuple):
    """One protected span: its kind (a key of KINDS) and its text."""

    kind: str
    text: str

    @property
    def key(self) -> str:
        """What a translation must hold: a number's digits (`1,234.5` and `1.234,5` are one), else the text."""
        return re.sub(r"\D", "", self.text) if self.kind == "number" else self.text


def _found(text: str) -> list[tuple[Span, int]]:
    """Each protected span of `text` with where it begins, in order."""
    return [(Span(match.lastgroup, match[0]), match.start()) for match in _SPAN.finditer(text) if match[0] != "%%"]


def protected_spans(text: str) -> list[Span]:
    """The protected spans of `text`, in order (a literal `%%` is none)."""
    return [span for span, _ in _found(text)]


def protected_ranges(text: str) -> list[tuple[int, int]]:
    """Where the protected spans of `text` are: their (start, end) characters, in order."""
    return [(start, start + len(span.text)) for span, start in _found(text)]


def placeholders(text: str) -> list[str]:
    """The placeholders of `text`, in order (a literal `%%` is none)."""
    return [span for span in PLACEHOLDER.findall(text) if span != "%%"]


def _missing(source: list, translation: list, key: Callable) -> list:
    """The `source` items whose key the translation's items do not hold as often (the first ones of a key)."""
    missing = collections.Counter(map(key, source)) - collections.Counter(map(key, translation))
    lost = []
    for item in source:
        if missing[key(item)]:
            lost.append(item)
            missing[key(item)] -= 1
    return lost


def _lost(source: list[tuple[Span, int]], translation: str) -> list[tuple[Span, int]]:
    """The spans of `source` (with where each begins) that `translation` does not hold as often."""
    return _missing(source, [(span, 0) for span in protected_spans(translation)], lambda found: found[0].key)


def lost_spans(source: str, translation: str) -> list[Span]:
    """The source's spans the translation does not hold as often as the source does (numbers by their digits),
    in source order."""
    return [span for span, _ in _lost(_found(source), translation)]


def lost_placeholders(source: str, translation: str) -> list[str]:
    """The source's placeholders the translation does not hold as often as the source does, in source order."""
    return _missing(placeholders(source), placeholders(translation), lambda span: span)


def extra_placeholders(source: str, translation: str) -> list[tuple[Span, int, int]]:
    """The placeholders `translation` holds more often than `source` (written twice, or invented), with where each
    begins and ends: the later occurrences of a placeholder first."""
    allowed = collections.Counter(placeholders(source))
    found = [
        (Span("placeholder", match[0]), match.start(), match.end())
        for match in PLACEHOLDER.finditer(translation)
        if match[0] != "%%"
    ]
    seen, extra = collections.Counter(), []
    for span, start, end in found:
        seen[span.text] += 1
        if seen[span.text] > allowed[span.text]:
            extra.append((span, start, end))
    return extra


def span_problems(source: str, translation: str) -> list[Span]:
    """What a translation gets wrong of its source's spans: each one it lost, then each placeholder it holds more
    often than the source."""
    return lost_spans(source, translation) + [span for span, _, _ in extra_placeholders(source, translation)]


__all__ = [
    "KINDS",
    "PLACEHOLDER",
    "Span",
    "extra_placeholders",
    "lost_placeholders",
    "lost_spans",
    "placeholders",
    "protected_ranges",
    "protected_spans",
    "span_problems",
]
