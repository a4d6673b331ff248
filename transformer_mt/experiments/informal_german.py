"""German translations that address their reader with Sie rewritten to address them with du: the same content in
both registers, which is what a model needs to learn the formality tag from (issue 52).

The en→de corpora's informal pairs are mostly game dialogue, so a model fine-tuned on the pairs as they are predicts
the register from the content and ignores the tag (docs/translation.md, "Formality"). A pair whose target says Sie,
rewritten to say du and tagged `<informal>`, gives the model the same source in both registers.

The rewrite works clause by clause on the words around each `Sie`:

- `VERB Sie` (the verb before it): at a clause's start with a full verb and no question mark, an imperative
  (`Klicken Sie` → `Klicke`, `Geben Sie ... ein` → `Gib ... ein`); otherwise the second person singular
  (`können Sie` → `kannst du`, `Möchten Sie ...?` → `Möchtest du ...?`); after a verb in the third person singular
  (`Lässt Sie`), an object (`dich`);
- `Sie VERB` in a main clause (`Sie können` → `du kannst`); after a conjunction or relative pronoun, the clause's last
  word is its verb (`wenn Sie die Datei speichern` → `wenn du die Datei speicherst`), and a clause that ends in a
  third person singular verb holds Sie as an object (`der Sie fragt` → `der dich fragt`);
- after a preposition, `dich`; `Ihnen` → `dir`; `Ihr...` → `dein...`; `sich` beside a subject Sie → `dich`.

A target whose every `Sie` is not placed by these rules is left out (`informal` returns None), and so is one whose
count of subjects and objects differs from the English's count of "you" (so that `Hier finden Sie` — "here you
find" — is not read as the imperative "find"): the rewrite keeps only what it can check.
"""

import re


_TOKEN = re.compile(r"\w+(?:[-'’]\w+)*|\S")
_BOUNDARIES = frozenset(",;:.!?()–—<>[]{}")
_SENTENCE_ENDS = frozenset(".!?:")
_ENGLISH_YOU = re.compile(r"\byou\b", re.IGNORECASE)
_THIRD_PERSON = re.compile(r"[a-zäöüß]+(?:t|te)")  # lässt, fragt, zeigte: Sie beside it is an object

_SUBORDINATORS = frozenset(
    "wenn dass ob falls sobald bevor nachdem damit während weil da indem wie was wo womit wofür worauf wodurch worin "
    "wohin woher bis als solange sofern soweit obwohl ehe "
    "der die das den dem denen deren dessen welche welcher welches welchen welchem".split()
)
_PREPOSITIONS = frozenset("für an um durch gegen ohne auf über".split())
# pronouns that are a verb's subject before it: a Sie after that verb is its object
_SUBJECTS = frozenset("ich wir er es man sie".split())
# words before a clause's verb that still leave it at the clause's start, for an imperative
_OPENERS = frozenset("bitte und oder aber dann anschließend danach nun jetzt zuerst zunächst abschließend".split())
# words after Sie that end like a verb but are not one
_NOT_VERBS = frozenset(
    "einen keinen diesen jenen jeden allen anderen beiden ihren unseren welchen solchen manchen vielen wenigen "
    "mehreren einigen oben unten eben neben gegen wegen zwischen binnen vorhanden gern dann wann wenn denn man nun "
    "schon ein kein sein den in an von hin zuerst zunächst selbst".split()
)
_AUXILIARIES = {
    "können": "kannst",
    "müssen": "musst",
    "dürfen": "darfst",
    "wollen": "willst",
    "sollen": "sollst",
    "mögen": "magst",
    "möchten": "möchtest",
    "wissen": "weißt",
    "haben": "hast",
    "sind": "bist",
    "sein": "bist",
    "werden": "wirst",
    "tun": "tust",
}
# strong verbs whose second person singular changes the stem's vowel (matched at a word's end, so prefixed verbs
# too: eingeben, erhalten, herunterladen), and their imperative where it changes too
_STRONG = {
    "geben": ("gibst", "gib"),
    "nehmen": ("nimmst", "nimm"),
    "sehen": ("siehst", "sieh"),
    "lesen": ("liest", "lies"),
    "helfen": ("hilfst", "hilf"),
    "sprechen": ("sprichst", "sprich"),
    "brechen": ("brichst", "brich"),
    "vergessen": ("vergisst", "vergiss"),
    "messen": ("misst", "miss"),
    "treffen": ("triffst", "triff"),
    "werfen": ("wirfst", "wirf"),
    "empfehlen": ("empfiehlst", "empfiehl"),
    "befehlen": ("befiehlst", "befiehl"),
    "treten": ("trittst", "tritt"),
    "fahren": ("fährst", None),
    "laufen": ("läufst", None),
    "halten": ("hältst", None),
    "lassen": ("lässt", "lass"),
    "fallen": ("fällst", None),
    "schlafen": ("schläfst", None),
    "tragen": ("trägst", None),
    "fangen": ("fängst", None),
    "schlagen": ("schlägst", None),
    "laden": ("lädst", None),
    "raten": ("rätst", None),
    "stoßen": ("stößt", None),
    "wachsen": ("wächst", None),
}
# regular verbs that end like a strong one
_WEAK_LOOKALIKES = ("schalten", "beantragen", "gestalten", "verwalten")
# the auxiliaries' own imperatives never arise (an auxiliary before Sie is read as a question or statement)
_IMPERATIVES = {"seien": "sei"}
_POSSESSIVES = {f"Ihr{ending}": f"dein{ending}" for ending in ("", "e", "en", "em", "er", "es")}


def _is_verb(word: str) -> bool:
    lower = word.lower()
    return (
        word.isalpha()
        and lower not in _NOT_VERBS
        and (lower in _AUXILIARIES or lower.endswith(("en", "ern", "eln")) or lower == "tun")
    )


def _stem(verb: str) -> str:
    return verb[:-1] if verb.endswith(("ern", "eln")) else verb[:-2]


def _strong(verb: str) -> tuple[str, tuple[str, str | None]] | None:
    if verb.endswith(_WEAK_LOOKALIKES):
        return None
    for base, forms in _STRONG.items():
        if verb.endswith(base):
            return verb[: -len(base)], forms
    return None


def second_person(verb: str) -> str:
    """The second person singular present (or past) of a verb given in its plural form (`speichern` → `speicherst`,
    `können` → `kannst`, `eingeben` → `eingibst`, `hatten` → `hattest`)."""
    lower = verb.lower()
    if lower in _AUXILIARIES:
        return _recase(_AUXILIARIES[lower], verb)
    if strong := _strong(lower):
        prefix, (present, _) = strong
        return _recase(prefix + present, verb)
    stem = _stem(lower)
    if stem.endswith(("s", "ß", "x", "z")):
        return _recase(stem + "t", verb)
    if stem.endswith(("t", "d")) or re.search(r"[^aeiouäöülrhmn][mn]$", stem):
        return _recase(stem + "est", verb)
    return _recase(stem + "st", verb)


def imperative(verb: str) -> str:
    """The informal imperative of a verb given in its infinitive (`klicken` → `klicke`, `geben` → `gib`,
    `sammeln` → `sammle`, `Seien` → `Sei`)."""
    lower = verb.lower()
    if lower in _IMPERATIVES:
        return _recase(_IMPERATIVES[lower], verb)
    if (strong := _strong(lower)) and strong[1][1]:
        return _recase(strong[0] + strong[1][1], verb)
    if lower.endswith("eln"):
        return _recase(lower[:-3] + "le", verb)
    return _recase(_stem(lower) + "e", verb)


def _recase(word: str, like: str) -> str:
    return word[0].upper() + word[1:] if like[0].isupper() else word


def _clause(tokens: list[str], index: int) -> tuple[int, int]:
    """The first and one-past-last token index of the clause around `index`."""
    start = index
    while start > 0 and tokens[start - 1] not in _BOUNDARIES:
        start -= 1
    end = index + 1
    while end < len(tokens) and tokens[end] not in _BOUNDARIES:
        end += 1
    return start, end


def _sentence_is_question(tokens: list[str], index: int) -> bool:
    end = index
    while end < len(tokens) and tokens[end] not in _SENTENCE_ENDS:
        end += 1
    return end < len(tokens) and tokens[end] == "?"


def _at_clause_start(tokens: list[str], start: int, index: int) -> bool:
    return all(token.lower() in _OPENERS for token in tokens[start:index])


def _place_sie(tokens: list[str], i: int, edits: dict[int, str]) -> str | None:
    """Edit the tokens around the formal `Sie` at `i` into the informal ones; the role it had ("subject", "object",
    "imperative"), or None where the rules cannot place it."""
    start, end = _clause(tokens, i)
    before = tokens[i - 1] if i > start else None
    after = tokens[i + 1] if i + 1 < end else None
    if before and before.lower() in _PREPOSITIONS:
        edits[i] = "dich"
        return "object"
    if before and _is_verb(before) and before.lower() not in _SUBORDINATORS:
        if (
            _at_clause_start(tokens, start, i - 1)
            and before.lower() not in _AUXILIARIES
            and not _sentence_is_question(tokens, i)
        ):
            edits[i - 1], edits[i] = imperative(before), ""
            if after == "sich":
                edits[i + 1] = "dich"
            return "imperative"
        if any(token.lower() in _SUBJECTS for token in tokens[start : i - 1]):
            edits[i] = "dich"  # "Wir möchten Sie informieren": the verb has a subject of its own
            return "object"
        edits[i - 1], edits[i] = second_person(before), "du"
        _reflexive(tokens, i, end, edits)
        return "subject"
    if before and _THIRD_PERSON.fullmatch(before.lower()) and before.lower() not in _SUBORDINATORS:
        edits[i] = "dich"
        return "object"
    if before is None or before.lower() in _SUBORDINATORS:
        subordinate = before is not None
        verb = end - 1 if subordinate else i + 1
        if verb <= i or verb >= end:
            return None
        word = tokens[verb]
        if subordinate and any(token in ("und", "oder") for token in tokens[i + 1 : verb]):
            return None
        if _is_verb(word) and (word.islower() or word in _AUXILIARIES):
            edits[verb], edits[i] = second_person(word), "Du" if _starts_sentence(tokens, i) else "du"
            _reflexive(tokens, i, end, edits)
            return "subject"
        if subordinate and _THIRD_PERSON.fullmatch(word):
            edits[i] = "dich"
            return "object"
    return None


def _starts_sentence(tokens: list[str], i: int) -> bool:
    return i == 0 or tokens[i - 1] in _SENTENCE_ENDS


def _reflexive(tokens: list[str], i: int, end: int, edits: dict[int, str]) -> None:
    for j in range(i + 1, min(i + 3, end)):
        if tokens[j] == "sich":
            edits[j] = "dich"


def informal(source: str, target: str) -> str | None:
    """`target` (German, addressing its reader with Sie) rewritten to address them with du; None where a `Sie`
    cannot be placed or the count of addressed readers differs from `source`'s "you"s (module docstring)."""
    spans = [(match.start(), match.end(), match.group()) for match in _TOKEN.finditer(target)]
    tokens = [text for _, _, text in spans]
    edits: dict[int, str] = {}
    addressed = 0
    for i, token in enumerate(tokens):
        if token == "Sie":
            role = _place_sie(tokens, i, edits)
            if role is None:
                return None
            addressed += role != "imperative"
        elif token == "Ihnen":
            edits[i] = _recase("dir", "D") if _starts_sentence(tokens, i) else "dir"
            addressed += 1
        elif token in _POSSESSIVES:
            possessive = _POSSESSIVES[token]
            edits[i] = _recase(possessive, "D") if _starts_sentence(tokens, i) else possessive
    if not edits or addressed != len(_ENGLISH_YOU.findall(source)):
        return None
    return _apply(target, spans, edits)


def _apply(target: str, spans: list[tuple[int, int, str]], edits: dict[int, str]) -> str:
    pieces, last = [], 0
    for index, (start, end, _) in enumerate(spans):
        if index not in edits:
            continue
        pieces.append(target[last:start])
        if edits[index]:
            pieces.append(edits[index])
            last = end
        elif end < len(target) and target[end] == " ":  # a removed word takes the space after it
            last = end + 1
        else:  # or, before punctuation or the end, the space before it ("Bitte warten Sie." -> "Bitte warte.")
            pieces[-1] = pieces[-1].removesuffix(" ")
            last = end
    pieces.append(target[last:])
    return "".join(pieces)
