"""Keyboard accelerators in UI messages: "&Save Changes" (Qt, KDE), "_Open File" (GTK) mark the letter a menu's
Alt key reaches. A model trained on messages without them reads "&Save" as another word ("Setzt Änderungen", "Save
&As..." as "Speichern undAs..."), so a message's one marker is taken out before translating (`take_out`) and put
back before the same letter of the translation, the first one beginning a word if any, else the first one, else the
translation's first letter (`put_back`), as translate-toolkit's pretranslation does; `msgfmt --check-accelerators`
then finds one marker where the source had one.

A marker is `&` or `_` before a letter, not after a word character ("file_name", "R&D" hold none), and not an HTML
entity ("&nbsp;"); a message holding more than one, or markup, is left as it is.
"""

import re


_MARKER = re.compile(r"(?<![\w&])([&_])(?=([^\W\d_]))(?![A-Za-z]+;|#\d+;)")


def take_out(text: str) -> tuple[str, tuple[str, str] | None]:
    """`text` without its one accelerator marker, and (the marker, the letter it marked); `text` itself and None
    where it holds none or several."""
    found = list(_MARKER.finditer(text))
    if len(found) != 1:
        return text, None
    match = found[0]
    return text[: match.start()] + text[match.end() :], (match[1], match[2])


def put_back(translation: str, accelerator: tuple[str, str] | None) -> str:
    """`translation` with the marker before the same letter (any case), the first one beginning a word if any, else
    the first one, else the first letter; unchanged without an accelerator or a letter to mark."""
    if accelerator is None:
        return translation
    marker, letter = accelerator
    same = [m.start() for m in re.finditer(re.escape(letter), translation, re.IGNORECASE)]
    starting = [i for i in same if i == 0 or not translation[i - 1].isalnum()]
    letters = [m.start() for m in re.finditer(r"[^\W\d_]", translation)]
    place = (starting or same or letters or [None])[0]
    return translation if place is None else translation[:place] + marker + translation[place:]


__all__ = ["put_back", "take_out"]
