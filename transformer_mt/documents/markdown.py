"""Markdown, translated in place: markdown-it-py (CommonMark with GFM tables and strikethrough) finds each
paragraph, heading and table cell by its source lines, and only the text there is replaced; list markers, heading
markers, block quotes, indentation, blank lines, code, HTML blocks, link reference definitions and front matter
(`---` or `+++` at the top) stay byte for byte.

A block's inline content is one HTML text for `translate_texts(texts, "html")` (one call for the document), so that
each sentence is translated whole and its formatting is put back around its words' translation:

- emphasis by its delimiter (`**` `<b>`, `__` `<strong>`, `*` `<i>`, `_` `<em>`, `~~` `<s>`), written back with the
  same delimiter (whitespace the translation put inside one is moved outside it, an emptied one dropped);
- a link as `<a>` around its text, which is translated; everything after the text (`(target "title")`, `[ref]`) is
  kept as written. A shortcut or collapsed reference link (`[Text]`, `[Text][]`) becomes a full one,
  `[translation][Text]`, so that it still finds its definition;
- inline code, images (their alt text is not translated), autolinks and inline HTML are kept verbatim (a `<code>`
  the engine carries as a placeholder token);
- a hard line break is `<br>`: the text on each side of it is translated on its own and the break is kept where it
  was, in its own style (two spaces or a backslash).

Soft line breaks: a paragraph (between hard breaks) is translated as one text and written back over the same lines,
each line taking a share of the translation proportional to its share of the source, cut at spaces (never inside
code, a link's target or HTML, nor before a word that would start a block: `#`, `>`, `-`, `+`, `*`, `1.`). A line
the translation leaves no word for is dropped. Where code, HTML or a link's target runs over a line end, that
source is written on one line and the paragraph's lines are filled as one (a hard break in it then written `<br>`).
Translated text is escaped where Markdown would read it as markup.
"""

import functools
import html
import re
from html.parser import HTMLParser

from markdown_it import MarkdownIt

from . import Translated
from .text import decode, encode, ending, lines, spread


FRONT_MATTER = re.compile(r"\A(---|\+\+\+)[ \t]*\r?\n.*?^(?:\1|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.DOTALL | re.MULTILINE)
WRAPS = {"**": "b", "__": "strong", "*": "i", "_": "em", "~~": "s"}  # a delimiter -> the HTML element it travels as
DELIMITERS = {tag: delimiter for delimiter, tag in WRAPS.items()}
RECORDED = {"link": "link_open", "image": "image", "autolink": "link_open", "backticks": "code_inline"}
BLOCK_START = re.compile(r"[#>=+*|-]|\d+[.)]|`{3}|~{3}")  # what a line must not begin with inside a paragraph
ESCAPED = re.compile(r"[\\`*\[\]<>]|(?<![^\W_])_|_(?![^\W_])|&(?=#?\w+;)")  # `_` inside a word is no markup


def _recording(rule, kind: str):
    """`rule` (an inline rule of markdown-it) that also records on the token it makes (`kind`) the source it read:
    `meta["source"]`, and for a link with a label, `meta["tail"]`, what follows the label."""

    def recorded(state, silent: bool) -> bool:
        start, count = state.pos, len(state.tokens)
        if not rule(state, silent):
            return False
        if not silent:
            token = next(token for token in state.tokens[count:] if token.type == kind)
            token.meta["source"] = state.src[start : state.pos]
            if kind == "link_open" and state.src[start] == "[":
                label_end = state.md.helpers.parseLinkLabel(state, start, True)
                tail = state.src[label_end + 1 : state.pos]
                token.meta["tail"] = tail if tail not in ("", "[]") else f"[{state.src[start + 1 : label_end]}]"
        return True

    return recorded


@functools.cache
def parser() -> MarkdownIt:
    md = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    rules = {rule.name: rule.fn for rule in md.inline.ruler.__rules__}
    for name, kind in RECORDED.items():
        md.inline.ruler.at(name, _recording(rules[name], kind))
    return md


def _one_line(source: str) -> str:
    """Verbatim source that ran over a line end, on one line: the translation decides where lines end."""
    return re.sub(r"\n[ \t]*", " ", source)


class Block:
    """One paragraph, heading or table cell: its `regions` (line, start, end) in the source, the breaks between
    them ("soft", "hard"), its inline content as HTML, and what the HTML stands in for: link tails, verbatim
    sources."""

    def __init__(self, children: list, regions: list[tuple[int, int, int]], cell: bool):
        self.regions, self.cell = regions, cell
        self.links: list[str] = []
        self.atoms: list[str] = []
        self.breaks: list[str] = []
        self.html = "".join(self._html(children))

    def _html(self, children: list):
        skipping = False  # inside an autolink, kept whole
        for child in children:
            kind = child.type
            if skipping:
                skipping = kind != "link_close"
            elif kind == "text":
                yield html.escape(child.content, quote=False)
            elif kind in ("softbreak", "hardbreak"):
                self.breaks.append(kind[:4])
                yield " " if kind == "softbreak" else "<br>"
            elif kind.endswith(("_open", "_close")) and child.markup in WRAPS:
                yield f"<{'/' if kind.endswith('_close') else ''}{WRAPS[child.markup]}>"
            elif kind == "link_open" and "tail" in child.meta:
                self.links.append(_one_line(child.meta["tail"]))
                yield f'<a href="{len(self.links) - 1}">'
            elif kind == "link_close":
                yield "</a>"
            else:  # inline code, an image, an autolink, inline HTML: kept as written
                skipping = kind == "link_open"
                self.atoms.append(_one_line(child.meta.get("source", child.content)))
                yield f'<code id="{len(self.atoms) - 1}"></code>'

    def groups(self) -> list[list[int]]:
        """The regions between hard breaks (all of them as one where the breaks do not fall at line ends)."""
        if len(self.breaks) != len(self.regions) - 1:
            return [list(range(len(self.regions)))]
        found = [[0]]
        for k, kind in enumerate(self.breaks, start=1):
            found[-1:] = [found[-1] + [k]] if kind == "soft" else [found[-1], [k]]
        return found


class _Markdown(HTMLParser):
    """A translated block's HTML read back into pieces: ("text", s), ("open"/"close", delimiter), ("atom", s),
    ("break", "")."""

    def __init__(self, block: Block):
        super().__init__(convert_charrefs=True)
        self.block, self.pieces, self.tails = block, [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in DELIMITERS:
            self.pieces.append(("open", DELIMITERS[tag]))
        elif tag == "a":
            self.tails.append(self.block.links[int(attrs["href"])])
            if self.pieces and self.pieces[-1][0] == "text" and self.pieces[-1][1].endswith("!"):
                self.pieces[-1] = ("text", self.pieces[-1][1][:-1])  # "!" before "[" would make an image
                self.pieces.append(("atom", "\\!"))
            self.pieces.append(("atom", "["))
        elif tag == "code":
            self.pieces.append(("atom", self.block.atoms[int(attrs["id"])]))
        elif tag == "br":
            self.pieces.append(("break", ""))

    def handle_endtag(self, tag):
        if tag in DELIMITERS:
            self.pieces.append(("close", DELIMITERS[tag]))
        elif tag == "a" and self.tails:
            self.pieces.append(("atom", "]" + self.tails.pop()))

    def handle_data(self, data):
        self.pieces.append(("text", data))


def _tidied(pieces: list) -> list:
    """Emphasis with the whitespace inside its delimiters moved outside, and emptied emphasis dropped."""
    out = []
    for kind, value in pieces:
        if kind == "close" and out and out[-1] == ("open", value):
            out.pop()
            continue
        if kind == "text" and out and out[-1][0] == "open" and value[:1].isspace():
            out.insert(len(out) - 1, ("text", value[: len(value) - len(value.lstrip())]))
            value = value.lstrip()
        if kind == "close" and out and out[-1][0] == "text" and out[-1][1][-1:].isspace():
            text = out.pop()[1]
            out += [("text", text.rstrip()), ("close", value), ("text", text[len(text.rstrip()) :])]
            continue
        out.append((kind, value))
    return out


def render(block: Block, translation: str) -> list[tuple[str, set[int]]]:
    """The Markdown of a block's translation, one string per group of lines between hard breaks, each with the
    indices where it may be cut across lines."""
    reader = _Markdown(block)
    reader.feed(translation)
    reader.close()
    groups = [("", set())]
    for kind, value in _tidied(reader.pieces):
        text, cuts = groups[-1]
        if kind == "break":
            groups.append(("", set()))
            continue
        if kind == "text":
            written = ESCAPED.sub(lambda match: "\\" + match[0], value)
            written = written.replace("|", "\\|") if block.cell else written
            cuts = cuts | {len(text) + match.start() for match in re.finditer(r"\s", written)}
        else:
            written = value
        groups[-1] = (text + written, cuts)
    stripped = []
    for text, cuts in groups:
        lead = len(text) - len(text.lstrip())
        stripped.append((text.strip(), {i - lead for i in cuts}))
    return stripped


def _regions(token, heading: bool, cell: bool, source: list[str], cursor: dict) -> list | None:
    """Where each line of an inline token's content lies in the source: (line, start, end); None where a line
    cannot be found as written (a tab expanded, an escaped pipe in a cell): such a block is left as it is."""
    found = []
    for k, content in enumerate(token.content.split("\n")):
        number = token.map[0] + k
        line, content = source[number][: len(source[number]) - len(ending(source[number]))], content.rstrip()
        if cell or heading:
            marker = re.match(r"[ \t]*#*", line).end() if heading else 0
            start = line.find(content, max(marker, cursor.get(number, 0)))
        else:
            start = len(line.rstrip()) - len(content) if line.rstrip().endswith(content) else -1
        if start < 0 or not content:
            return None
        cursor[number] = start + len(content)
        found.append((number, start, start + len(content)))
    return found


def blocks(tokens: list, source: list[str]) -> list[Block]:
    """The blocks of a parsed document that hold text to translate, in document order."""
    found, cursor = [], {}
    for before, token in zip(tokens, tokens[1:]):
        if token.type != "inline" or not token.children or token.map is None:
            continue
        if not any(child.type == "text" and child.content.strip() for child in token.children):
            continue
        cell = before.type in ("th_open", "td_open")
        heading = before.type == "heading_open" and before.markup.startswith("#")
        regions = _regions(token, heading, cell, source, cursor)
        if regions is None:
            continue
        block = Block(token.children, regions, cell)
        for k, kind in enumerate(block.breaks):  # a backslash hard break stays on its line, outside the text
            number, start, end = block.regions[k]
            if kind == "hard" and len(block.breaks) == len(regions) - 1 and source[number][end - 1] == "\\":
                block.regions[k] = (number, start, end - 1)
        found.append(block)
    return found


def _breakable(text: str, cuts: set[int]):
    return lambda i: i in cuts and not BLOCK_START.match(text[i:].lstrip())


def _written(block: Block, translation: str) -> list[str]:
    """What each of a block's regions becomes."""
    rendered, groups = render(block, translation), block.groups()
    if len(rendered) != len(groups):  # a break the translation lost or added: written inline as HTML
        text = "<br>".join(text for text, _ in rendered)
        rendered, groups = [(text, {i for i, char in enumerate(text) if char.isspace()})], [sum(groups, [])]
    written = [""] * len(block.regions)
    for (text, cuts), group in zip(rendered, groups):
        lengths = [block.regions[k][2] - block.regions[k][1] for k in group]
        for k, piece in zip(group, spread(text, lengths, _breakable(text, cuts))):
            written[k] = piece
    return written


def translate(data: bytes, translate_texts) -> Translated:
    """A Markdown file translated in place, in one call."""
    text, bom = decode(data, "markdown")
    source = lines(text)
    front = FRONT_MATTER.match(text)
    hidden = len(lines(front[0])) if front else 0
    parsed = parser().parse("".join(ending(line) for line in source[:hidden]) + "".join(source[hidden:]))
    found = blocks(parsed, source)
    translations = translate_texts([block.html for block in found], "html") if found else []
    edits: dict[int, list] = {}
    for block, translation in zip(found, translations, strict=True):
        for k, ((number, start, end), piece) in enumerate(zip(block.regions, _written(block, translation))):
            edits.setdefault(number, []).append((start, end, piece, k == 0))
    out = []
    for number, line in enumerate(source):
        for start, end, piece, first in sorted(edits.get(number, []), reverse=True):
            if not piece and not first and len(edits[number]) == 1:
                line = None  # a line the translation left no word for
                break
            line = line[:start] + piece + line[end:]
        if line is not None:
            out.append(line)
    return Translated(encode("".join(out), bom), len(found))


__all__ = ["Block", "blocks", "parser", "render", "translate"]
