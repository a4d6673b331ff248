"""Formal and informal address: which register a translation addresses its reader in, by the target language's
pronouns, and the source-side tags that ask a model for one (side constraints, Sennrich, Haddow and Birch 2016).

A pair is labelled only where the English side addresses the reader ("you", "your", ...) and the other side uses
one register's words and not the other's; everything else is unlabelled. The words are the language's own:

- German: formal `Sie`, `Ihnen`, `Ihr...` written with a capital inside a sentence (at its start `Sie` may be
  "they"), informal `du`, `dich`, `dir`, `dein...`, `euch`, `euer`, `eure...`;
- French: formal `vous`, `votre`, `vos`; informal `tu`, `te`, `t'`, `toi`, `ton`, `ta`, `tes`;
- Spanish: formal `usted`, `ustedes`, `desea`, `quiere` and the formal imperatives of UI text (`pulse`, `haga`,
  `seleccione`, ...); informal `tú`, `tu`, `tus`, `te`, `ti`, `contigo`, `tuyo...`, the second person's `-s` forms
  (`quieres`, `puedes`, ...) and the informal imperatives (`pulsa`, `haz`, `selecciona`, ...).

A language without a row has no register to tell: nothing is labelled, and a model of it learns no tag.
"""

import re


FORMAL, INFORMAL = "formal", "informal"
TAGS = {FORMAL: "<formal>", INFORMAL: "<informal>"}

# an English text that addresses its reader
ADDRESSES_READER = re.compile(r"\byou(?:rs?|rself|rselves)?\b", re.IGNORECASE)

# per language: (formal words, informal words); case-sensitive where the capital carries the register (German)
REGISTER_WORDS = {
    "de": (
        re.compile(r"(?<=[^\s.!?:]\s)(?:Sie|Ihnen|Ihre?[mnrs]?)\b|\b(?:Ihnen|Ihre[mnrs]?)\b"),
        re.compile(r"\b(?:[Dd]u|[Dd]ich|[Dd]ir|[Dd]ein(?:e[mnrs]?)?|[Ee]uch|[Ee]uer|[Ee]ure[mnrs]?)\b"),
    ),
    "fr": (
        re.compile(r"\b(?:vous|votre|vos|vôtres?)\b", re.IGNORECASE),
        re.compile(r"\b(?:tu|te|toi|ton|ta|tes|tiens?|tiennes?)\b|\bt['’](?=\w)", re.IGNORECASE),
    ),
    "es": (
        re.compile(
            r"\b(?:usted|ustedes|desea|quiere|pulse|haga|seleccione|introduzca|compruebe|asegúrese|"
            r"escriba|elija|intente|espere)\b",
            re.IGNORECASE,
        ),
        re.compile(
            r"\b(?:tú|tu|tus|te|ti|contigo|tuy[oa]s?|deseas|quieres|puedes|tienes|debes|estás|eres|"
            r"pulsa|haz|selecciona|introduce|comprueba|asegúrate|escribe|elige|intenta|espera)\b",
            re.IGNORECASE,
        ),
    ),
}


def register(english: str, text: str, language: str) -> str | None:
    """The register ("formal" or "informal") in which `text`, in `language`, addresses the reader that `english`
    addresses; None where `english` addresses no one, the language has no register words, or `text` uses both
    registers' words or neither's."""
    words = REGISTER_WORDS.get(language)
    if words is None or not ADDRESSES_READER.search(english):
        return None
    formal, informal = (bool(pattern.search(text)) for pattern in words)
    if formal == informal:
        return None
    return FORMAL if formal else INFORMAL


def has_register_words(language: str) -> bool:
    """Whether `language` addresses its reader in two registers that `register` tells apart."""
    return language in REGISTER_WORDS
