"""A short UI label tried in other forms, for when a model gives it back as it was ("Summary", "Breadcrumbs",
"Latvian"): a small model often reads a capitalised word alone as a name, and translates the same word lower-cased
or without the punctuation around it ("Summary:", "&Lookup..."). `label_forms` gives the forms, `as_label` a form's
translation in the label's case with the punctuation back. A language that begins every noun with a capital
(`LanguageRules.capitalises_nouns`: German) is never tried lower-cased ("datei" is no German word) and, as the
target, keeps the model's case. Imports nothing of the package but `casing`, `languages` and `spans`.
"""

import dataclasses
import re

from .casing import case_of, upper_case
from .languages import NEUTRAL, LanguageRules
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


def label_forms(label: str, rules: LanguageRules) -> list[LabelForm]:
    """The forms a copied label is tried in, in order, each once and none the label as it was: capitalised,
    lower-cased and, for a label of at most LABEL_WORDS words, its words alone (capitalised, lower-cased) without
    the punctuation at its edges; in a language that capitalises its nouns (`rules`: the label's language's), only
    its words alone, as written. None for a text without letters or with a placeholder, URL or number (kept as
    written)."""
    label = label.strip()
    if not re.search(r"[^\W\d_]", label) or protected_spans(label) or any(char.isdigit() for char in label):
        return []
    before, words, after = _EDGES.match(label).groups()
    alone = len(words.split()) <= LABEL_WORDS and (before or after)
    if rules.capitalises_nouns:
        forms = [LabelForm(words, before, after)] if alone else []
    else:
        forms = [LabelForm(label.capitalize()), LabelForm(label.lower())]
        if alone:
            forms += [LabelForm(words.capitalize(), before, after), LabelForm(words.lower(), before, after)]
    found = []
    for form in forms:
        if form.text and form.text != label and form not in found:
            found.append(form)
    return found


def as_label(label: str, form: LabelForm, translation: str, rules: LanguageRules) -> str:
    """A form's `translation` as the label's (`rules`: the translation's language's): the edge punctuation the form
    left out put back, then ALL CAPS for an ALL CAPS label, a capital first letter for a label that begins with
    one; for a label that begins lower-case, the model's case where the language capitalises its nouns (German
    writes them with a capital whatever the English label did), else the first word lower-cased when it is a
    common word capitalised ("Résumé" for "summary", not "USB")."""
    text = form.before + translation.strip() + form.after
    start = len(form.before)
    if case_of(label, NEUTRAL) == "upper" or (label.isupper() and len(label.strip()) > 1):
        return upper_case(text)
    if label.strip()[:1].isupper():
        return text[:start] + text[start : start + 1].upper() + text[start + 1 :]
    first = re.match(r"[^\W\d_]+", text[start:])
    if not rules.capitalises_nouns and label.strip()[:1].islower() and first and _common(first[0]):
        return text[:start] + text[start : start + 1].lower() + text[start + 1 :]
    return text


def _common(word: str) -> bool:
    """Whether `word` is written as a sentence begins a common word: a capital, then lower-case letters only."""
    return word[:1].isupper() and (word[1:].islower() or len(word) == 1)


__all__ = ["LABEL_WORDS", "LabelForm", "as_label", "label_forms"]
