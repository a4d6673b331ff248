"""Scores of given source/target pairs: how likely the model finds a translation it did not write.

fairseq's `--score-reference`, `marian-scorer`, `sockeye-score` and CTranslate2's `score_batch` do this: for
filtering back-translations, reranking, quality checks. Each pair is read whole (no sentence splitting) and its
target is scored token by token under teacher forcing, up to and including `</s>`, which is what generate() would
have had to produce. Per pair: `log_prob` (the sum), `tokens` (how many, `</s>` included), `per_token`
(log_prob / tokens) and `score`, the n-best score's definition: log_prob / tokens ** length_penalty (the generation
config's unless given), so that a generated hypothesis scores here what `translate_nbest` reported for it.

`score_pairs` runs the model (length-sorted batches); `score_pairs_ctranslate2` runs a CTranslate2 export's
`score_batch`, which gives the same numbers within float tolerance.
"""

import dataclasses

import torch

from .translation import input_limit, length_batches


@dataclasses.dataclass(frozen=True)
class PairScore:
    log_prob: float
    tokens: int
    per_token: float
    score: float


def _pair_score(log_prob: float, tokens: int, length_penalty: float) -> PairScore:
    return PairScore(log_prob, tokens, log_prob / tokens, log_prob / tokens ** length_penalty)


def _penalty(generation_config, length_penalty: float | None) -> float:
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


def teacher_forcing_batch(tokenizer, source_ids: list[list[int]], target_ids: list[list[int]]):
    """A padded batch of sources and its labels (targets padded with -100), to read targets under teacher forcing."""
    batch = tokenizer.pad({"input_ids": source_ids}, return_tensors="pt")
    labels = torch.full((len(target_ids), max(map(len, target_ids))), -100)
    for row, ids in enumerate(target_ids):
        labels[row, : len(ids)] = torch.tensor(ids)
    return batch, labels


def score_pairs(model, tokenizer, sources: list[str], targets: list[str], batch_size: int = 16,
                length_penalty: float | None = None) -> list[PairScore]:
    """Each target's log-probability given its source under `model` (teacher forcing, `</s>` included), in the
    order given; inputs longer than the tokenizer's limit are cut there, as translation cuts them."""
    check_pairs(sources, targets)
    penalty = _penalty(model.generation_config, length_penalty)
    limit = input_limit(tokenizer)
    encoded = tokenizer(sources, text_target=targets, truncation=limit is not None, max_length=limit)
    results = [None] * len(sources)
    model.eval()
    for indices in length_batches([len(encoded["labels"][i]) for i in range(len(sources))], batch_size):
        batch, labels = teacher_forcing_batch(tokenizer, [encoded["input_ids"][i] for i in indices],
                                              [encoded["labels"][i] for i in indices])
        with torch.inference_mode():
            logits = model(**batch.to(model.device), labels=labels.to(model.device)).logits
        log_probs = logits.float().log_softmax(-1)
        picked = log_probs.gather(-1, labels.clamp(min=0).to(log_probs.device)[..., None])[..., 0]
        picked = picked.masked_fill(labels.to(picked.device) == -100, 0.0)
        for row, i in enumerate(indices):
            results[i] = _pair_score(float(picked[row].sum()), len(encoded["labels"][i]), penalty)
    return results


def score_pairs_ctranslate2(translator, tokenizer, sources: list[str], targets: list[str], generation_config,
                            batch_size: int = 16, length_penalty: float | None = None) -> list[PairScore]:
    """`score_pairs` through a CTranslate2 `Translator` (its `score_batch`, which adds `</s>` and scores it)."""
    from .tokenization import target_side

    check_pairs(sources, targets)
    penalty = _penalty(generation_config, length_penalty)
    target = target_side(tokenizer)
    limit = input_limit(tokenizer)  # cut as score_pairs cuts
    encoded = tokenizer(sources, text_target=targets, truncation=limit is not None, max_length=limit)
    sources_tokens = [tokenizer.convert_ids_to_tokens(ids) for ids in encoded["input_ids"]]
    target_tokens = [target.convert_ids_to_tokens(ids)[:-1] for ids in encoded["labels"]]  # score_batch adds </s>
    results = translator.score_batch(sources_tokens, target_tokens, max_batch_size=batch_size, max_input_length=0)
    return [_pair_score(float(sum(result.log_probs)), len(result.log_probs), penalty) for result in results]


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


def score_saved(model_path: str, sources: list[str], targets: list[str], batch_size: int = 16,
                length_penalty: float | None = None) -> list[PairScore]:
    """`score_pairs` with a saved model directory (loaded strictly), or `score_pairs_ctranslate2` with a CTranslate2
    export (a directory holding model.bin; its generation config's length penalty is the model's own)."""
    import os

    if os.path.isfile(os.path.join(model_path, "model.bin")):
        import ctranslate2
        from transformers import AutoTokenizer, GenerationConfig

        tokenizer = AutoTokenizer.from_pretrained(model_path)
        generation = GenerationConfig.from_pretrained(model_path) if os.path.isfile(
            os.path.join(model_path, "generation_config.json")) else GenerationConfig()
        return score_pairs_ctranslate2(ctranslate2.Translator(model_path), tokenizer, sources, targets, generation,
                                       batch_size, length_penalty)
    from .checkpoints import load_translator

    model, tokenizer = load_translator(model_path)
    return score_pairs(model, tokenizer, sources, targets, batch_size, length_penalty)


__all__ = ["PairScore", "check_pairs", "read_pairs", "score_pairs", "score_pairs_ctranslate2", "score_saved"]
