"""Scores of given source/target pairs: how likely the model finds a translation it did not write.

fairseq's `--score-reference`, `marian-scorer`, `sockeye-score` and CTranslate2's `score_batch` do this: for
filtering back-translations, reranking, quality checks. Each pair is read whole (no sentence splitting) and its
target is scored token by token under teacher forcing, up to and including `</s>`, which is what generate() would
have had to produce. Its source is read as translation reads it under the options given (their `source_prefix`, the
register's tag, the context as segment 1: `inputs.source_rows`). Per pair (`PairScore`): `log_prob` (the sum),
`tokens` (how many, `</s>` included), `per_token` (log_prob / tokens) and `score`, the n-best score's definition:
log_prob / tokens ** length_penalty (the generation config's unless given), so that a generated hypothesis scores
here what `translate_nbest` reported for it.

This module holds what both engines share (`transformer_mt.engines`: each scores pairs with `score_pairs`, the
model under teacher forcing or a CTranslate2 export's `score_batch`, the same numbers within float tolerance) and
reading pairs from a file; `transformer_mt.evaluation.score_saved` scores with a saved model or export.
"""

import dataclasses

import torch

from ..lengths import input_limit
from ..options import TranslationOptions
from .inputs import cut, default_names, padded, source_rows, tagged


@dataclasses.dataclass(frozen=True)
class PairScore:
    log_prob: float
    tokens: int
    per_token: float
    score: float


def pair_score(log_prob: float, tokens: int, length_penalty: float) -> PairScore:
    """A pair's scores from its target's summed log-probability and token count."""
    return PairScore(log_prob, tokens, log_prob / tokens, log_prob / tokens**length_penalty)


def length_penalty_of(generation_config, length_penalty: float | None) -> float:
    """`length_penalty`, else the generation config's, else generate()'s default 1.0."""
    if length_penalty is not None:
        return length_penalty
    return 1.0 if generation_config.length_penalty is None else generation_config.length_penalty


def check_pairs(sources: list[str], targets: list[str]) -> None:
    if len(sources) != len(targets):
        raise ValueError(f"every source needs its target: got {len(sources)} sources and {len(targets)} targets")
    for number, (source, target) in enumerate(zip(sources, targets), 1):
        if not source.strip() or not target.strip():
            side = "source" if not source.strip() else "target"
            raise ValueError(f"pair {number} has an empty {side}: a pair needs text on both sides")


def encode_scored_pairs(
    tokenizer, config, sources: list[str], targets: list[str], options: TranslationOptions | None = None
) -> dict[str, list]:
    """Given pairs, checked (`check_pairs`), tokenized as every engine reads them: the sources as translation reads
    them under `options` (`inputs.source_rows`: begun with `options.source_prefix` and the register's tag, the
    context as segment 1, `token_type_ids`, where the model reads one) and cut at the tokenizer's limit as
    translation cuts them; the targets (`labels`) `</s>` included."""
    check_pairs(sources, targets)
    options = options or TranslationOptions()
    limit = input_limit(tokenizer)
    ids, segments = source_rows(
        tokenizer, config, tagged(sources, options.source_prefix), options, default_names(len(sources)), limit
    )
    labels = tokenizer(text_target=targets, truncation=limit is not None, max_length=limit)["input_ids"]
    encoded = {"input_ids": [cut(row, limit) for row in ids], "labels": labels}
    if segments is not None:
        encoded["token_type_ids"] = [cut(row, limit) for row in segments]
    return encoded


def teacher_forcing_batch(
    tokenizer, source_ids: list[list[int]], target_ids: list[list[int]], segments: list[list[int]] | None = None
):
    """A padded batch of sources (with their `segments`, if any) and its labels (targets padded with -100), to read
    targets under teacher forcing."""
    batch = padded(tokenizer, source_ids, segments)
    labels = torch.full((len(target_ids), max(map(len, target_ids))), -100)
    for row, ids in enumerate(target_ids):
        labels[row, : len(ids)] = torch.tensor(ids)
    return batch, labels


def read_pairs(path: str) -> tuple[list[str], list[str]]:
    """Sources and targets of a file of pairs, one `source<TAB>target` a line; a line that is not two fields is an
    error naming it."""
    sources, targets = [], []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            fields = line.rstrip("\r\n").split("\t")
            if len(fields) != 2:
                raise ValueError(f"{path}, line {number}: a pair is source<TAB>target, got {len(fields)} field(s)")
            sources.append(fields[0])
            targets.append(fields[1])
    return sources, targets


__all__ = [
    "PairScore",
    "check_pairs",
    "encode_scored_pairs",
    "length_penalty_of",
    "pair_score",
    "read_pairs",
    "teacher_forcing_batch",
]
