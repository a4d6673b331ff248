"""Training-time augmentation, as OpusTrainer's modifiers (UpperCase, TitleCase, placeholders) do it: a share of the
training pairs upper-cased (both sides), title-cased (both sides: the first letter of every word), or with the
protected spans both sides hold replaced by reserved tokens `{k}` (`spans.mask_shared`, numbered as translation's
`spans.mask` numbers them), so that the model learns to carry ALL CAPS, Title Case and reserved tokens.

A share of the pairs can also carry term annotations (`glossary.annotate_pair`, Dinu et al. 2019): up to two source
terms of the run's terms that the pair's target uses (by the target language's rules), each followed by its target
term in annotation marks, so that the model learns to write the terms a glossary asks for; in half of them one
term's target word is replaced, in the annotation and the target alike, by another term's target, so that it learns
to follow the annotation over its own choice.

Side constraints (`side_constraints`): a share of the pairs whose target addresses the reader in a register the
target language's rules recognise (`text.formality`) begin with that register's tag (`<formal>`, `<informal>`), the
same share of each register, so that a request can ask for one (a pair whose source the data already begins with a
tag, a register's rewrite, keeps it: `lift_tags`); and a share of the pairs that hold a context (a
message's msgctxt) keep it, the rest have none, so that the model translates well both with and without one.

Which pairs is drawn from the run's data seed alone, two uniform numbers a pair (one for the case, one for the spans),
and one more from a stream of its own for the terms, so that the same seed augments the same pairs and a resumed run
sees them again; the validation and test splits are never augmented. With every share 0 nothing is drawn and the
data is left as it is.
"""

import numpy as np

from ..text.casing import title_case, upper_case
from ..text.formality import TAGS, register
from ..text.glossary import annotate_pair, term_index
from ..text.languages import rules_for
from ..text.spans import mask_shared


# the draws of a stream apart from the joined pairs' (`data.add_joined_pairs`, seeded with the bare seed)
STREAM = 40
TERMS_STREAM = 41
SIDE_CONSTRAINTS_STREAM = 42
# The share of annotated pairs whose term is replaced, in the annotation and the target alike, by another term's
# target: with only the reference's own term annotated, a model learns to write what it would have written anyway and
# ignores a glossary that asks for another word (measured: docs/translation.md, "A glossary").
TERM_SUBSTITUTION = 0.5
# the register a source's own tag asks for, lifted off it while the pair is joined and augmented (`lift_tags`)
GIVEN_REGISTER = "given_register"
_GIVEN_TAGS = {f"{tag} ": name for name, tag in TAGS.items()}  # a tag the data gives, with its space: its register
CASES = {"uppercase": upper_case, "titlecase": title_case}


def augmentation_plan(
    count: int, uppercase: float, titlecase: float, span_tokens: float, seed: int
) -> tuple[list[str | None], list[bool]]:
    """For each of `count` pairs, its case augmentation ("uppercase", "titlecase" or None; the two exclusive, from
    one draw) and whether its shared spans become tokens, drawn from `seed`."""
    draws = np.random.default_rng([seed, STREAM]).random((count, 2))
    cases = [
        ("uppercase" if draw < uppercase else "titlecase" if draw < uppercase + titlecase else None)
        for draw in draws[:, 0].tolist()
    ]
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


def augment(dataset, source_lang: str, target_lang: str, shares: dict[str, float], seed: int, terms=None):
    """The training split with `shares` ("uppercase", "titlecase", "span_tokens", "terms": each the share of pairs to
    augment so; "terms" with `terms`, a glossary) applied, and how many pairs each changed (span tokens: the pairs
    drawn that held a shared span; terms: the pairs drawn that held a term)."""
    cases, span_tokens = augmentation_plan(
        len(dataset), shares["uppercase"], shares["titlecase"], shares["span_tokens"], seed
    )
    draws = np.random.default_rng([seed, TERMS_STREAM]).random((len(dataset), 3))
    annotated = (draws[:, 0] < shares.get("terms", 0)).tolist()
    index = term_index(terms or ())
    substitutes = sorted({target for _, target in terms or () if target and len(target.split()) == 1})
    pairs, with_terms, rules = [], 0, rules_for(target_lang) if index else None
    for row, (source, target, case, tokens, annotate) in enumerate(
        zip(dataset[source_lang], dataset[target_lang], cases, span_tokens, annotated)
    ):
        if annotate and index:
            substitute = (
                substitutes[int(draws[row, 2] * len(substitutes))]
                if substitutes and draws[row, 1] < TERM_SUBSTITUTION
                else None
            )
            source, target, count = annotate_pair(source, target, index, rules, substitute=substitute)
            with_terms += count > 0
        pairs.append(augment_pair(source, target, case, tokens))
    counts = {case: cases.count(case) for case in CASES} | {"span_tokens": sum(masked for *_, masked in pairs)}
    if shares.get("terms"):
        counts["terms"] = with_terms

    def replace(batch, indices):
        return {source_lang: [pairs[i][0] for i in indices], target_lang: [pairs[i][1] for i in indices]}

    return dataset.map(replace, batched=True, with_indices=True, desc="Augmenting training pairs"), counts


def gives_registers(sources: list[str]) -> bool:
    """Whether any of `sources` begins with a register's tag (`<informal> source`): data that gives registers."""
    return any(source.startswith(tuple(_GIVEN_TAGS)) for source in sources)


def lift_tags(dataset, source_lang: str):
    """The training split with each source's leading register tag (`<informal> source`, data that gives a pair's
    register, as `language_data --informal_rewrites` writes) lifted into a `GIVEN_REGISTER` column, so that joining
    and case augmentation never see it and `side_constraints` puts it back; the split as it is without one."""
    sources = dataset[source_lang]
    if not gives_registers(sources):
        return dataset
    given = [next((name for tag, name in _GIVEN_TAGS.items() if source.startswith(tag)), "") for source in sources]
    lifted = [source.split(" ", 1)[1] if name else source for source, name in zip(sources, given)]
    return dataset.remove_columns(source_lang).add_column(source_lang, lifted).add_column(GIVEN_REGISTER, given)


def side_constraints(
    dataset,
    source_lang: str,
    target_lang: str,
    formality_share: float,
    context_column: str | None,
    context_share: float,
    seed: int,
):
    """The training split with `formality_share` of each register's pairs tagged (`<formal> source`; every pair
    whose `GIVEN_REGISTER` names one, with that one) and `context_share` of the pairs with a context keeping it in
    `context_column` (the others' emptied); and how many pairs each changed ("formal", "informal": tagged;
    "context": kept)."""
    draws = np.random.default_rng([seed, SIDE_CONSTRAINTS_STREAM]).random((len(dataset), 2))
    sources, counts = list(dataset[source_lang]), {}
    if formality_share:
        counts = {register_: 0 for register_ in TAGS}
        given = dataset[GIVEN_REGISTER] if GIVEN_REGISTER in dataset.column_names else [""] * len(sources)
        for row, (source, target) in enumerate(zip(sources, dataset[target_lang])):
            label = given[row] or register(source, target, target_lang, source_lang)
            if given[row] or (label and draws[row, 0] < formality_share):
                sources[row] = f"{TAGS[label]} {source}"
                counts[label] += 1
    columns = {source_lang: sources}
    if context_column:
        contexts = [
            context if context and draw < context_share else ""
            for context, draw in zip(dataset[context_column], draws[:, 1].tolist())
        ]
        columns[context_column] = contexts
        counts["context"] = sum(bool(context) for context in contexts)

    def replace(batch, indices):
        return {name: [values[i] for i in indices] for name, values in columns.items()}

    return dataset.map(replace, batched=True, with_indices=True, desc="Adding side constraints"), counts
