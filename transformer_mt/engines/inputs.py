"""What every engine and every entry of the batch API share around decoding: texts split into the sentences an
engine sees and the hypotheses joined back (`split_texts`, `join_hypotheses`), length-sorted batches
(`length_batches`), and the inputs' limits with their warnings and refusals (`warn_long_inputs`,
`check_positions`, `warn_unended`), which every engine runs first on the sentences it is given (`checked_inputs`),
with the register tag and the context the options ask for (`source_rows`), which given pairs are scored and aligned
with too (`pair_scores`, `alignment`).

A context (`options.context`) is read by a model trained with it as each sentence's second segment (`sentence </s>
context </s>`, segment ids 1 on the context, as training encodes it) and counts toward the input's length; where the
two do not fit in the tokenizer's limit the sentence is read alone, with a warning naming it, as training leaves such
a context out (never cut). A model trained without context reads no context, with one warning a call. A register
(`options.formality`) is the tag a model trained with them (`config.formality_tags`) reads first (after a
`source_prefix`); `more` or `less` on any other model is refused, `prefer_*` falls back to its own choice.

A sentence longer than the tokenizer's `model_max_length` is cut there with a warning naming it, as every engine
cuts it. A sentence or a length bound past a learned position table is refused in one line that names the sentence
or `max_new_tokens`: such a model has no positions to read or write them with.
"""

import logging
from collections.abc import Iterable

from ..lengths import input_limit
from ..options import OptionError, TranslationOptions
from ..tags import source_language_token
from ..text import sentences
from ..text.formality import FORMAL, INFORMAL, TAGS


logger = logging.getLogger(__name__)

Hypotheses = list[tuple[str, float | None]]  # one text's or sentence's translations, best first: (text, score)
Layout = list[tuple[range, list[str]]]  # per text: where its sentences lie in the flat list, and their separators


def default_names(count: int) -> list[str]:
    """Warnings' names for `count` sentences given without names: 1, 2, ..."""
    return [str(number) for number in range(1, count + 1)]


def length_batches(lengths: list[int], batch_size: int) -> list[list[int]]:
    """Indices into `lengths`, sorted by length and cut into batches of `batch_size`: little padding per batch."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]


def warn_long_inputs(lengths: list[int], names: list[str], limit: int | None) -> None:
    """Name every sentence longer than `limit` tokens: it is cut there (every engine cuts it the same way)."""
    for name, length in zip(names, lengths):
        if limit is not None and length > limit:
            logger.warning(
                f"Text {name} has {length} tokens; only its first {limit} are translated (the model's "
                "limit, tokenizer.model_max_length)."
            )


def check_positions(
    lengths: list[int],
    names: list[str],
    limit: int | None,
    input_positions: int | None,
    output_positions: int | None,
    max_new_tokens: int | None,
) -> None:
    """Refuse, naming it, a sentence (as cut at `limit`) longer than the encoder's `input_positions`, or a
    `max_new_tokens` past the decoder's `output_positions` (its start token takes one); None: any length."""
    if output_positions is not None and max_new_tokens is not None and max_new_tokens + 1 > output_positions:
        raise OptionError(
            "max_new_tokens",
            f"{max_new_tokens} is more than this model can write: its decoder's "
            f"position table has {output_positions} rows, so at most "
            f"{output_positions - 1} new tokens",
        )
    for name, length in zip(names, lengths):
        if input_positions is not None and min(length, limit or length) > input_positions:
            raise ValueError(
                f"Text {name} has {length} tokens and this model reads at most {input_positions} (its "
                "position table): shorten it, or split it into sentences"
            )


def register_tag(config, options: TranslationOptions) -> str | None:
    """The tag of the register `options.formality` asks a model of `config` for (None: the model chooses); `more`
    or `less` of a model trained without the tags is an OptionError."""
    if options.formality == "default":
        return None
    if not getattr(config, "formality_tags", False):
        if options.formality in ("more", "less"):
            raise OptionError(
                "formality",
                f"{options.formality!r} needs a model trained with the register tags "
                f"(--formality_share), and this one has none: ask for "
                f"prefer_{options.formality} (the model's own register) or default",
            )
        return None
    return TAGS[FORMAL if options.formality.endswith("more") else INFORMAL]


def reads_context(config, options: TranslationOptions) -> bool:
    """Whether a model of `config` reads `options.context` (warned about once a call when it cannot)."""
    if options.context is None:
        return False
    if not getattr(config, "source_context", False):
        logger.warning("This model was not trained with context (--context_column): the context is not read.")
        return False
    return True


def shown_sources(tokenizer, config, sentences: list[str], options: TranslationOptions) -> list[str]:
    """`sentences` begun with the tag of the register `options.formality` asks for (`register_tag`), after
    `options.source_prefix` where a sentence begins with it, and, for an imported Opus-MT model of several targets,
    with the token of `options.target_lang` before all (`tags.source_language_token`): the first segment of each row
    the model reads."""
    tag, prefix = register_tag(config, options), options.source_prefix
    language = source_language_token(config, tokenizer, options.target_lang)
    if tag is not None:
        sentences = [
            f"{prefix} {tag} {sentence[len(prefix) + 1 :]}"
            if prefix and sentence.startswith(f"{prefix} ")
            else f"{tag} {sentence}"
            for sentence in sentences
        ]
    return sentences if language is None else [f"{language} {sentence}" for sentence in sentences]


def source_encoding(
    tokenizer,
    config,
    sentences: list[str],
    options: TranslationOptions,
    names: list[str],
    limit: int | None,
    offsets: bool = False,
) -> dict[str, list]:
    """`source_rows` as lists by name: `input_ids`, `token_type_ids` (only where the model reads the context) and,
    with `offsets` (a fast tokenizer's), `offset_mapping`: each token's characters in its sentence as shown
    (`shown_sources`) on segment 0, in the context on segment 1."""
    sentences = shown_sources(tokenizer, config, sentences, options)
    keys = ["input_ids", *(["offset_mapping"] if offsets else [])]
    asked = {"return_offsets_mapping": True} if offsets else {}
    if not sentences or not reads_context(config, options):
        encoded = tokenizer(sentences, **asked) if sentences else {key: [] for key in keys}
        return {key: encoded[key] for key in keys}
    paired = tokenizer(sentences, [options.context] * len(sentences), return_token_type_ids=True, **asked)
    rows = {key: paired[key] for key in [*keys, "token_type_ids"]}
    for i, name in enumerate(names):
        if limit is not None and len(rows["input_ids"][i]) > limit:  # alone, as training leaves such a context out
            logger.warning(
                f"Text {name}: its context does not fit beside it in {limit} tokens; translated without it."
            )
            alone = tokenizer(sentences[i], **asked)
            for key in keys:
                rows[key][i] = alone[key]
            rows["token_type_ids"][i] = [0] * len(alone["input_ids"])
    return rows


def source_rows(
    tokenizer, config, sentences: list[str], options: TranslationOptions, names: list[str], limit: int | None
) -> tuple[list[list[int]], list[list[int]] | None]:
    """Each sentence's token ids (not yet cut) as the engine reads it, begun with the register's tag
    (`register_tag`, after `options.source_prefix`) and followed by the context as its second segment where the
    model reads one and the two fit in `limit`; and each row's segment ids (None without a context). What
    translation, pair scores and word alignments all read (`source_encoding`)."""
    rows = source_encoding(tokenizer, config, sentences, options, names, limit)
    return rows["input_ids"], rows.get("token_type_ids")


def checked_inputs(
    tokenizer,
    config,
    sentences: list[str],
    names: list[str] | None,
    input_positions: int | None,
    output_positions: int | None,
    options: TranslationOptions,
) -> tuple[list[list[int]], list[list[int]] | None, list[str], int | None]:
    """What every engine does first with the sentences it is given: their token ids (not yet cut) with the register
    tag and the context (`source_rows`) and their segment ids (None without a context), their names for warnings
    (default 1, 2, ...) and the tokenizer's input limit, after naming each sentence past the limit in a warning
    (`warn_long_inputs`) and refusing one, or `max_new_tokens`, past a position table (`check_positions`)."""
    names = names or default_names(len(sentences))
    limit = input_limit(tokenizer)
    ids, segments = source_rows(tokenizer, config, sentences, options, names, limit)
    lengths = [len(row) for row in ids]
    warn_long_inputs(lengths, names, limit)
    check_positions(lengths, names, limit, input_positions, output_positions, options.max_new_tokens)
    return ids, segments, names, limit


def padded(tokenizer, rows: list[list[int]], segments: list[list[int]] | None):
    """A batch of source `rows` (and their `segments`, if any) padded as the tokenizer pads: input_ids and
    attention_mask (and token_type_ids) tensors."""
    features = {"input_ids": rows, **({"token_type_ids": segments} if segments else {})}
    return tokenizer.pad(features, return_tensors="pt", return_attention_mask=True)


def cut(row: list[int], limit: int | None) -> list[int]:
    """`row` cut at `limit` tokens as the tokenizer truncates a single sentence: its end token kept."""
    return row if limit is None or len(row) <= limit else row[: limit - 1] + row[-1:]


def warn_unended(name: str, budget: int) -> None:
    logger.warning(
        f"Text {name}: the translation reached the length bound ({budget} tokens) without ending; it may "
        "be cut (pass max_new_tokens to allow more)."
    )


def tagged(texts: list[str], source_prefix: str | None) -> list[str]:
    """`texts`, each begun with the tag `source_prefix` (a run's `--source_prefix`), or as they are."""
    return [f"{source_prefix} {text}" for text in texts] if source_prefix else texts


def split_texts(texts: list[str], language: str | None, numbers: Iterable[int]) -> tuple[list[str], list[str], Layout]:
    """Every sentence of `texts` in one list, each one's name for warnings ("3, sentence 2"), and per text: where
    its sentences lie in that list and the separators that join their translations. Without a `language`, each
    text is one sentence named by its number alone, without the whitespace around it (as a split sentence is); a
    blank text has none either way."""
    flat, names, layout = [], [], []
    for number, text in zip(numbers, texts):
        if language is None:
            pieces, separators = ([text.strip()] if text.strip() else []), []  # what surrounds it is not read
        else:
            pieces, separators = sentences.split(text, language)
        layout.append((range(len(flat), len(flat) + len(pieces)), separators))
        flat += pieces
        names += [f"{number}" if language is None else f"{number}, sentence {j}" for j in range(1, len(pieces) + 1)]
    return flat, names, layout


def join_hypotheses(sentence_hypotheses: list[Hypotheses], separators: list[str]) -> Hypotheses:
    """One text's hypotheses from its sentences' (in order): the k-th joins each sentence's k-th with the source's
    `separators`, and its score is the sum of theirs (None without scores). A text without sentences has none."""
    if not sentence_hypotheses:
        return []
    joined = []
    for k in range(len(sentence_hypotheses[0])):
        texts, scores = zip(*(hypotheses[k] for hypotheses in sentence_hypotheses))
        joined.append((sentences.join(list(texts), separators), None if None in scores else sum(scores)))
    return joined


__all__ = [
    "Hypotheses",
    "Layout",
    "check_positions",
    "checked_inputs",
    "cut",
    "default_names",
    "join_hypotheses",
    "length_batches",
    "padded",
    "reads_context",
    "register_tag",
    "shown_sources",
    "source_encoding",
    "source_rows",
    "split_texts",
    "tagged",
    "warn_long_inputs",
    "warn_unended",
]
