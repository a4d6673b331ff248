"""Constraints from the user's own text: a forced target prefix and forbidden words.

- A target prefix is a translation's required beginning (a term, a salutation, an interactive-translation prefix):
  its tokens are forced, one per step, and the model goes on from there, so the output starts with it. For
  generate() through `prefix_allowed_tokens_fn`, for CTranslate2 through `target_prefix`. With sentence splitting,
  a text's prefix applies to its first sentence.
- Forbidden words never appear: generate()'s `bad_words_ids`, CTranslate2's `suppress_sequences`. A word is
  forbidden as the tokenizer writes it after a space and at the start of the text (byte-level BPE and Metaspace
  tokenizers write the two differently).
"""

from collections.abc import Callable

import torch
from transformers import LogitsProcessor

from .tokenization import target_side


def prefix_token_ids(tokenizer, prefixes: list[str | None]) -> list[list[int] | None]:
    """Each prefix's target token ids, without special tokens (None or "" for no prefix)."""
    target = target_side(tokenizer)
    return [target(prefix, add_special_tokens=False)["input_ids"] if prefix else None for prefix in prefixes]


def bad_words_ids(tokenizer, words: list[str]) -> list[list[int]]:
    """Token id sequences for each word, as written after a space and at the start; duplicates dropped."""
    target = target_side(tokenizer)
    sequences = []
    for word in words:
        if not word.strip():
            raise ValueError(f"a forbidden word must hold text, got {word!r}")
        for written in (word.strip(), " " + word.strip()):
            ids = target(written, add_special_tokens=False)["input_ids"]
            if ids and ids not in sequences:
                sequences.append(ids)
    return sequences


def prefix_constraint(prefixes: list[list[int] | None], vocab_size: int) -> Callable[[int, object], list[int]]:
    """generate()'s `prefix_allowed_tokens_fn` for a batch whose row i must begin with `prefixes[i]`: at step t
    the t-th prefix token only, after the prefix any token."""
    everything = list(range(vocab_size))

    def allowed(batch_id: int, generated) -> list[int]:
        prefix, step = prefixes[batch_id], generated.shape[-1] - 1  # the decoder start token is not generated
        return [prefix[step]] if prefix and step < len(prefix) else everything

    return allowed


def first_sentence_prefixes(
    layout: list[tuple[range, list[str]]], prefixes: list[str | None] | None, sentences: int
) -> list[str | None] | None:
    """Per sentence (of `sentences`), the prefix of the text whose first sentence it is, else None."""
    if prefixes is None:
        return None
    if len(prefixes) != len(layout):
        raise ValueError(
            f"target_prefix needs one prefix per text (None for none): got {len(prefixes)} for {len(layout)} texts"
        )
    per_sentence = [None] * sentences
    for (span, _), prefix in zip(layout, prefixes):
        if len(span):
            per_sentence[span[0]] = prefix or None
    return per_sentence


class ForcedFirstTokens(LogitsProcessor):
    """generate()'s `forced_bos_token_id` with a token per row: the first generated token of row i is `tokens[i]`
    (with beam search, each of the row's beams; the decoder start token is not generated), scored 0 as
    transformers scores a forced first token, so that beam search ranks as it does under `forced_bos_token_id`."""

    def __init__(self, tokens: list[int]):
        self.tokens = tokens

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        if input_ids.shape[-1] != 1:
            return scores
        forced = torch.tensor(self.tokens, device=scores.device).repeat_interleave(scores.shape[0] // len(self.tokens))
        scores = torch.full_like(scores, -float("inf"))
        scores[torch.arange(scores.shape[0], device=scores.device), forced] = 0
        return scores


__all__ = ["ForcedFirstTokens", "bad_words_ids", "first_sentence_prefixes", "prefix_constraint", "prefix_token_ids"]
