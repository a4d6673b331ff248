"""What the position study measures: its variants' settings, the evaluation sets (the test split by source length,
then k consecutive test pairs joined), which position types end with their table, and what learned positions' rows
past the training lengths look like after training."""

import statistics
from types import SimpleNamespace

from transformer_mt.data import join_consecutive
from transformer_mt.modeling.positional_embeddings import POSITION_STRATEGIES

from .studies import QUICK


TABLE_SIZE = 1024  # learned positions: rows for every evaluated input; those past the training lengths stay untrained
BUCKETS = ((1, 10), (11, 20), (21, 30), (31, 1000))  # test-split source lengths, in tokens
JOINED = (2, 4, 8, 16)
ALL_PAIRS = "test, all pairs"  # the whole test split: each run's test BLEU, compared across seeds
JOINED_SHARE = 0.25  # the "+ joined pairs" variant: --joined_pairs_share (2-3 consecutive pairs joined)
# The paper's comparison: learned positions with a table exactly as long as the training inputs, where sinusoids
# need none. Past its table such a model cannot place a token: translation cuts the input there, with a warning.
EXACT_TABLE = "+ joined pairs, learned table of the training length"
# --quick: translations stop at the quick models' training target length (presets.TINY's, the start token included).
# Models of a few steps rarely write an end token, so each would otherwise run to the engines' bound (twice its input
# plus 10 tokens), and decoding would take most of the quick study's time; the full study keeps that bound.
QUICK_NEW_TOKENS = QUICK["max_target_length"] - 1


def table_limited(position_type: str, rows: int) -> bool:
    """Whether a strategy's positions end with its table (learned), the types the exact-table variant compares."""
    return POSITION_STRATEGIES[position_type].position_limit(SimpleNamespace(max_position_embeddings=rows)) is not None


def evaluation_sets(sources: list[str], references: list[str], tokenizer, joined=JOINED) -> dict:
    """name -> {sources, references, mean/max source tokens}: the test split by length bucket, then joined pairs."""
    lengths = [len(ids) for ids in tokenizer(sources)["input_ids"]]
    sets = {ALL_PAIRS: (sources, references)}
    for low, high in BUCKETS:
        chosen = [i for i, n in enumerate(lengths) if low <= n <= high]
        if chosen:
            name = f"test, {low}-{high} tokens" if high < 1000 else f"test, {low}+ tokens"
            sets[name] = ([sources[i] for i in chosen], [references[i] for i in chosen])
    for k in joined:
        sets[f"{k} joined pairs"] = join_consecutive(sources, references, k)
    described = {}
    for name, (set_sources, set_references) in sets.items():
        set_lengths = [len(ids) for ids in tokenizer(set_sources)["input_ids"]]
        described[name] = {
            "sources": set_sources,
            "references": set_references,
            "size": len(set_sources),
            "lengths": set_lengths,
            "mean_source_tokens": statistics.mean(set_lengths),
            "max_source_tokens": max(set_lengths),
        }
    return described


def untrained_rows(model, trained_positions: int) -> dict | None:
    """Learned positions: the mean row norm of positions seen in training and of those never seen (still at their
    initialisation: they get no gradient). None for sinusoids."""
    table = getattr(model.get_encoder().embeddings.embed_positions, "weight", None)
    if table is None:
        return None
    norms = table.detach().norm(dim=-1)
    return {
        "trained_positions": trained_positions,
        "mean_norm_trained_rows": float(norms[:trained_positions].mean()),
        "mean_norm_untrained_rows": float(norms[trained_positions:].mean()),
    }


__all__ = [
    "ALL_PAIRS",
    "BUCKETS",
    "EXACT_TABLE",
    "JOINED",
    "JOINED_SHARE",
    "QUICK_NEW_TOKENS",
    "TABLE_SIZE",
    "evaluation_sets",
    "table_limited",
    "untrained_rows",
]
