"""OpenDocument text (.odt) translated in place: the paragraphs and headings of content.xml (lists, tables,
frames and text boxes, footnotes and endnotes included) and the headers and footers of styles.xml; each paragraph
translated as one text, its styled spans (`text:span`) and links (`text:a`) carried through.

A paragraph's mixed content maps onto the fragment as it stands: its text is text, a span or a link with text a
`Formatting` (a span holding spaces only is its text), anything else (a tab, a line break, a note, a frame, a field, a
bookmark) a `Code` kept as it is; a run of spaces (`text:s`) reads as one space, as HTML reads it.

Not translated: comments (`office:annotation`), tracked deletions, the document's metadata (meta.xml). Styles
(but for their headers and footers), pictures and every other member are written back as they were.
"""

import re

from lxml import etree

from . import Translated, TranslateTexts
from .packages import Code, Format, Formatting, fill, has_text, mimetype_check, translate_package


TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
STYLE = "urn:oasis:names:tc:opendocument:xmlns:style:1.0"
TABLE = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"
PARAGRAPHS = (f"{{{TEXT}}}p", f"{{{TEXT}}}h")
SPAN, LINK, SPACE = f"{{{TEXT}}}span", f"{{{TEXT}}}a", f"{{{TEXT}}}s"
UNTRANSLATED = {f"{{{OFFICE}}}annotation", f"{{{TEXT}}}tracked-changes"}  # comments, deleted text
PAGE_MARGINALS = {
    f"{{{STYLE}}}{name}" for name in ("header", "footer", "header-left", "footer-left", "header-first", "footer-first")
}
MIMETYPE = "application/vnd.oasis.opendocument.text"  # also -template, -master, -master-template


class OdfParagraph:
    """One `text:p` or `text:h`: its `nodes` read, and written back from translated ones."""

    def __init__(self, element: etree._Element):
        self.element = element
        self.nodes = self._content(element)

    def _content(self, parent: etree._Element) -> list:
        nodes = [parent.text or ""]
        for child in parent:
            if child.tag == SPACE:
                nodes.append(" ")
            elif child.tag in (SPAN, LINK):
                content = self._content(child)
                if has_text(content):
                    nodes.append(Formatting(child, content))
                elif child.tag == SPAN:  # a style on spaces (or on a tab, a frame) only: the paragraph's text
                    nodes += content
                else:
                    nodes.append(Code([child]))
            else:
                nodes.append(Code([child]))
            nodes.append(child.tail or "")
        return nodes

    def write(self, nodes: list) -> None:
        cell = self.element.getparent()
        if cell is not None and cell.tag == f"{{{TABLE}}}table-cell":  # its value would still be the source text
            cell.attrib.pop(f"{{{OFFICE}}}string-value", None)
        self.element.text = None
        for child in list(self.element):
            self.element.remove(child)
        fill(self.element, nodes)


def paragraphs(root: etree._Element):
    """The paragraphs and headings of content.xml, and those in the page headers and footers of styles.xml."""
    marginal = etree.QName(root).localname == "document-styles"
    for element in root.iter(*PARAGRAPHS):
        ancestors = {ancestor.tag for ancestor in element.iterancestors()}
        if not ancestors & UNTRANSLATED and (not marginal or ancestors & PAGE_MARGINALS):
            yield element


FORMAT = Format(
    name="odt",
    main="content.xml",
    parts=re.compile(r"content\.xml|styles\.xml"),
    paragraphs=paragraphs,
    paragraph=OdfParagraph,
    check=mimetype_check("odt", MIMETYPE, "a text document"),
)


def translate(data: bytes, translate_texts: TranslateTexts) -> Translated:
    """An .odt file's text translated in one call to `translate_texts(fragments, "html")`."""
    return translate_package(data, translate_texts, FORMAT)


__all__ = ["FORMAT", "OdfParagraph", "translate"]
