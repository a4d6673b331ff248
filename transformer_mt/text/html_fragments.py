"""HTML fragments as they are written: whether a message is one to translate as HTML (`holds_markup`, for .po and
XLIFF files), and a translation's start tags written back as the source wrote them (`as_written`: every HTML
translation, `translation.assemble`, and whole HTML files)."""

import collections
import re
from html.parser import HTMLParser


HTML_INLINE = {
    "a",
    "abbr",
    "b",
    "big",
    "cite",
    "code",
    "em",
    "i",
    "kbd",
    "q",
    "s",
    "samp",
    "small",
    "span",
    "strong",
    "sub",
    "sup",
    "tt",
    "u",
    "var",
}


def holds_markup(text: str) -> bool:
    """Whether a message is an HTML fragment to translate as one (`<b>%s</b> saved`, `<a href="%s">here</a>`):
    it holds only HTML's inline tags, and BeautifulSoup parses it as it is written, the same elements with the same
    attributes (as a mapping) around the same text (so `<file>` in a usage line, or an unclosed `<b>`, is text).
    How BeautifulSoup would write it back (attributes sorted, `&` escaped, its own quotes) does not matter: the
    translation's tags are put back as the message wrote them (`as_written`)."""
    names = {name.lower() for name in re.findall(r"</?([A-Za-z][\w-]*)", text)}
    if not names or not names <= HTML_INLINE:
        return False
    from bs4 import BeautifulSoup

    written = _Written(text).events
    parsed = BeautifulSoup(text, "html.parser", multi_valued_attributes=None)
    return ("other",) not in written and _joined(written) == _joined(_tree_events(parsed.contents))


def _start(name: str, attributes) -> tuple:
    """A start tag's event: its name and its attributes as a mapping (a valueless one's value empty)."""
    return "start", name, tuple(sorted({key: value or "" for key, value in attributes}.items()))


class _Written(HTMLParser):
    """An HTML fragment as written, read by Python's `html.parser` (BeautifulSoup's own): `events`, in order,
    ("start", name, attributes), ("end", name), ("text", text) and ("other",) for a comment, a declaration or a
    processing instruction; `tags`, each start tag's event and its own text."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.events: list[tuple] = []
        self.tags: list[tuple[tuple, str]] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.events.append(_start(tag, attrs))
        self.tags.append((self.events[-1], self.get_starttag_text()))

    def handle_startendtag(self, tag, attrs):  # `<b/>`: BeautifulSoup writes `<b></b>`, so its text is not kept
        self.events += [_start(tag, attrs), ("end", tag)]

    def handle_endtag(self, tag):
        self.events.append(("end", tag))

    def handle_data(self, data):
        self.events.append(("text", data))

    def handle_comment(self, data):
        self.events.append(("other",))

    handle_decl = handle_pi = unknown_decl = handle_comment


def _tree_events(nodes) -> list[tuple]:
    """The events of BeautifulSoup's parse tree, as `_Written` names them."""
    from bs4 import NavigableString, Tag

    events = []
    for node in nodes:
        if isinstance(node, Tag):
            events += [_start(node.name, node.attrs.items()), *_tree_events(node.contents), ("end", node.name)]
        else:
            events.append(("text", str(node)) if type(node) is NavigableString else ("other",))
    return events


def _joined(events: list[tuple]) -> list[tuple]:
    """`events` with each run of texts one text."""
    joined = []
    for event in events:
        if event[0] == "text" and joined and joined[-1][0] == "text":
            joined[-1] = ("text", joined[-1][1] + event[1])
        elif event != ("text", ""):
            joined.append(event)
    return joined


START_TAG = re.compile(r"""<[A-Za-z][\w-]*(?:\s+[^\s"'>/=]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'=<>`]+))?)*\s*>""")


def as_written(source: str, translation: str) -> str:
    """`translation`, the markup step's translation of the HTML fragment `source`, with each of its start tags that
    is one of the source's (the same element, the same attributes) written as the source writes it: BeautifulSoup
    writes the translation back with its attributes sorted, `&` escaped and its own quotes."""
    own = collections.defaultdict(list)
    for event, text in _Written(source).tags:
        own[event].append(text)

    def restored(match: re.Match) -> str:
        tags = _Written(match[0]).tags
        return own[tags[0][0]].pop(0) if len(tags) == 1 and own.get(tags[0][0]) else match[0]

    return START_TAG.sub(restored, translation)


__all__ = ["HTML_INLINE", "START_TAG", "as_written", "holds_markup"]
