"""Word documents (.docx) translated in place: the paragraphs of the body (tables and text boxes included), the
headers and footers, the footnotes and endnotes; each paragraph's runs translated as one text, their formatting and
links carried through (`documents.runs`).

Not translated: comments (word/comments.xml, a reviewer's notes to the author, not the document's text), charts
and SmartArt (parts of their own); fields (a page number, a date, a cross-reference: their result is the field's
to update), deleted text, content controls and math inside a paragraph, each kept whole where the sentence puts it.
Styles, numbering, settings, media and every other member are written back as they were.
"""

import re

from . import Translated, TranslateTexts
from .packages import Format, translate_package
from .runs import WORDPROCESSING


FORMAT = Format(
    name="docx",
    main="word/document.xml",
    parts=re.compile(r"word/(document|header\d*|footer\d*|footnotes|endnotes)\.xml"),
    paragraphs=lambda root: root.iter(WORDPROCESSING.tag("p")),  # a text box's paragraphs sit inside one
    paragraph=WORDPROCESSING.paragraph,
)


def translate(data: bytes, translate_texts: TranslateTexts) -> Translated:
    """A .docx file's text translated in one call to `translate_texts(fragments, "html")`."""
    return translate_package(data, translate_texts, FORMAT)


__all__ = ["FORMAT", "translate"]
