"""EPUB 2 and 3 books (.epub) translated in place: META-INF/container.xml names the package document (the OPF),
whose spine lists the content documents in reading order; each XHTML content document in the spine is translated,
and so are the navigation document (EPUB 3's nav) and the NCX (EPUB 2's table of contents), so that the table of
contents says what the translated headings say, and the book's `dc:title` and `dc:description`.

An XHTML document is parsed as XML (its namespaces, DOCTYPE and XML declaration kept) and taken apart into runs of
inline content as `format="html"` takes HTML apart (`text.markup`): block elements (`<p>`, `<li>`, `<div>`,
`<td>`, ...), `<br>` and `<pre>` end a run; each run with text is one paragraph for the engine, its inline elements
(`<a>`, `<em>`, `<span>`, ...) a `Formatting` rebuilt around their words' translation, and what is not text (an
image, a page-break marker, an empty anchor, `<code>`, anything `translate="no"`, SVG or MathML, a comment) a `Code`
kept as it is where the sentence puts it. A named entity the DOCTYPE would define (`&nbsp;`) is its character.

Not translated: `<pre>`, `<code>`, `<script>` and `<style>`; attributes (alternative text included); content
documents outside the spine; the other metadata. `dc:language` and the documents' `xml:lang` stay as they are:
`translate_texts` does not know the target language. Images, fonts, CSS and every other member are written back
byte for byte; `mimetype` stays the first member, stored.
"""

import dataclasses
import html
import posixpath
import re
from urllib.parse import unquote

from lxml import etree

from ..text.markup import BLOCK_ELEMENTS, BREAKS, UNTRANSLATED_ELEMENTS
from . import FormatError, Translated, TranslateTexts
from .packages import (
    Code,
    Format,
    Formatting,
    fill,
    has_text,
    mimetype_check,
    open_package,
    parse_part,
    translate_package,
)


CONTAINER = "META-INF/container.xml"
CONTAINER_NS = "urn:oasis:names:tc:opendocument:xmlns:container"
OPF = "http://www.idpf.org/2007/opf"
DC = "http://purl.org/dc/elements/1.1/"
NCX = "http://www.daisy.org/z3986/2005/ncx/"
XHTML = "http://www.w3.org/1999/xhtml"
PACKAGE_TYPE = "application/oebps-package+xml"
XHTML_TYPE = "application/xhtml+xml"
NCX_TYPE = "application/x-dtbncx+xml"
METADATA = (f"{{{DC}}}title", f"{{{DC}}}description")
LABELS = (f"{{{NCX}}}navLabel", f"{{{NCX}}}docTitle")  # not docAuthor: a name
MIMETYPE = "application/epub+zip"


def html_name(element) -> str | None:
    """An XHTML element's name (also one in no namespace, as some EPUB 2 books write them); None for an element
    of another language (SVG, MathML, EPUB's own), a comment, an entity."""
    if not isinstance(element.tag, str):
        return None
    name = etree.QName(element)
    return name.localname.lower() if name.namespace in (XHTML, None) else None


def untranslated(element) -> bool:
    """Whether `element` is kept as it is (`<code>`, `<pre>`, `<script>`, ..., or `translate="no"`)."""
    translate = element.get("translate") if isinstance(element.tag, str) else None
    return html_name(element) in UNTRANSLATED_ELEMENTS or (translate or "").lower() == "no"


def ends_run(element) -> bool:
    """Whether `element` ends a run of inline content: a block, a break, `<pre>`, or an element holding a block or
    a break."""
    if html_name(element) in BLOCK_ELEMENTS | BREAKS | {"pre"}:
        return True
    return not untranslated(element) and any(
        html_name(descendant) in BLOCK_ELEMENTS | BREAKS for descendant in element.iterdescendants()
    )


@dataclasses.dataclass(frozen=True)
class Run:
    """A run of inline content in `parent`: the text after `after` (a child that ended the run before; None: the
    parent's own text), then `children` (inline elements and codes, each with its tail)."""

    parent: etree._Element
    after: etree._Element | None
    children: tuple


def runs(container: etree._Element):
    """The runs of inline content in `container` and in every block inside it, in document order."""
    pending, after = [], None
    for child in container:
        if ends_run(child):
            yield Run(container, after, tuple(pending))
            if html_name(child) not in BREAKS and not untranslated(child):
                yield from runs(child)
            pending, after = [], child
        else:
            pending.append(child)
    yield Run(container, after, tuple(pending))


class MarkupParagraph:
    """One run of XHTML (or the text of a metadata or NCX element): its `nodes` read, and written back in its
    place from translated ones."""

    def __init__(self, run: Run):
        self.run = run
        first = run.parent.text if run.after is None else run.after.tail
        self.nodes = [first or ""] + self._content(run.children)

    def _content(self, children) -> list:
        nodes = []
        for child in children:
            if isinstance(child, etree._Entity) and html.unescape(child.text) != child.text:
                nodes.append(html.unescape(child.text))  # an HTML entity no DTD was read to define
            elif html_name(child) is None or untranslated(child):
                nodes.append(Code([child]))
            else:
                content = [child.text or ""] + self._content(child)
                nodes.append(Formatting(child, content) if has_text(content) else Code([child]))
            nodes.append(child.tail or "")
        return nodes

    def write(self, nodes: list) -> None:
        parent, after = self.run.parent, self.run.after
        for child in self.run.children:
            parent.remove(child)
        holder = etree.SubElement(parent, parent.tag)  # in the tree, so that new elements use its namespaces
        fill(holder, nodes)
        if after is None:
            parent.text = holder.text
        else:
            after.tail = holder.text
        at = 0 if after is None else parent.index(after) + 1
        for k, element in enumerate(list(holder)):
            parent.insert(at + k, element)
        parent.remove(holder)


def paragraphs(root: etree._Element):
    """The runs of an XHTML document; the title and description of the package document; an NCX's labels."""
    if root.tag == f"{{{OPF}}}package":
        texts = root.iter(*METADATA)
    elif root.tag == f"{{{NCX}}}ncx":
        texts = (text for text in root.iter(f"{{{NCX}}}text") if text.getparent().tag in LABELS)
    else:
        yield from runs(root)
        return
    yield from (Run(text, None, tuple(text)) for text in texts)


FORMAT = Format(
    name="epub",
    main=CONTAINER,
    parts=re.compile(""),  # the package document and its content documents: found by `translated_parts`
    paragraphs=paragraphs,
    paragraph=MarkupParagraph,
    check=mimetype_check("epub", MIMETYPE, "an EPUB"),
)


def translated_parts(package) -> list[str]:
    """The members translated: the package document (the container's first rootfile), the XHTML documents of its
    spine, its navigation document and its NCX."""
    rootfiles = parse_part(package, CONTAINER, "epub").iter(f"{{{CONTAINER_NS}}}rootfile")
    found = [file.get("full-path") for file in rootfiles if file.get("media-type", PACKAGE_TYPE) == PACKAGE_TYPE]
    if not found or not found[0]:
        raise FormatError("epub", f"{CONTAINER} names no package document (a rootfile of type {PACKAGE_TYPE})")
    opf = found[0]
    if opf not in package.namelist():
        raise FormatError("epub", f"no package document {opf} in the package, where {CONTAINER} names it")
    root = parse_part(package, opf, "epub")
    items = {item.get("id"): item for item in root.iter(f"{{{OPF}}}item")}
    spine = root.find(f"{{{OPF}}}spine")
    wanted = []
    for ref in [] if spine is None else spine.iter(f"{{{OPF}}}itemref"):
        if ref.get("idref") not in items:
            raise FormatError("epub", f"the spine's itemref {ref.get('idref')!r} is in no manifest item of {opf}")
        wanted.append(items[ref.get("idref")])
    wanted = [item for item in wanted if item.get("media-type") == XHTML_TYPE]
    wanted += [item for item in items.values() if "nav" in (item.get("properties") or "").split()]
    wanted += [item for item in items.values() if item.get("media-type") == NCX_TYPE]
    names = [
        posixpath.normpath(posixpath.join(posixpath.dirname(opf), unquote(item.get("href", "")))) for item in wanted
    ]
    for name in names:
        if name not in package.namelist():
            raise FormatError("epub", f"{opf} lists {name}, which is not in the package")
    return list(dict.fromkeys([opf, *names]))


def translate(data: bytes, translate_texts: TranslateTexts) -> Translated:
    """An .epub file's text translated in one call to `translate_texts(fragments, "html")`."""
    parts = translated_parts(open_package(data, FORMAT.name, FORMAT.main))
    format = dataclasses.replace(FORMAT, parts=re.compile("|".join(map(re.escape, parts))))
    return translate_package(data, translate_texts, format)


__all__ = ["FORMAT", "MarkupParagraph", "translate"]
