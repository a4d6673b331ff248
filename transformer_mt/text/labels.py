"""A short UI label tried in other forms, for when a model gives it back as it was ("Summary", "Breadcrumbs",
"Latvian"): a small model often reads a capitalised word alone as a name, and translates the same word lower-cased
or without the punctuation around it ("Summary:", "&Lookup..."). `label_forms` gives the forms, `as_label` a form's
translation in the label's case with the punctuation back. Imports nothing of the package but `casing` and
`spans`.
"""

import dataclasses
import re

from .casing import case_of, upper_case
from .spans import protected_spans


LABEL_WORDS = 2  # a label of at most this many words is also tried as its words alone
_EDGES = re.compile(r"^(\W*)(.*?)(\W*)$", re.DOTALL)  # a label's edge punctuation and symbols, and its words


@dataclasses.dataclass(frozen=True)
class LabelForm:
    """A form of a label, as the engine is shown it (`text`), and the label's edge punctuation it left out, given
    back around its translation (`before`, `after`)."""

    text: str
    before: str = ""
    after: str = ""


def label_forms(label: str) -> list[LabelForm]:
    """The forms a copied label is tried in, in order, each once and none the label as it was: capitalised,
    lower-cased and, for a label of at most LABEL_WORDS words, its words alone (capitalised, lower-cased) without
    the punctuation at its edges. None for a text without letters or with a placeholder, URL or number (kept as
    written)."""
    label = label.strip()
    if not re.search(r"[^\W\d_]", label) or protected_spans(label) or any(char.isdigit() for char in label):
        return []
    forms = [LabelForm(label.capitalize()), LabelForm(label.lower())]
    before, words, after = _EDGES.match(label).groups()
    if len(words.split()) <= LABEL_WORDS and (before or after):
        forms += [LabelForm(words.capitalize(), before, after), LabelForm(words.lower(), before, after)]
    found = []
    for form in forms:
        if form.text and form.text != label and form not in found:
            found.append(form)
    return found


def as_label(label: str, form: LabelForm, translation: str) -> str:
    """A form's `translation` as the label's: the edge punctuation the form left out put back, then ALL CAPS for an
    ALL CAPS label, a capital first letter for a label that begins with one, the model's case otherwise (German
    writes nouns with a capital whatever the English label did)."""
    text = form.before + translation.strip() + form.after
    if case_of(label) == "upper" or (label.isupper() and len(label.strip()) > 1):
        return upper_case(text)
    if label.strip()[:1].isupper():
        start = len(form.before)
        return text[:start] + text[start : start + 1].upper() + text[start + 1 :]
    return text


__all__ = ["LABEL_WORDS", "LabelForm", "as_label", "label_forms"]
