"""Training-time augmentation, as OpusTrainer's modifiers (UpperCase, TitleCase, placeholders) do it: a share of the
training pairs upper-cased (both sides), title-cased (both sides: the first letter of every word), or with the
protected spans both sides hold replaced by reserved tokens `{k}` (`spans.mask_shared`, numbered as translation's
`spans.mask` numbers them), so that the model learns to carry ALL CAPS, Title Case and reserved tokens.

Which pairs is drawn from the run's data seed alone, two uniform numbers a pair (one for the case, one for the spans),
so that the same seed augments the same pairs and a resumed run sees them again; the validation and test splits are
never augmented. With every share 0 nothing is drawn and the data is left as it is.
"""

import numpy as np

from ..casing import title_case, upper_case
from ..spans import mask_shared


# the draws of a stream apart from the joined pairs' (`data.add_joined_pairs`, seeded with the bare seed)
STREAM = 40
CASES = {"uppercase": upper_case, "titlecase": title_case}


def augmentation_plan(count: int, uppercase: float, titlecase: float, span_tokens: float,
                      seed: int) -> tuple[list[str | None], list[bool]]:
    """For each of `count` pairs, its case augmentation ("uppercase", "titlecase" or None; the two exclusive, from
    one draw) and whether its shared spans become tokens, drawn from `seed`."""
    draws = np.random.default_rng([seed, STREAM]).random((count, 2))
    cases = [("uppercase" if draw < uppercase else "titlecase" if draw < uppercase + titlecase else None)
             for draw in draws[:, 0].tolist()]
    return cases, (draws[:, 1] < span_tokens).tolist()


def augment_pair(source: str, target: str, case: str | None, span_tokens: bool) -> tuple[str, str, bool]:
    """The pair with its shared spans masked (if `span_tokens`), then in `case` (placeholders, URLs and tokens
    kept); and whether a span was masked."""
    masked = False
    if span_tokens:
        source, target, spans = mask_shared(source, target)
        masked = bool(spans)
    if case:
        source, target = CASES[case](source), CASES[case](target)
    return source, target, masked


def augment(dataset, source_lang: str, target_lang: str, shares: dict[str, float], seed: int):
    """The training split with `shares` ("uppercase", "titlecase", "span_tokens": each the share of pairs to
    augment so) applied, and how many pairs each changed (span tokens: the pairs drawn that held a shared span)."""
    cases, span_tokens = augmentation_plan(len(dataset), shares["uppercase"], shares["titlecase"],
                                           shares["span_tokens"], seed)
    pairs = [augment_pair(*pair) for pair in zip(dataset[source_lang], dataset[target_lang], cases, span_tokens)]
    counts = {case: cases.count(case) for case in CASES} | {"span_tokens": sum(masked for *_, masked in pairs)}

    def replace(batch, indices):
        return {source_lang: [pairs[i][0] for i in indices], target_lang: [pairs[i][1] for i in indices]}

    return dataset.map(replace, batched=True, with_indices=True, desc="Augmenting training pairs"), counts
