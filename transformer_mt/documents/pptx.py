"""PowerPoint presentations (.pptx) translated in place: the paragraphs of every slide (shapes, text boxes,
tables, grouped shapes) and of its speaker notes; each paragraph's runs translated as one text, their formatting
and links (DrawingML keeps a link in a run's properties) carried through (`documents.runs`).

Not translated: slide layouts and masters, whose text is the template's prompt ("Click to add title"), shown
only where a slide does not fill the placeholder; charts and SmartArt (parts of their own); slide-number and date
fields. Media, themes and every other member are written back as they were.
"""

import re

from . import Translated, TranslateTexts
from .packages import Format, translate_package
from .runs import DRAWING


FORMAT = Format(
    name="pptx",
    main="ppt/presentation.xml",
    parts=re.compile(r"ppt/(slides/slide|notesSlides/notesSlide)\d+\.xml"),
    paragraphs=lambda root: root.iter(DRAWING.tag("p")),
    paragraph=DRAWING.paragraph,
)


def translate(data: bytes, translate_texts: TranslateTexts) -> Translated:
    """A .pptx file's text translated in one call to `translate_texts(fragments, "html")`."""
    return translate_package(data, translate_texts, FORMAT)


__all__ = ["FORMAT", "translate"]
