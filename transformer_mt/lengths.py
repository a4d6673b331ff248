"""How long a translation may be and how much of an input a model reads: the bounds every engine decodes within.

A translation may run to twice its input plus ten tokens unless the caller says otherwise, within the generation
config's `max_length` and the decoder's position table; an input is cut at the tokenizer's `model_max_length`
(training sets it to the position table). Imports nothing of the package: the training loop, the plots and the
engines all read the same bounds.
"""

# German is rarely more than 1.3x English in these tokens, so only a looping model reaches 2x + 10 (and the
# engines then name it in a warning).
LENGTH_FACTOR, LENGTH_MARGIN = 2, 10


def length_bound(input_length: int, max_length: int | None, max_positions: int | None) -> int:
    """New tokens a translation of an `input_length`-token input may take: relative to the input, within the
    generation config's `max_length` and within the decoder's position table if it has one (the decoder start
    token takes one)."""
    bounds = [LENGTH_FACTOR * input_length + LENGTH_MARGIN]
    bounds += [limit - 1 for limit in (max_length, max_positions) if limit is not None]
    return max(1, min(bounds))


def stack_max_positions(stack) -> int | None:
    """The positions an encoder or decoder stack of a TransformerMT model reads (its position strategy's
    `max_positions`: a learned table's rows), None for any length."""
    return stack.embeddings.embed_positions.max_positions


def length_budget(model, input_length: int) -> int:
    """New tokens a translation of an `input_length`-token input may take (`length_bound`), for a loaded model: the
    translation's positions are the decoder's."""
    return length_bound(input_length, model.generation_config.max_length, stack_max_positions(model.get_decoder()))


def length_settings(new_tokens: int) -> dict:
    """generate() keywords for at most `new_tokens` new tokens of an encoder-decoder model: max_length (the decoder
    start token + new tokens), not max_new_tokens, which next to a saved max_length makes transformers warn on
    every call."""
    return {"max_length": new_tokens + 1}


def input_limit(tokenizer) -> int | None:
    """The tokenizer's `model_max_length` (training sets it to the position table), or None where transformers'
    huge sentinel means "no limit"."""
    return tokenizer.model_max_length if tokenizer.model_max_length < 1_000_000 else None


__all__ = [
    "LENGTH_FACTOR",
    "LENGTH_MARGIN",
    "input_limit",
    "length_bound",
    "length_budget",
    "length_settings",
    "stack_max_positions",
]
