"""Formal and informal address: which register a translation addresses its reader in, by the target language's
pronouns, and the source-side tags that ask a model for one (side constraints, Sennrich, Haddow and Birch 2016).

A pair is labelled only where the source addresses the reader (English "you", "your", ...; in German, French or
Spanish either register's words: `LanguageRules.addresses_reader`) and the target uses one register's words and not
the other's (`LanguageRules.register_words`); everything else is unlabelled. The words are the language's own:

- German: formal `Sie`, `Ihnen`, `Ihr...` written with a capital inside a sentence (at its start `Sie` may be
  "they"), informal `du`, `dich`, `dir`, `dein...`, `euch`, `euer`, `eure...`;
- French: formal `vous`, `votre`, `vos`; informal `tu`, `te`, `t'`, `toi`, `ton`, `ta`, `tes`;
- Spanish: formal `usted`, `ustedes`, `desea`, `quiere` and the formal imperatives of UI text (`pulse`, `haga`,
  `seleccione`, ...); informal `tú`, `tu`, `tus`, `te`, `ti`, `contigo`, `tuyo...`, the second person's `-s` forms
  (`quieres`, `puedes`, ...) and the informal imperatives (`pulsa`, `haz`, `selecciona`, ...).

A language without register words (English, and every language without rules of its own) has no register to tell:
nothing is labelled, and a model of it learns no tag. The words live in `text.languages`' tables.
"""

from .languages import TABLES, rules_for


FORMAL, INFORMAL = "formal", "informal"
TAGS = {FORMAL: "<formal>", INFORMAL: "<informal>"}

# per language: (formal words, informal words); case-sensitive where the capital carries the register (German)
REGISTER_WORDS = {code: rules.register_words for code, rules in TABLES.items() if rules.register_words}


def register(source: str, text: str, language: str, source_language: str = "en") -> str | None:
    """The register ("formal" or "informal") in which `text`, in `language`, addresses the reader that `source`, in
    `source_language`, addresses; None where `source` addresses no one (or its language's rules cannot tell), the
    target language has no register words, or `text` uses both registers' words or neither's."""
    words, reader = rules_for(language).register_words, rules_for(source_language).addresses_reader
    if words is None or reader is None or not reader.search(source):
        return None
    formal, informal = (bool(pattern.search(text)) for pattern in words)
    if formal == informal:
        return None
    return FORMAL if formal else INFORMAL


def has_register_words(language: str) -> bool:
    """Whether `language` addresses its reader in two registers that `register` tells apart."""
    return language in REGISTER_WORDS
