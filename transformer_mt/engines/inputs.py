"""What every engine and every entry of the batch API share around decoding: texts split into the sentences an
engine sees and the hypotheses joined back (`split_texts`, `join_hypotheses`), length-sorted batches
(`length_batches`), and the inputs' limits with their warnings and refusals (`warn_long_inputs`,
`check_positions`, `warn_unended`), which every engine runs first on the sentences it is given (`checked_inputs`).

A sentence longer than the tokenizer's `model_max_length` is cut there with a warning naming it, as every engine
cuts it. A sentence or a length bound past a learned position table is refused in one line that names the sentence
or `max_new_tokens`: such a model has no positions to read or write them with.
"""

import logging
from collections.abc import Iterable

from ..lengths import input_limit
from ..options import OptionError
from ..text import sentences


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
            logger.warning(f"Text {name} has {length} tokens; only its first {limit} are translated (the model's "
                           "limit, tokenizer.model_max_length).")


def check_positions(lengths: list[int], names: list[str], limit: int | None, input_positions: int | None,
                    output_positions: int | None, max_new_tokens: int | None) -> None:
    """Refuse, naming it, a sentence (as cut at `limit`) longer than the encoder's `input_positions`, or a
    `max_new_tokens` past the decoder's `output_positions` (its start token takes one); None: any length."""
    if output_positions is not None and max_new_tokens is not None and max_new_tokens + 1 > output_positions:
        raise OptionError("max_new_tokens", f"{max_new_tokens} is more than this model can write: its decoder's "
                                            f"position table has {output_positions} rows, so at most "
                                            f"{output_positions - 1} new tokens")
    for name, length in zip(names, lengths):
        if input_positions is not None and min(length, limit or length) > input_positions:
            raise ValueError(f"Text {name} has {length} tokens and this model reads at most {input_positions} (its "
                             "position table): shorten it, or split it into sentences")


def checked_inputs(tokenizer, sentences: list[str], names: list[str] | None, input_positions: int | None,
                   output_positions: int | None, max_new_tokens: int | None) -> tuple[list[list[int]], list[str],
                                                                                    int | None]:
    """What every engine does first with the sentences it is given: their token ids (not yet cut), their names for
    warnings (default 1, 2, ...) and the tokenizer's input limit, after naming each sentence past the limit in a
    warning (`warn_long_inputs`) and refusing one, or `max_new_tokens`, past a position table (`check_positions`)."""
    names = names or default_names(len(sentences))
    limit = input_limit(tokenizer)
    ids = tokenizer(sentences)["input_ids"] if sentences else []
    lengths = [len(row) for row in ids]
    warn_long_inputs(lengths, names, limit)
    check_positions(lengths, names, limit, input_positions, output_positions, max_new_tokens)
    return ids, names, limit


def warn_unended(name: str, budget: int) -> None:
    logger.warning(f"Text {name}: the translation reached the length bound ({budget} tokens) without ending; it may "
                   "be cut (pass max_new_tokens to allow more).")


def tagged(texts: list[str], source_prefix: str | None) -> list[str]:
    """`texts`, each begun with the tag `source_prefix` (a run's `--source_prefix`), or as they are."""
    return [f"{source_prefix} {text}" for text in texts] if source_prefix else texts


def split_texts(texts: list[str], language: str | None,
                numbers: Iterable[int]) -> tuple[list[str], list[str], Layout]:
    """Every sentence of `texts` in one list, each one's name for warnings ("3, sentence 2"), and per text: where
    its sentences lie in that list and the separators that join their translations. Without a `language`, each
    text is one sentence named by its number alone; a blank text has none either way."""
    flat, names, layout = [], [], []
    for number, text in zip(numbers, texts):
        if language is None:
            pieces, separators = ([text] if text.strip() else []), []
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


__all__ = ["Hypotheses", "Layout", "check_positions", "checked_inputs", "default_names", "join_hypotheses",
           "length_batches", "split_texts", "tagged", "warn_long_inputs", "warn_unended"]
