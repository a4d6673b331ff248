"""How `/v2/translate` reads DeepL's text parameters: `text`, `split_sentences`, `preserve_formatting`,
`tag_handling` with `ignore_tags`, the booleans as DeepL's clients write them, and the parameters the server refuses
by name (`REFUSED`).

Markup (`tag_handling` html or xml) is translated as the package's HTML (`options.format = "html"`): its text
translated, its tags kept. An element of `ignore_tags` is taken out whole before, as a placeholder `{k}` (a protected
span, `text.spans`: kept byte for byte by the model or put back by the span repair), and put back after exactly as it
was written: Weblate's `<x id="12"></x>` comes back byte for byte. An element whose placeholder the translation lost
all the same is put at its end, so that none is ever dropped.
"""

import re

from ..lengths import input_limit
from ..text.spans import TOKEN
from .fields import RequestError


TAG_HANDLINGS = ("html", "xml")
# nonewlines: newlines read as spaces, punctuation splits; "0": each text read whole, as one sentence (a CAT tool's
# segment), though the models were trained on single sentences
SPLITS = ("0", "1", "nonewlines")
# DeepL's parameters this server does not implement: a request naming one is refused, never half-applied
REFUSED = {
    "non_splitting_tags": "the markup's own elements decide where sentences end",
    "splitting_tags": "the markup's own elements decide where sentences end",
    "outline_detection": "the markup's own elements decide where sentences end",
    "tag_handling_version": "one tag handling is implemented",
    "glossary_ids": "give one glossary as glossary_id",
    "style_id": "style rules are not implemented",
    "translation_memory_id": "translation memories are not implemented (accepted /suggest answers are)",
    "translation_memory_threshold": "translation memories are not implemented",
    "custom_instructions": "custom instructions are not implemented",
}
MODEL_TYPES = ("prefer_quality_optimized",)  # a preference: one model serves each pair; the others are refused
ENDS = ".!?。！？"


def flag(fields: dict, name: str, default: bool) -> bool:
    """A boolean parameter as DeepL's clients send it: true/false, 1/0, "1"/"0", "true"/"false"."""
    value = fields.get(name)
    if value is None or value == "":
        return default
    shown = str(value).lower()
    if shown in ("1", "true"):
        return True
    if shown in ("0", "false"):
        return False
    raise RequestError(f"Value for '{name}' not supported: {value!r} (0, 1, true or false)")


def refuse_unimplemented(fields: dict) -> None:
    """A 400 naming the first parameter of `REFUSED` the request gives, and why."""
    for name, why in REFUSED.items():
        if fields.get(name) not in (None, "", []):
            raise RequestError(f"Parameter '{name}' is not supported by this server: {why}")
    model_type = fields.get("model_type")
    if model_type not in (None, "") and model_type not in MODEL_TYPES:
        raise RequestError(
            f"Value for 'model_type' not supported: {model_type!r}; this server has one model a pair "
            f"({', '.join(MODEL_TYPES)} is accepted)"
        )


def texts_of(fields: dict, limits) -> list[str]:
    """`text`: one or more texts; a 400 when missing or not texts, a 413 over the server's limits."""
    given = fields.get("text")
    texts = given if isinstance(given, list) else [given] if given is not None else []
    if not texts:
        raise RequestError("Parameter 'text' not specified")
    if not all(isinstance(text, str) for text in texts):
        raise RequestError(f"Parameter 'text' must be a text or a list of texts, got {given!r}")
    if len(texts) > limits.batch_limit:
        raise RequestError(f"Request Entity Too Large: {len(texts)} texts (at most {limits.batch_limit})", 413)
    characters = sum(map(len, texts))
    if characters > limits.char_limit:
        raise RequestError(f"Request Entity Too Large: {characters} characters (at most {limits.char_limit})", 413)
    return texts


def split_of(fields: dict, tag_handling: str | None) -> str:
    """`split_sentences` as one of `SPLITS` (DeepL's default: "1", "nonewlines" with tag_handling)."""
    value = fields.get("split_sentences")
    if value is None or value == "":
        return "nonewlines" if tag_handling else "1"
    value = str(value).lower()
    if value not in SPLITS:
        raise RequestError(f"Value for 'split_sentences' not supported: {value!r} (0, 1 or nonewlines)")
    return value


def check_whole(texts: list[str], tokenizer) -> None:
    """`split_sentences=0` reads each text whole: one longer than the model reads at once (the tokenizer's limit)
    is a 400 naming it, never cut."""
    limit = input_limit(tokenizer)
    for number, text in enumerate(texts if limit is not None else []):
        count = len(tokenizer(text)["input_ids"])
        if count > limit:
            raise RequestError(
                f"Value for 'split_sentences' not supported for text {number}: '0' reads each text whole, and it has "
                f"{count} tokens where the model reads at most {limit} (send it with 1 or nonewlines)"
            )


def tags_of(fields: dict) -> tuple[str | None, list[str]]:
    """`tag_handling` (None: plain text) and `ignore_tags` (a list, or one comma-separated text)."""
    tag_handling = fields.get("tag_handling") or None
    if tag_handling is not None and tag_handling not in TAG_HANDLINGS:
        raise RequestError(f"Value for 'tag_handling' not supported: {tag_handling!r} (html or xml)")
    given = fields.get("ignore_tags") or []
    names = [part.strip() for item in ([given] if isinstance(given, str) else given) for part in str(item).split(",")]
    names = [name for name in names if name]
    if names and tag_handling is None:
        raise RequestError("Parameter 'ignore_tags' applies to markup: give tag_handling html or xml")
    for name in names:
        if not re.fullmatch(r"[A-Za-z_][\w.:-]*", name):
            raise RequestError(f"Value for 'ignore_tags' not supported: {name!r} is not an element name")
    return tag_handling, names


def take_out(text: str, names: list[str]) -> tuple[str, list[tuple[str, str]]]:
    """`text` with each element named in `names` (`<x .../>`, or `<x ...>...</x>` whole) replaced by a placeholder
    `{k}` (k skipping the numbers the text writes as `{n}` itself), and the (placeholder, element) pairs."""
    if not names:
        return text, []
    alternatives = "|".join(re.escape(name) for name in names)
    element = re.compile(rf"<({alternatives})(?:\s[^<>]*?)?(?:/>|>.*?</\1\s*>)", re.DOTALL)
    taken = {int(number) for number in TOKEN.findall(text)}
    free = (k for k in range(len(text) + len(taken) + 1) if k not in taken)
    pairs = []

    def replaced(match) -> str:
        pairs.append((f"{{{next(free)}}}", match[0]))
        return pairs[-1][0]

    return element.sub(replaced, text), pairs


def put_back(translation: str, pairs: list[tuple[str, str]]) -> str:
    """`translation` with each placeholder of `take_out` replaced by its element; an element whose placeholder it
    lost put at its end."""
    lost = []
    for token, element in pairs:
        if token in translation:
            translation = translation.replace(token, element)
        else:
            lost.append(element)
    return translation + "".join(lost)


def keep_format(source: str, translation: str) -> str:
    """`preserve_formatting`: the translation begins with a letter of the source's first letter's case, and ends
    with the source's final punctuation mark (or none where the source has none)."""
    if source[:1].isalpha() and translation[:1].isalpha() and source[0].islower() != translation[0].islower():
        first = translation[0].lower() if source[0].islower() else translation[0].upper()
        translation = first + translation[1:]
    source_end = source.rstrip()[-1:]
    stripped = translation.rstrip()
    if source_end in ENDS and stripped[-1:] not in ENDS:
        translation = stripped + source_end + translation[len(stripped) :]
    elif source_end and source_end not in ENDS and stripped[-1:] in ENDS:
        translation = stripped[:-1] + translation[len(stripped) :]
    return translation


__all__ = [
    "MODEL_TYPES",
    "REFUSED",
    "SPLITS",
    "TAG_HANDLINGS",
    "flag",
    "keep_format",
    "put_back",
    "refuse_unimplemented",
    "check_whole",
    "split_of",
    "tags_of",
    "take_out",
    "texts_of",
]
