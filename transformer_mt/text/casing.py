"""Case folding: an ALL CAPS or Title Case sentence shown to the model as the sentence case it was trained on, and
its translation given the source's case back.

A small model trained on sentence-case text reads "RECOVERING JOURNAL." as rare subwords and writes
"REZERGRENZE JOURZ."; folded to "Recovering journal." it translates, and the translation is upper-cased again.
The rules (tuned on the validation splits of data/en-de and en-de-ui):

- "upper": no lower-case letter outside placeholders and URLs, and either two letter runs of two or more letters
  ("FILE NOT FOUND", "WORKDAY.INTL") or one of five or more ("RECOVERING"). One run of two to four letters is an
  acronym ("OK", "USB", "HTML", "ID: %s"): the corpus' upper-case runs inside mixed text are 86% two to four letters.
- "title": not upper, and every word of four or more letters but the small ones (the source language's
  `title_small_words`: English "from", "with", ...) and a first of a sentence (a text ending in ".", "!" or "?")
  begins with a capital, two of them at least ("Restore Last Query", "Start Game"; not "Click Save.", a sentence
  that names a label). In HTML (`fold_sentences(..., titles=False)`) Title Case is left as it is: there it marks
  the UI labels of help text ("Choose <em>Tools - Options</em>"), which the models learned in Title Case; folding
  them cost the markup study's help paragraphs 0.9 BLEU (26.07 against 26.94, the plain text's 26.86). An
  element's own text, translated alone as a hint for where the element goes (`inline`), is folded when it is a
  Title Case label and not a menu path, a key combination or a pair ("Screen Lock", not "Tools - Options",
  "Shift+Enter" or "Load/Save"; `fold_label`): in the markup study that took `span.app` from 74.9 to 85.9 chrF and
  `span.gui` from 56.1 to 60.0, the BLEU cost unchanged.
  A source whose language has no title to tell (`LanguageRules.detects_titles`: German, where every noun begins
  with a capital and "Gespeicherte Dateien" is a noun phrase, and any language without rules of its own) is never
  "title".

`fold` gives both sentence case: an upper text all lower but each sentence's first letter, a title its capitalised
words lower (names such as "KDE" or "AutoCorrect" kept); tokens holding a digit, a placeholder or a URL never
change. Left as it is, a title cost the shipped broader model 40-60% of its BLEU on the validation splits; folded,
1-6% (docs/results/casing/). `restore` upper-cases an upper source's translation outside placeholders and URLs
(ß as SS, as `str.upper` does: Unicode's unconditional mapping, the same in every language); a title's translation
is title-cased again only where the target language writes titles so (`LanguageRules.titles_in_title_case`:
English, each word but the minor ones capitalised) and left as the model wrote it otherwise: German capitalises
nouns, not titles (title-casing it halved the cased BLEU against the German reference), and French and Spanish
titles are written in sentence case. `upper_case` and `title_case` make such texts (training's case augmentation,
the casing study): all caps, or the first letter of every word upper-cased, placeholders and URLs kept. Imports
nothing of the package but `spans`' placeholder pattern and `languages`' rules.
"""

import re

from .languages import LanguageRules
from .spans import PLACEHOLDER


CASES = ("normal", "upper", "title")
URL = re.compile(r"(?i:(?:[a-z][a-z0-9+.-]*://|www\.)\S+|[\w.+-]+@[\w-]+\.[\w.-]+)")
# what case never changes: placeholders (%s, %(name)s, {0}) and URLs and e-mail addresses
PROTECTED = re.compile(f"{PLACEHOLDER.pattern}|{URL.pattern}")
LETTER_RUN = re.compile(r"[^\W\d_]+")
ACRONYM_LETTERS = 4  # one upper-case run this long or shorter is an acronym, not shouting
TITLE_LETTERS = 4  # the words a title capitalises (shorter ones, "of", "and", "to", are left lower by style guides)
SENTENCE_START = re.compile(r"(^|[.!?:]\s+)([^\W\d_])")
TITLE_WORD = re.compile(r"(?<![\w'’])[^\W\d_]+")  # a word: a letter run not after a letter, digit or apostrophe
WORD_START = re.compile(r"(?<![\w'’])[^\W\d_]")  # a letter that begins a word: not after a letter, digit or apostrophe


def _unprotected(text: str) -> str:
    """`text` without its placeholders and URLs (their letters say nothing of the text's case)."""
    return PROTECTED.sub(" ", text)


def case_of(text: str, rules: LanguageRules) -> str:
    """ "upper", "title" or "normal", by the rules of the module docstring (`rules`: the text's language's)."""
    plain = _unprotected(text)
    runs = [run for run in LETTER_RUN.findall(plain) if len(run) >= 2]
    if not any(char.islower() for char in plain) and (
        len(runs) >= 2 or any(len(run) > ACRONYM_LETTERS for run in runs)
    ):
        return "upper"
    if not rules.detects_titles:
        return "normal"
    sentence = plain.rstrip().endswith((".", "!", "?"))  # a sentence's first word is capitalised anyway
    starts = {match.start(2) for match in SENTENCE_START.finditer(plain.lstrip())} if sentence else set()
    shift = len(plain) - len(plain.lstrip())
    words = [
        match[0]
        for match in LETTER_RUN.finditer(plain)
        if len(match[0]) >= TITLE_LETTERS
        and match[0].lower() not in rules.title_small_words
        and match.start() - shift not in starts
    ]
    if len(words) >= 2 and all(word[0].isupper() for word in words):
        return "title"
    return "normal"


def _kept(token: str) -> bool:
    """Whether case folding leaves `token` (a whitespace-separated word) as it is: a digit, a placeholder, a URL."""
    return any(char.isdigit() for char in token) or bool(PROTECTED.search(token))


def _sentence_case(text: str, lower) -> str:
    """`text` with `lower` applied to each letter run outside tokens `_kept` and each sentence's first letter
    upper-cased."""
    tokens = re.split(r"(\s+)", text)
    lowered = "".join(token if _kept(token) else LETTER_RUN.sub(lambda run: lower(run[0]), token) for token in tokens)
    return SENTENCE_START.sub(lambda match: match[1] + match[2].upper(), lowered)


def _capitalised(word: str) -> bool:
    """Whether `word` is written as a title writes a common word ("Visited", "A"), not as a name ("KDE", "AutoCorrect",
    "I")."""
    return word[0].isupper() and (word[1:].islower() or (len(word) == 1 and word != "I"))


MENU_OR_KEYS = re.compile(r" [-–] |\+|/")  # "Tools - Options", "Shift+Enter", "Load/Save": learned as written


def fold_label(text: str, rules: LanguageRules) -> str:
    """An HTML element's own text as the engine sees it alone: a Title Case label folded ("Screen Lock" ->
    "Screen lock"), a menu path, key combination or pair left as written (module docstring; `rules`: the source
    language's)."""
    return fold(text, "title") if case_of(text, rules) == "title" and not MENU_OR_KEYS.search(text) else text


def fold(text: str, case: str) -> str:
    """The text the model should see: sentence case (each sentence's first letter upper) for an "upper" text (every
    other letter lower) and a "title" text (capitalised words lower, names such as "KDE" or "AutoCorrect" kept); a
    "normal" text as it is. Tokens holding a digit, a placeholder or a URL never change."""
    if case == "upper":
        return _sentence_case(text, str.lower)
    if case == "title":
        return _sentence_case(text, lambda word: word.lower() if _capitalised(word) else word)
    return text


def _outside_protected(text: str, change) -> str:
    """`text` with `change` applied to each piece between its placeholders and URLs, those kept as they are."""
    pieces, end = [], 0
    for match in PROTECTED.finditer(text):
        pieces += [change(text[end : match.start()]), match[0]]
        end = match.end()
    return "".join(pieces) + change(text[end:])


def upper_case(text: str) -> str:
    """`text` in ALL CAPS outside its placeholders and URLs ("FILE %s NOT FOUND")."""
    return _outside_protected(text, str.upper)


def title_case(text: str) -> str:
    """`text` with the first letter of every word upper-cased and the rest as it was, placeholders and URLs kept
    ("Far-Reaching Consequences (Development Files)"; `str.title` would lower the rest and capitalise after an
    apostrophe)."""
    return _outside_protected(text, lambda piece: WORD_START.sub(lambda start: start[0].upper(), piece))


def title_again(text: str, minor_words: frozenset[str]) -> str:
    """`text` as a title: the first letter of its first word and of every other word not among `minor_words`
    upper-cased, the rest as it was; placeholders, URLs and tokens holding a digit kept ("Save to file" -> "Save to
    File")."""
    kept = [match.span() for match in PROTECTED.finditer(text)]
    kept += [match.span() for match in re.finditer(r"\S+", text) if any(char.isdigit() for char in match[0])]
    words = [
        match for match in TITLE_WORD.finditer(text) if not any(start <= match.start() < end for start, end in kept)
    ]
    letters = list(text)
    for k, match in enumerate(words):
        if k == 0 or match[0].lower() not in minor_words:
            letters[match.start()] = match[0][0].upper()
    return "".join(letters)


def restore(translation: str, case: str, rules: LanguageRules) -> str:
    """The translation in its source's case (`rules`: the target language's): upper-cased outside placeholders and
    URLs for an "upper" source; title-cased again (`title_again`) for a "title" source where the language writes
    titles so; as the model wrote it otherwise."""
    if case == "upper":
        return upper_case(translation)
    if case == "title" and rules.titles_in_title_case:
        return title_again(translation, rules.title_minor_words)
    return translation


def fold_sentences(sentences: list[str], rules: LanguageRules, titles: bool = True) -> tuple[list[str], list[str]]:
    """Each sentence folded (`fold`), and each one's case (`case_of`, by `rules`: the source language's) for
    `restore_hypotheses`; with `titles` False, a Title Case one is left as it is ("normal")."""
    cases = [case_of(sentence, rules) for sentence in sentences]
    if not titles:
        cases = ["normal" if case == "title" else case for case in cases]
    return [fold(sentence, case) for sentence, case in zip(sentences, cases)], cases


def restore_hypotheses(
    hypotheses: list[list[tuple[str, float | None]]], cases: list[str], rules: LanguageRules
) -> list[list[tuple[str, float | None]]]:
    """Each sentence's hypotheses `(text, score)` restored to that sentence's case (`restore`, by `rules`: the target
    language's), scores kept."""
    return [
        [(restore(text, case, rules), score) for text, score in sentence] for sentence, case in zip(hypotheses, cases)
    ]


__all__ = [
    "CASES",
    "case_of",
    "fold",
    "fold_label",
    "fold_sentences",
    "restore",
    "restore_hypotheses",
    "title_again",
    "title_case",
    "upper_case",
]
