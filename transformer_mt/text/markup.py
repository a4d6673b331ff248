"""format="html": translate the text of HTML fragments, each sentence whole with its inline markup carried through.

A fragment is parsed by BeautifulSoup over Python's own `html.parser` (no regular expressions on markup) and taken
apart into runs of inline content: block elements (`<p>`, `<li>`, `<div>`, `<td>`, ...) and `<br>` separate runs,
and a run's text, whatever inline elements (`<a>`, `<b>`, `<kbd>`, ...) cut it, is one text for the engine, split
into sentences as plain text is. Each inline element is then put back exactly once around the translation of the
words it held (`transformer_mt.text.inline`: by the word alignment of the sentence and its translation).

Kept verbatim, as a placeholder token the engine carries (`{0}`, `{1}`, ...): `<code>`, `<script>`, `<style>`,
`<textarea>`, `<template>`, anything marked `translate="no"` (HTML's own attribute), and Mastodon's mention and
hashtag links (`a.mention`, `a.hashtag`) and `span.h-card`; `<pre>` blocks are left as they are. Everything else
is translated, `<kbd>` included (German writes `Strg` for `Ctrl`). BeautifulSoup writes the result back, so tags,
attributes and entities stay as they were and translated text is escaped: a translation can never add markup.
"""

import copy
import dataclasses
import re

from bs4 import BeautifulSoup, NavigableString, Tag

from .inline import POINT, VERBATIM, WRAP, Inline, Placement, place
from .spans import TOKEN


BLOCK_ELEMENTS = {
    "address",
    "article",
    "aside",
    "blockquote",
    "body",
    "caption",
    "dd",
    "details",
    "dialog",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "head",
    "header",
    "hgroup",
    "hr",
    "html",
    "legend",
    "li",
    "main",
    "nav",
    "ol",
    "option",
    "p",
    "section",
    "summary",
    "table",
    "tbody",
    "td",
    "tfoot",
    "th",
    "thead",
    "title",
    "tr",
    "ul",
}
UNTRANSLATED_ELEMENTS = {"script", "style", "code", "pre", "textarea", "template"}
VOID_ELEMENTS = {"area", "img", "input", "wbr", "embed", "source", "track"}
BREAKS = {"br"}
VERBATIM_CLASSES = {"a": {"mention", "hashtag"}, "span": {"h-card"}}  # Mastodon's links to people and tags


def verbatim(element: Tag) -> bool:
    """Whether `element` is kept as it is: untranslated by its name, by `translate="no"`, or a Mastodon mention,
    hashtag or h-card."""
    if element.name in UNTRANSLATED_ELEMENTS or element.get("translate", "").lower() == "no":
        return True
    return bool(VERBATIM_CLASSES.get(element.name, set()) & set(element.get("class", [])))


class Run:
    """One run of inline content: the sibling `nodes` it replaces, its `text` for the engine (whitespace collapsed
    and stripped, verbatim elements as tokens), its inline `elements` over that text, and the source node of
    each."""

    def __init__(self, nodes: list):
        self.nodes = nodes
        self.elements: list[Inline] = []
        self.sources: list = []
        self._parts: list[str] = []
        self.glued: dict[int, list[bool]] = {}  # a verbatim element written against a word: [on its left, right]
        self._glue_after: int | None = None
        self._spaced: dict[int, bool] = {}  # a void element after whitespace: whether whitespace follows it too
        self._point_after: int | None = None
        self._taken = {
            int(number)
            for node in nodes
            for number in TOKEN.findall(node.get_text() if isinstance(node, Tag) else node)
        }
        for node in nodes:
            self._add(node, None)
        raw = "".join(self._parts)
        self.text = raw.strip()
        shift = len(raw) - len(raw.lstrip())
        original = "".join(node.get_text() if isinstance(node, Tag) else str(node) for node in nodes)
        self.leading = original[: len(original) - len(original.lstrip())]  # the source's own whitespace, kept
        self.trailing = original[len(original.rstrip()) :]
        self.elements = [
            Inline(
                max(0, e.start - shift),
                min(len(self.text), max(0, e.end - shift)),
                e.parent,
                e.kind,
                e.token,
                self._spaced.get(k, False),
            )
            for k, e in enumerate(self.elements)
        ]

    def _length(self) -> int:
        return sum(map(len, self._parts))

    def _append(self, text: str) -> None:
        text = re.sub(r"\s+", " ", text)
        if self._point_after is not None and text:
            self._spaced[self._point_after] = self._spaced[self._point_after] and text.startswith(" ")
            self._point_after = None
        if self._glue_after is not None and text:
            if text[0].isalnum():  # "{0}Delete": the engine sees the token as a word of its own
                self.glued[self._glue_after][1] = True
                text = " " + text
            self._glue_after = None
        if text.startswith(" ") and self._parts and self._parts[-1].endswith(" "):
            text = text[1:]
        self._parts.append(text)

    def _add(self, node, parent: int | None) -> None:
        if not isinstance(node, Tag):
            if type(node) is NavigableString:
                self._append(str(node))
            else:  # a comment, a processing instruction: kept where it was
                self._element(node, parent, POINT)
            return
        if node.name in VOID_ELEMENTS:
            index = self._element(node, parent, POINT)
            self._spaced[index] = bool(self._parts) and self._parts[-1].endswith(" ")
            self._point_after = index
        elif verbatim(node):
            number = next(n for n in range(len(self.sources) + len(self._taken) + 1) if n not in self._taken)
            self._taken.add(number)
            token = "{%d}" % number
            left = bool(self._parts) and bool(self._parts[-1]) and self._parts[-1][-1].isalnum()
            if left:
                self._parts.append(" ")
            before = self._length()
            self._parts.append(token)
            index = self._element(node, parent, VERBATIM, before, token)
            self.glued[index] = [left, False]
            self._glue_after = index
        else:
            index = self._element(node, parent, WRAP)
            for child in node.children:
                self._add(child, index)
            self.elements[index] = Inline(self.elements[index].start, self._length(), parent, WRAP)

    def _element(self, node, parent: int | None, kind: str, start: int | None = None, token: str | None = None) -> int:
        start = self._length() if start is None else start
        end = self._length() if kind != WRAP else start
        self.elements.append(Inline(start, end, parent, kind, token))
        self.sources.append(node)
        return len(self.elements) - 1

    def own_texts(self) -> list[str | None]:
        """Each element's own text (None for one that is not translated as words), which `fill` looks for in the
        translation when it has that text's translation on its own."""
        return [self.text[e.start : e.end].strip() or None if e.kind == WRAP else None for e in self.elements]

    def _reglued(self, items: list, out: list) -> list:
        """`out` (the nodes built for `items`) with the space the engine saw beside a glued verbatim element gone."""
        for i, item in enumerate(items):
            left, right = self.glued.get(getattr(item, "index", None), (False, False))
            if left and i and isinstance(out[i - 1], NavigableString) and out[i - 1].endswith(" "):
                out[i - 1] = NavigableString(out[i - 1][:-1])
            if right and i + 1 < len(out) and isinstance(out[i + 1], NavigableString) and out[i + 1].startswith(" "):
                out[i + 1] = NavigableString(out[i + 1][1:])
        return out

    def rebuild(self, soup: BeautifulSoup, placement: Placement) -> list:
        """The nodes that replace the run: its translation with every element put back as `placement` says."""
        tokens = [element.token for element in self.elements if element.kind == VERBATIM]

        def built(items: list) -> list:
            out = []
            for item in items:
                if isinstance(item, str):  # a token the model wrote twice is placed once: the copy goes
                    for token in tokens:
                        item = re.sub(rf" ?{re.escape(token)}", "", item) if token in item else item
                    out.append(NavigableString(item))
                    continue
                source = self.sources[item.index]
                span = placement.spans[item.index]
                if self.elements[item.index].kind != WRAP or span[0] == span[1]:
                    out.append(copy.copy(source))  # as it was, its content too
                    continue
                element = soup.new_tag(source.name, attrs=dict(source.attrs))
                for child in built(item.children):
                    element.append(child)
                out.append(element)
            return self._reglued(items, out)

        return [
            NavigableString(part) if isinstance(part, str) else part
            for part in (self.leading, *built(nest(placement.translation, self.elements, placement)), self.trailing)
            if part
        ]


def runs(container) -> list[Run]:
    """The runs of inline content in `container` (a soup or an element), in document order, that hold text."""
    found, pending = [], []

    def flush():
        if pending:
            run = Run(list(pending))
            if TOKEN.sub("", run.text).strip():
                found.append(run)
            pending.clear()

    for child in list(container.children):
        if isinstance(child, Tag) and (child.name in BREAKS or child.name == "pre" or _holds_blocks(child)):
            flush()
            if child.name not in BREAKS and not verbatim(child):
                found += runs(child)
        else:
            pending.append(child)
    flush()
    return found


def _holds_blocks(element: Tag) -> bool:
    return element.name in BLOCK_ELEMENTS or (
        not verbatim(element)
        and any(
            descendant.name in BLOCK_ELEMENTS or descendant.name in BREAKS for descendant in element.find_all(True)
        )
    )


class HtmlDocuments:
    """HTML fragments taken apart: `texts`, one per run of inline content, in document order (what the engine
    translates); `fill` puts their translations back by their word alignments and returns the fragments, counting
    in `fallbacks` the elements placed by the fallback rule."""

    def __init__(self, documents: list[str]):
        self.soups = [BeautifulSoup(document, "html.parser") for document in documents]
        self.runs = [(soup, run) for soup in self.soups for run in runs(soup)]
        self.texts = [run.text for _, run in self.runs]
        self.own_texts = sorted({text for _, run in self.runs for text in run.own_texts() if text})
        self.fallbacks = 0

    def fill(
        self, translations: list[str], alignments: list | None = None, own_translations: dict[str, str] | None = None
    ) -> list[str]:
        """The fragments with each run replaced by its translation, its elements placed by its alignment (Pharaoh
        pairs of whitespace words of the run's text and its translation; None: none known) and by their own texts'
        translations (`own_texts` -> their translations on their own), where given."""
        for k, ((soup, run), translation) in enumerate(zip(self.runs, translations, strict=True)):
            hints = [own_translations.get(text) for text in run.own_texts()] if own_translations else None
            placement = place(run.text, run.elements, translation, alignments[k] if alignments else [], hints)
            self.fallbacks += placement.fallbacks
            anchor = run.nodes[0]
            for node in run.rebuild(soup, placement):
                anchor.insert_before(node)
            for node in run.nodes:
                node.extract()
        return [str(soup) for soup in self.soups]


def html_text(document: str) -> str:
    """The text of an HTML fragment (what language identification reads)."""
    return BeautifulSoup(document, "html.parser").get_text(" ", strip=True)


@dataclasses.dataclass
class Node:
    """One element of the translation's tree: its index in the elements and what it holds (text and nodes)."""

    index: int
    children: list = dataclasses.field(default_factory=list)


def nest(translation: str, elements: list[Inline], placement: Placement) -> list:
    """The translation as a tree: a list of strings and `Node`s, each placed element holding the text of its span
    (a verbatim element's token and a zero-width element hold no text)."""

    def ancestors(k: int):
        while (k := elements[k].parent) is not None:
            yield k

    def key(k: int) -> tuple:
        """Document order; a zero-width element where another begins goes before it unless it lies in it."""
        start, end = placement.spans[k]
        lies_in = any(placement.spans[a] is not None and placement.spans[a][0] == start for a in ancestors(k))
        return (start, 0, 0, k) if start == end and not lies_in else (start, 1, -end, k)

    order = [
        (placement.spans[k][0], placement.spans[k][1], k)
        for k in sorted((k for k, span in enumerate(placement.spans) if span is not None), key=key)
    ]
    root: list = []
    stack: list[tuple[int, int, list]] = [(-1, len(translation), root)]  # (element, end, children)
    position = 0

    def text_until(until: int) -> None:
        nonlocal position
        if until > position:
            stack[-1][2].append(translation[position:until])
            position = until

    for start, end, k in order:
        while len(stack) > 1 and not _inside(k, start, end, stack[-1], elements):
            text_until(stack[-1][1])
            stack.pop()
        text_until(start)
        node = Node(k)
        stack[-1][2].append(node)
        if elements[k].kind == VERBATIM and end > start:
            position = max(position, end)  # the token is the element itself
        elif end > start:
            stack.append((k, end, node.children))
    while len(stack) > 1:
        text_until(stack[-1][1])
        stack.pop()
    text_until(len(translation))
    return root


def _inside(k: int, start: int, end: int, top: tuple[int, int, list], elements: list[Inline]) -> bool:
    """Whether the element placed at `start:end` goes inside the open element `top` (which ends at `top[1]`)."""
    if start < top[1] and end <= top[1]:
        return True
    if start == end == top[1]:  # a zero-width element at the open one's end: inside only if it lies in it
        parent = elements[k].parent
        while parent is not None:
            if parent == top[0]:
                return True
            parent = elements[parent].parent
    return False


__all__ = [
    "BLOCK_ELEMENTS",
    "HtmlDocuments",
    "Node",
    "Run",
    "UNTRANSLATED_ELEMENTS",
    "html_text",
    "nest",
    "runs",
    "verbatim",
]
