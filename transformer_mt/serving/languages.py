"""Language names and language identification for the server.

Identification is py3langid's (a maintained fork of langid.py: 142 languages, its model shipped in the package as
a compressed numpy archive, no pickle), with normalised probabilities. LibreTranslate's `detectedLanguage` gives a
confidence from 0 to 100; below `CONFIDENT` (short posts, names, a word or two) the server assumes the source
language of the model asked for instead of trusting a guess.
"""

import functools


CONFIDENT = 50.0  # percent
# ISO 639-1 names for the languages a model is likely to be trained on; any other code is shown as itself.
NAMES = {
    "ar": "Arabic",
    "bg": "Bulgarian",
    "ca": "Catalan",
    "cs": "Czech",
    "da": "Danish",
    "de": "German",
    "el": "Greek",
    "en": "English",
    "es": "Spanish",
    "et": "Estonian",
    "fi": "Finnish",
    "fr": "French",
    "ga": "Irish",
    "he": "Hebrew",
    "hi": "Hindi",
    "hu": "Hungarian",
    "id": "Indonesian",
    "it": "Italian",
    "ja": "Japanese",
    "ko": "Korean",
    "lt": "Lithuanian",
    "lv": "Latvian",
    "nb": "Norwegian Bokmål",
    "nl": "Dutch",
    "pl": "Polish",
    "pt": "Portuguese",
    "ro": "Romanian",
    "ru": "Russian",
    "sk": "Slovak",
    "sl": "Slovenian",
    "sv": "Swedish",
    "th": "Thai",
    "tr": "Turkish",
    "uk": "Ukrainian",
    "vi": "Vietnamese",
    "zh": "Chinese",
}


def language_name(code: str) -> str:
    return NAMES.get(code, code)


@functools.cache
def _identifier():
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def detect(text: str, candidates: int = 3) -> list[dict]:
    """The most likely languages of `text`, best first: `{"confidence": 0-100, "language": code}` (LibreTranslate's
    /detect answer)."""
    ranked = _identifier().rank(text)[:candidates]
    return [{"confidence": round(100.0 * float(probability), 2), "language": code} for code, probability in ranked]


def warm_up() -> None:
    """Load the identifier's model now (about a second), not on the first request."""
    _identifier()
