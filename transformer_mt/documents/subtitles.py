"""Subtitles (SRT through `srt`, WebVTT through webvtt-py), translated in place: the library reads the file (one it
cannot read is a FormatError), and only the cues' text lines are written; cue numbers, identifiers, timings, cue
settings, the WEBVTT header, NOTE, STYLE and REGION blocks, blank lines and line ends stay byte for byte.

Sentences that run over several cues are translated whole: consecutive cues' texts (a cue's lines joined by a
space) are joined until a cue that ends a sentence (`.`, `!`, `?`, `…` or `♪`, closing quotes and brackets after
it), at most MAX_CUES cues; a run with no sentence end at the end of the file ends there and is translated as it
is. The joined text is translated once and written back over the same cues, each cue taking a share proportional to
its share of the source's characters, cut at spaces, and within a cue over its number of lines, alike. A cue the
translation leaves no word for keeps its timing and has no text.

A text with tags (`<i>`, `<b>`, `<font color=...>`; WebVTT's `<v Name>`, `<c.class>`, `<lang en>`, `<ruby>`) is
sent as HTML ("html"; texts without tags as "text": at most two calls), each tag carried around its words'
translation as a `<span>`, a cue timestamp (`<00:01.500>`) as a `<code>` kept where the translation puts it. A tag
a cue leaves open is closed at the cue's end, and one a cut between cues leaves open is closed there and opened
again in the next cue.
"""

import html
import re
from html.parser import HTMLParser

import srt
import webvtt

from . import FormatError, Translated
from .text import decode, encode, ending, lines, spread


MAX_CUES = 5  # a run without punctuation (a song, a list) is not one sentence
SENTENCE_END = re.compile(r"[.!?…♪][\"'”’»)\]]*$")
TAG = re.compile(r"<(/?)([^\s>./]*)[^>\n]*>")  # a cue tag: its closing slash and its name ("v", "c", "i", ...)
TIMESTAMP = re.compile(r"<\d")


def _parsed_count(text: str, format: str) -> int:
    """How many cues the format's library reads in `text`; a FormatError where it cannot."""
    try:
        if format == "srt":
            return len(list(srt.parse(text)))
        return len(webvtt.from_string(text).captions)
    except (srt.SRTParseError, webvtt.errors.MalformedFileError, ValueError) as error:
        raise FormatError(format, str(error) or type(error).__name__) from None


def cues(source: list[str], format: str, count: int) -> list[list[int]]:
    """Each cue's text lines (their numbers; blank ones left out): in WebVTT those after its timing line up to a
    blank line, in SRT up to the next cue's number."""
    timings = [n for n, line in enumerate(source) if "-->" in line]
    if len(timings) != count:
        raise FormatError(format, f"{len(timings)} timing lines for {count} cues")
    found = []
    for k, timing in enumerate(timings):
        end = timings[k + 1] - 1 if k + 1 < len(timings) else len(source)
        text = range(timing + 1, end)
        if format == "vtt":
            text = range(timing + 1, next((n for n in text if not source[n].strip()), end))
        found.append([n for n in text if source[n].strip()])
    return found


def runs(texts: list[str]) -> list[list[int]]:
    """The cues (their indices) joined into one text each: up to a sentence end, at most MAX_CUES; a cue without
    text in none."""
    found, current = [], []
    for k, text in enumerate(texts):
        if not text:
            found, current = found + [current] if current else found, []
            continue
        current.append(k)
        if SENTENCE_END.search(TAG.sub("", text).strip()) or len(current) == MAX_CUES:
            found, current = found + [current], []
    return found + [current] if current else found


def to_html(text: str, tags: list[str]) -> str:
    """A cue's text as HTML: each tag a `<span id>` (a timestamp a `<code id>`) naming its source in `tags`, which
    it appends to; a tag the cue leaves open closed at its end."""
    out, open_, end = [], 0, 0
    for match in TAG.finditer(text):
        out.append(html.escape(text[end : match.start()], quote=False))
        end = match.end()
        if TIMESTAMP.match(match[0]):
            out.append(f'<code id="{len(tags)}"></code>')
        elif match[1]:
            if open_:
                out.append("</span>")
                open_ -= 1
            continue
        else:
            out.append(f'<span id="{len(tags)}">')
            open_ += 1
        tags.append(match[0])
    return "".join(out) + html.escape(text[end:], quote=False) + "</span>" * open_


class _Cue(HTMLParser):
    """A translation's HTML read back into cue text: each span its source tag, closed by name."""

    def __init__(self, tags: list[str]):
        super().__init__(convert_charrefs=True)
        self.tags, self.out, self.names = tags, [], []

    def handle_starttag(self, tag, attrs):
        number = int(dict(attrs).get("id", -1))
        if 0 <= number < len(self.tags):
            self.out.append(self.tags[number])
            if tag == "span":
                self.names.append(TAG.match(self.tags[number])[2])

    def handle_endtag(self, tag):
        if tag == "span" and self.names:
            self.out.append(f"</{self.names.pop()}>")

    def handle_data(self, data):
        self.out.append(data)


def from_html(translation: str, tags: list[str]) -> str:
    reader = _Cue(tags)
    reader.feed(translation)
    reader.close()
    return "".join(reader.out)


def _outside_tags(text: str):
    inside = {i for match in TAG.finditer(text) for i in range(match.start(), match.end())}
    return lambda i: i not in inside


def balanced(pieces: list[str]) -> list[str]:
    """Pieces of one text with each tag a cut left open closed at the piece's end and opened again in the next."""
    out, stack = [], []
    for piece in pieces:
        opened = "".join(stack)
        for match in TAG.finditer(piece):
            if match[1]:
                names = [TAG.match(tag)[2] for tag in stack]
                if match[2] in names:
                    del stack[len(names) - 1 - names[::-1].index(match[2])]
            elif not TIMESTAMP.match(match[0]):
                stack.append(match[0])
        closed = "".join(f"</{TAG.match(tag)[2]}>" for tag in reversed(stack))
        out.append(opened + piece + closed if piece else "")
    return out


def translate(data: bytes, translate_texts, format: str | None = None) -> Translated:
    """A subtitle file translated in place: `format` "srt" or "vtt" (None: "vtt" for a file that begins with
    WEBVTT, else "srt")."""
    text, bom = decode(data, format or "subtitles")
    format = format or ("vtt" if text.startswith("WEBVTT") else "srt")
    source = lines(text)
    found = cues(source, format, _parsed_count(text, format))
    texts = [" ".join(source[n].strip() for n in numbers) for numbers in found]
    joined = runs(texts)
    tags = [[] for _ in joined]  # each run's source tags, by the ids its HTML gives them
    marked = [any(TAG.search(texts[k]) for k in run) for run in joined]
    sent = [
        " ".join(to_html(texts[k], tags[r]) if marked[r] else texts[k] for k in run) for r, run in enumerate(joined)
    ]
    translations = {}
    for kind in (False, True):
        todo = [r for r in range(len(joined)) if marked[r] == kind]
        if todo:
            translations.update(
                zip(todo, translate_texts([sent[r] for r in todo], "html" if kind else "text"), strict=True)
            )
    for r, run in enumerate(joined):
        translation = from_html(translations[r], tags[r]) if marked[r] else translations[r]
        shares = balanced(spread(translation, [len(texts[k]) for k in run], _outside_tags(translation)))
        for k, share in zip(run, shares):
            numbers = found[k]
            written = spread(share, [len(source[n].strip()) for n in numbers], _outside_tags(share))
            for n, line in zip(numbers, written):
                source[n] = line + ending(source[n]) if line else ""
    return Translated(encode("".join(source), bom), len(joined))


def translate_srt(data: bytes, translate_texts) -> Translated:
    return translate(data, translate_texts, "srt")


def translate_vtt(data: bytes, translate_texts) -> Translated:
    return translate(data, translate_texts, "vtt")


__all__ = ["MAX_CUES", "balanced", "cues", "runs", "translate", "translate_srt", "translate_vtt"]
