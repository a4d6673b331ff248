"""OpenDocument presentations (.odp) translated in place, as .odt is (`documents.odt`'s paragraphs): the paragraphs
of every slide in content.xml (text boxes, shapes, tables, lists) and of its speaker notes (`presentation:notes`),
the footer and header texts slides declare (`presentation:footer-decl`, `header-decl`), and the text master pages
show on every slide (styles.xml); each paragraph translated as one text, its styled spans and links carried through.

Not translated: the master pages' placeholders (`presentation:placeholder="true"`: a frame the slide fills, whose
text is the template's prompt), comments, fields (a slide number, a date), shapes' names and alternative text, the
metadata (meta.xml). Pictures, styles and every other member are written back as they were; `mimetype` stays the
first member, stored.
"""

import re

from lxml import etree

from . import Translated, TranslateTexts
from .odt import PARAGRAPHS, STYLE, UNTRANSLATED, OdfParagraph
from .packages import Format, mimetype_check, translate_package


PRESENTATION = "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0"
DECLARED = (f"{{{PRESENTATION}}}footer-decl", f"{{{PRESENTATION}}}header-decl")  # text a slide shows by its name
PLACEHOLDER = f"{{{PRESENTATION}}}placeholder"
MASTER_PAGE = f"{{{STYLE}}}master-page"
MIMETYPE = "application/vnd.oasis.opendocument.presentation"  # also -template


def paragraphs(root: etree._Element):
    """The paragraphs of content.xml and the declared footers and headers; in styles.xml, those of the master
    pages outside their placeholders."""
    styles = etree.QName(root).localname == "document-styles"
    for element in root.iter(*PARAGRAPHS, *DECLARED):
        ancestors = list(element.iterancestors())
        if {ancestor.tag for ancestor in ancestors} & UNTRANSLATED:
            continue
        if styles and (
            all(ancestor.tag != MASTER_PAGE for ancestor in ancestors)
            or any(ancestor.get(PLACEHOLDER) == "true" for ancestor in ancestors)
        ):
            continue
        yield element


FORMAT = Format(
    name="odp",
    main="content.xml",
    parts=re.compile(r"content\.xml|styles\.xml"),
    paragraphs=paragraphs,
    paragraph=OdfParagraph,  # a declared footer's text reads as a paragraph's
    check=mimetype_check("odp", MIMETYPE, "a presentation"),
)


def translate(data: bytes, translate_texts: TranslateTexts) -> Translated:
    """An .odp file's text translated in one call to `translate_texts(fragments, "html")`."""
    return translate_package(data, translate_texts, FORMAT)


__all__ = ["FORMAT", "translate"]
