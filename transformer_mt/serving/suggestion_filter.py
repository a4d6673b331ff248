"""Whether a suggested translation may teach the server: the filters that refuse garbage by name before a suggestion
is stored as acceptable.

A correction is by definition a pair the model scores low, so its score alone says little: it is judged against a
baseline, the model's own translation of the same source (`margin`: the suggestion's length-normalised
log-probability minus the model's own translation's, both from the engine's `score_pairs`). Before the model is
asked, two checks that need none: the length ratio of s to q (`LENGTH_RATIO`, with `LENGTH_SLACK` characters added
to both sides so that short texts are not judged by a ratio of a few letters) and s's language (py3langid, only for
an s of `LANGUAGE_MIN_CHARS` or more letters: shorter texts, a label or a name, are left to the model's score).
The thresholds were tuned on data/en-de's validation split and measured on its test split by
`transformer_mt.experiments.suggestion_study` (docs/serving.md, "Suggestions"). For another language pair
(`Thresholds.for_pair`) the length band moves with the characters each language takes per English one
(`LanguageRules.length_vs_english`: a German-to-English server's corrections are shorter than their sources, an
English-to-German's longer), and is off where a language has no rules of its own (Chinese takes a fraction of
English's characters); the marks that end a sentence are each language's (`LanguageRules.sentence_ends`).
"""

import collections
import dataclasses

from ..options import TranslationOptions
from ..text.languages import DE, EN, LATIN_SENTENCE_ENDS, LanguageRules, Languages, languages_of
from ..translation import translate_texts
from .languages import detect, language_name


# s is refused when its length (characters, plus LENGTH_SLACK on both sides) is outside these times q's: the bounds
# that refused the fewest real corrections for the most garbage on the validation split (an F1 grid search); most
# doubled outputs and half-truncated ones fall outside, a real correction of a short label ("OK" -> "Bestätigen")
# stays inside thanks to the slack.
LENGTH_RATIO = (0.7, 2.0)
LENGTH_SLACK = 10
# Language identification only for an s with at least LANGUAGE_MIN_CHARS letters (below it py3langid's guess is
# noise: "Standdauer" is Welsh to it). Under LANGUAGE_SHORT_CHARS letters the target need only be among its two
# likeliest languages ("Neues Design": Catalan, then German); from there on it must be the likeliest.
LANGUAGE_MIN_CHARS = 10
LANGUAGE_SHORT_CHARS = 40
# A doubled output: s writes a run of REPEAT_WORDS words (fewer for a short s: half its words) twice where q repeats
# none. Real German corrections of the validation split did so once in 190 (a source that repeated itself too).
REPEAT_WORDS = 4
# A truncated output: q ends a sentence (SENTENCE_ENDS) and s does not (nor with an ellipsis or a closing quote after
# one). No real correction of the validation split was refused by it.
SENTENCE_ENDS = LATIN_SENTENCE_ENDS  # the filled languages'; each language's in LanguageRules.sentence_ends
# s is refused when its per-token log-probability is more than MARGIN below the model's own translation's. Real
# corrections of sentences the model gets wrong sit within about 3 nats per token of the model's own choice;
# "aaaaaa", text in another language or German about something else sit 4-9 below. Tuned with the bounds above.
MARGIN = 3.0


TUNED_ON = Languages(EN, DE)  # the pair the constants above were tuned on


@dataclasses.dataclass(frozen=True)
class Thresholds:
    """The filters' settings: the constants above by default; the study tunes them on a validation split.
    `length_ratio` None: no length check."""

    length_ratio: tuple[float, float] | None = LENGTH_RATIO
    length_slack: int = LENGTH_SLACK
    language_min_chars: int = LANGUAGE_MIN_CHARS
    language_short_chars: int = LANGUAGE_SHORT_CHARS
    margin: float = MARGIN
    repeat_words: int = REPEAT_WORDS

    def for_pair(self, languages: Languages) -> "Thresholds":
        """These settings (tuned on TUNED_ON's pair) for `languages`: the length band times the pair's expected
        length ratio over TUNED_ON's (`LanguageRules.length_vs_english`), or no band where either language's is not
        known."""
        source, target = languages.source.length_vs_english, languages.target.length_vs_english
        if source is None or target is None or self.length_ratio is None:
            return dataclasses.replace(self, length_ratio=None)
        shift = (target / source) / (TUNED_ON.target.length_vs_english / TUNED_ON.source.length_vs_english)
        low, high = self.length_ratio
        return dataclasses.replace(self, length_ratio=(round(low * shift, 2), round(high * shift, 2)))


def length_ratio(numbers: dict, slack: int = LENGTH_SLACK) -> float:
    return (numbers["s_chars"] + slack) / (numbers["q_chars"] + slack)


def repeated(text: str, words: int, doubling: frozenset[str] = frozenset()) -> str | None:
    """A run of `words` words (half the text's, when shorter) that `text` writes twice or more, lower-cased; a word
    of `doubling` (its language's, `LanguageRules.doubling`: French "Vous vous connectez") written exactly twice
    does not count."""
    tokens = text.casefold().split()
    n = min(words, len(tokens) // 2)
    if n < 1:
        return None
    counts = collections.Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))
    return next(
        (
            " ".join(run)
            for run, count in counts.items()
            if count >= 2 and not (n == 1 and count == 2 and run[0] in doubling)
        ),
        None,
    )


def ends_sentence(text: str, rules: LanguageRules) -> bool:
    """Whether `text` ends a sentence (`rules`: its language's marks, or an ellipsis), a closing quote or bracket
    after one (French sets a space inside its guillemets: "« Fichier enregistré. »")."""
    return text.strip().rstrip("\"'”“»«) \u00a0\u202f").endswith((*rules.sentence_ends, "…"))


def text_numbers(q: str, s: str, languages: Languages, repeat_words: int = REPEAT_WORDS) -> dict:
    """What the checks that need no model read: both lengths, s's letters, its likeliest language, what it repeats
    (where q repeats nothing) and whether it ends a sentence that q ends (each by its language's marks:
    `languages`)."""
    ranked = detect(s, 2)
    return {
        "q_chars": len(q.strip()),
        "s_chars": len(s.strip()),
        "letters": sum(c.isalpha() for c in s),
        "languages": [found["language"] for found in ranked],
        "language_confidence": ranked[0]["confidence"],
        "repeats": None
        if repeated(q, repeat_words, languages.source.doubling)
        else repeated(s, repeat_words, languages.target.doubling),
        "unfinished": bool(q.strip()[-1:])
        and q.strip()[-1:] in languages.source.sentence_ends
        and not ends_sentence(s, languages.target),
    }


def text_reason(numbers: dict, target: str, thresholds: Thresholds = Thresholds()) -> str | None:
    """Why the checks that need no model refuse a suggestion, or None."""
    ratio = length_ratio(numbers, thresholds.length_slack)
    low, high = thresholds.length_ratio or (0, float("inf"))
    if not low <= ratio <= high:
        return (
            f"s is {ratio:.2f} times as long as q; a translation is {low}-{high} times as long (counting "
            f"{thresholds.length_slack} more characters on each side)"
        )
    if numbers["letters"] >= thresholds.language_min_chars:
        likeliest = numbers["languages"][: 1 if numbers["letters"] >= thresholds.language_short_chars else 2]
        if target not in likeliest:
            return f"s is not {language_name(target)} (detected: {numbers['languages'][0]})"
    if numbers["repeats"]:
        return f"s repeats itself ({numbers['repeats']!r} twice) where q does not"
    if numbers["unfinished"]:
        return f"s stops before the end of the sentence (q ends with {SENTENCE_ENDS} and s does not)"
    return None


def own_translations(engine, sources: list[str], target: str, batch_size: int = 32) -> list[str]:
    """The model's own translation of each source, whole (one sentence), without the guards."""
    options = TranslationOptions(split_sentences=False, guards=False, target_lang=target, batch_size=batch_size)
    return [text[0][0] if text else "" for text in translate_texts(engine, sources, options)]


def model_numbers(
    engine, pairs: list[tuple[str, str]], target: str, own: list[str] | None = None, batch_size: int = 32
) -> list[dict]:
    """Per (q, s): s's per-token log-probability given q (`score`), the model's own translation's (`own_score`;
    `own` gives those translations where they are known), and their difference (`margin`)."""
    sources = [q for q, _ in pairs]
    own = own_translations(engine, sources, target, batch_size) if own is None else own
    own = [text if text.strip() else "." for text in own]  # score_pairs needs text on both sides
    scores = engine.score_pairs(sources * 2, own + [s for _, s in pairs], batch_size=batch_size)
    own_scores, given = scores[: len(pairs)], scores[len(pairs) :]
    return [
        {
            "score": round(mine.per_token, 4),
            "own_score": round(theirs.per_token, 4),
            "margin": round(mine.per_token - theirs.per_token, 4),
        }
        for mine, theirs in zip(given, own_scores)
    ]


def model_reason(numbers: dict, thresholds: Thresholds = Thresholds()) -> str | None:
    """Why the model's scores refuse a suggestion, or None."""
    if numbers["margin"] < -thresholds.margin:
        return (
            f"s is unlikely as a translation of q: {numbers['score']:.2f} per token against "
            f"{numbers['own_score']:.2f} for the model's own translation (at most {thresholds.margin} below)"
        )
    return None


def judge_suggestion(
    engine, q: str, s: str, source: str, target: str, thresholds: Thresholds = Thresholds()
) -> tuple[str | None, dict]:
    """(the reason a suggestion of `s` for `q`, from `source` into `target`, is refused, or None when it passes;
    every number the filters read). `thresholds` are for TUNED_ON's pair, moved to this one (`for_pair`); the
    model is asked only when the text checks pass."""
    languages = languages_of(None, source, target)
    thresholds = thresholds.for_pair(languages)
    numbers = text_numbers(q, s, languages, thresholds.repeat_words)
    reason = text_reason(numbers, target, thresholds)
    if reason is None:
        numbers.update(model_numbers(engine, [(q, s)], target)[0])
        reason = model_reason(numbers, thresholds)
    return reason, numbers


__all__ = [
    "LANGUAGE_MIN_CHARS",
    "LANGUAGE_SHORT_CHARS",
    "LENGTH_RATIO",
    "LENGTH_SLACK",
    "MARGIN",
    "REPEAT_WORDS",
    "SENTENCE_ENDS",
    "TUNED_ON",
    "Thresholds",
    "ends_sentence",
    "judge_suggestion",
    "length_ratio",
    "model_numbers",
    "model_reason",
    "own_translations",
    "repeated",
    "text_numbers",
    "text_reason",
]
