"""Language rules as data: every rule of the steps around the engine, the guards and the suggestion filter that
depends on a language, as one frozen `LanguageRules` table per language (`rules_for`).

English, German, French and Spanish have tables of their own; every other language gets `NEUTRAL`, rules that
assume nothing of the language, and `rules_for` says so in one warning per language and process. A rule about a
model's output reads the target language's table, a rule about its input the source language's (`languages_of`:
the model config's `source_lang` and `target_lang`, or the options' where given). docs/translation.md, "Rules per
language", lists the fields and how to add a language. Imports nothing of the package.
"""

import dataclasses
import logging
import re


logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class LanguageRules:
    """One language's rules; `code` is "" for NEUTRAL."""

    code: str
    # casing (text.casing), the source's table: whether a run of capitalised words can be told as a title (German
    # capitalises every noun, so "Gespeicherte Dateien" is a plain noun phrase), and the words of TITLE_LETTERS or
    # more letters a title leaves lower
    detects_titles: bool
    title_small_words: frozenset[str]
    # casing, the target's table: whether a title's translation is title-cased again (English titles are; German,
    # French and Spanish ones are written in sentence case), and the words it then leaves lower but as its first
    titles_in_title_case: bool
    title_minor_words: frozenset[str]
    # labels (text.labels): whether the language begins every noun with a capital, so that a label's translation
    # keeps the model's case (target) and a label is not tried lower-cased (source)
    capitalises_nouns: bool
    # the loop guard (quality.repetition) and the suggestion filter's repeat check: words that may stand exactly
    # twice in a row in a correct sentence
    doubling: frozenset[str]
    # glossary (text.glossary.term_used): a word of the text is a form of a term's word when it begins with that
    # word less its last `stem_cut` letters (at least `stem_min` kept) and is at most `form_extra` letters longer
    stem_cut: int
    stem_min: int
    form_extra: int
    # formality (text.formality): (formal, informal) words of the target, the source's words that address the reader
    register_words: tuple[re.Pattern, re.Pattern] | None
    addresses_reader: re.Pattern | None
    # suggestion filter (serving.suggestion_filter): the marks that end a sentence, and the characters a text takes
    # per English character (measured: its characters over English's in data/en-xx's and en-xx-ui's validation
    # splits together, 3,000 pairs)
    sentence_ends: str
    length_vs_english: float | None

    @property
    def known(self) -> bool:
        """Whether this is a language's own table, not NEUTRAL."""
        return bool(self.code)


_DE_REGISTER = (
    re.compile(r"(?<=[^\s.!?:]\s)(?:Sie|Ihnen|Ihre?[mnrs]?)\b|\b(?:Ihnen|Ihre[mnrs]?)\b"),
    re.compile(r"\b(?:[Dd]u|[Dd]ich|[Dd]ir|[Dd]ein(?:e[mnrs]?)?|[Ee]uch|[Ee]uer|[Ee]ure[mnrs]?)\b"),
)
_FR_REGISTER = (
    re.compile(r"\b(?:vous|votre|vos|vôtres?)\b", re.IGNORECASE),
    re.compile(r"\b(?:tu|te|toi|ton|ta|tes|tiens?|tiennes?)\b|\bt['’](?=\w)", re.IGNORECASE),
)
_ES_REGISTER = (
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
)


def _either(words: tuple[re.Pattern, re.Pattern]) -> re.Pattern:
    """A pattern that finds either register's words (a text in that language that addresses its reader)."""
    formal, informal = words
    return re.compile(f"(?:{formal.pattern})|(?:{informal.pattern})", formal.flags & informal.flags)


LATIN_SENTENCE_ENDS = ".!?:"

EN = LanguageRules(
    code="en",
    detects_titles=True,
    title_small_words=frozenset(
        {"from", "with", "into", "onto", "over", "than", "that", "this", "upon", "when", "your"}
    ),
    titles_in_title_case=True,
    # articles, coordinating conjunctions and prepositions, lower in a title (The Chicago Manual of Style, 8.159)
    title_minor_words=frozenset(
        {"a", "an", "the", "and", "but", "or", "nor", "for", "so", "yet", "as", "at", "by", "in", "of", "off", "on"}
        | {"per", "to", "up", "via", "vs", "from", "with", "into", "onto", "over", "than", "upon"}
    ),
    capitalises_nouns=False,
    doubling=frozenset({"that", "had"}),  # "so that that works", "had had a chance" (data/en-de's English side)
    stem_cut=1,  # a final e or y changes: "save" -> "saving", "library" -> "libraries"; "folding" is not "folder"
    stem_min=4,
    form_extra=3,  # "-ing", "-ies"
    register_words=None,  # English has one "you"
    addresses_reader=re.compile(r"\byou(?:rs?|rself|rselves)?\b", re.IGNORECASE),
    sentence_ends=LATIN_SENTENCE_ENDS,
    length_vs_english=1.0,
)
DE = LanguageRules(
    code="de",
    detects_titles=False,  # every noun has a capital: a German label looks like a title
    title_small_words=frozenset(),
    titles_in_title_case=False,  # title-casing the German translations halved their cased BLEU (text.casing)
    title_minor_words=frozenset(),
    capitalises_nouns=True,
    doubling=frozenset({"die", "der", "das", "den", "dem", "des", "sie", "es"}),  # article then relative pronoun
    stem_cut=2,  # case and plural endings: "Datei" -> "Dateien", "Ordner" -> "Ordnern"
    stem_min=4,
    form_extra=3,
    register_words=_DE_REGISTER,  # formal Sie/Ihnen/Ihr... with a capital inside a sentence; du, dich, dein, euch...
    addresses_reader=_either(_DE_REGISTER),
    sentence_ends=LATIN_SENTENCE_ENDS,
    length_vs_english=1.17,
)
FR = LanguageRules(
    code="fr",
    detects_titles=True,  # nouns are lower-case: capitalised runs are titles (or names, which folding keeps)
    title_small_words=frozenset(
        {"avec", "dans", "pour", "sans", "sous", "vers", "chez", "entre", "depuis", "selon", "contre", "leur", "leurs"}
        | {"votre", "notre", "cette", "mais", "donc", "puis", "dont"}
    ),
    titles_in_title_case=False,  # French titles capitalise their first word and names only
    title_minor_words=frozenset(),
    capitalises_nouns=False,
    doubling=frozenset({"nous", "vous"}),  # a reflexive verb's pronouns: "vous vous connectez", "nous nous sommes"
    stem_cut=2,  # "-er", "-al" change: "enregistrer" -> "enregistrés", "journal" -> "journaux"
    stem_min=4,
    form_extra=3,
    register_words=_FR_REGISTER,  # formal vous, votre, vos; informal tu, te, toi, ton, ta, tes
    addresses_reader=_either(_FR_REGISTER),
    sentence_ends=LATIN_SENTENCE_ENDS,
    length_vs_english=1.22,
)
ES = LanguageRules(
    code="es",
    detects_titles=True,
    title_small_words=frozenset(
        {"para", "desde", "entre", "hacia", "hasta", "sobre", "contra", "según", "como", "pero", "este", "esta"}
        | {"estos", "estas", "unos", "unas", "durante", "mediante"}
    ),
    titles_in_title_case=False,  # Spanish titles capitalise their first word and names only
    title_minor_words=frozenset(),
    capitalises_nouns=False,
    doubling=frozenset({"y"}),  # the letter Y, then "y" (and): "los ejes Y y Z" (data/en-es)
    stem_cut=2,  # "-ón" loses its accent: "función" -> "funciones"; "guardar" -> "guardado"
    stem_min=4,
    form_extra=3,
    register_words=_ES_REGISTER,  # formal usted and the formal imperatives; informal tú, te, the -s forms
    addresses_reader=_either(_ES_REGISTER),
    sentence_ends=LATIN_SENTENCE_ENDS,
    length_vs_english=1.18,
)
NEUTRAL = LanguageRules(
    code="",
    detects_titles=False,  # capitals may be nouns (as German's) or names: a title cannot be told
    title_small_words=frozenset(),
    titles_in_title_case=False,  # the model's case kept
    title_minor_words=frozenset(),
    capitalises_nouns=False,
    doubling=frozenset(),  # a word written twice is a loop
    stem_cut=0,  # a term's words are used only as written (case-insensitive)
    stem_min=0,
    form_extra=0,
    register_words=None,
    addresses_reader=None,
    sentence_ends=LATIN_SENTENCE_ENDS + "。！？।؟",  # what ends a sentence in Chinese, Japanese, Hindi, Arabic too
    length_vs_english=None,  # a language may take a fraction of English's characters (Chinese) or more: no band
)
TABLES = {rules.code: rules for rules in (EN, DE, FR, ES)}

_warned: set[str] = set()


def rules_for(language: str | None) -> LanguageRules:
    """The rules of `language`, a code such as "de" ("de-AT" and "de_AT" read as "de"); NEUTRAL for a language
    without a table of its own, or None (no language known), with one warning per language and process."""
    if language is not None and (not isinstance(language, str) or not language.strip()):
        raise ValueError(f"language must be a language code such as 'de' (or None), got {language!r}")
    code = re.split(r"[-_]", language)[0].lower() if language else None
    if code in TABLES:
        return TABLES[code]
    if language not in _warned:
        _warned.add(language)
        said = f"the language {language!r} has no rules of its own" if language else "no language is known"
        logger.warning(
            f"{said}: neutral rules are used (no Title Case told or given back, no grammatical doubling, glossary "
            f"terms matched as written; transformer_mt.text.languages)"
        )
    return NEUTRAL


@dataclasses.dataclass(frozen=True)
class Languages:
    """The rules of a model's two languages: `source` for what it reads, `target` for what it writes."""

    source: LanguageRules
    target: LanguageRules


def languages_of(config, source_lang: str | None = None, target_lang: str | None = None) -> Languages:
    """The rules of the languages a model translates between: `source_lang` and `target_lang` where given (the
    options', for a model of several targets), else the model config's."""
    return Languages(
        rules_for(source_lang or getattr(config, "source_lang", None)),
        rules_for(target_lang or getattr(config, "target_lang", None)),
    )


__all__ = ["DE", "EN", "ES", "FR", "LanguageRules", "Languages", "NEUTRAL", "TABLES", "languages_of", "rules_for"]
