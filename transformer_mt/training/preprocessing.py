"""The data of a training run: the splits loaded, checked against what the run needs, limited, and tokenized once
(long training pairs dropped or cut, joined pairs added, a share augmented)."""

import dataclasses
import logging
import os

from ..data import add_joined_pairs, load_parallel_data
from ..tags import language_token
from ..text.glossary import mine_terms, read_glossary
from ..tokenization import target_side
from .arguments import SetupArguments
from .augmentation import GIVEN_REGISTER, augment, gives_registers, lift_tags, side_constraints
from .data_arguments import DataArguments
from .suggestion_data import suggestion_splits


logger = logging.getLogger(__name__)


def load_splits(data_args: DataArguments, training_args, setup: SetupArguments):
    """The data's splits, each that the run uses present, each cut to its `max_*_samples`; with --suggestions, the
    suggestions mixed with replayed data (`suggestion_data`)."""
    if data_args.suggestions:
        datasets = suggestion_splits(data_args, training_args, setup)
        check_splits(datasets, data_args, training_args, setup)
        return limit_samples(datasets, data_args)
    extra = [column for column in (data_args.target_lang_column, context_column(data_args)) if column]
    datasets = load_parallel_data(
        data_args.data,
        data_args.source_lang,
        data_args.target_lang,
        config_name=data_args.dataset_config_name,
        extra_columns=extra,
    )
    check_splits(datasets, data_args, training_args, setup)
    return limit_samples(datasets, data_args)


def check_splits(datasets, data_args: DataArguments, training_args, setup: SetupArguments) -> None:
    """Every split the run is asked to use exists in the data."""
    needs = {
        "train": training_args.do_train,
        "validation": training_args.do_eval or bool(setup.average_last),
        "test": training_args.do_predict,
    }
    flags = {"train": "--do_train", "validation": "--do_eval (or --average_last)", "test": "--do_predict"}
    for split, needed in needs.items():
        if needed and split not in datasets:
            raise ValueError(
                f"{flags[split]} needs a {split} split, but {data_args.data} has only: {', '.join(datasets)}."
            )


def limit_samples(datasets, data_args: DataArguments):
    """Keep the first `max_{train,eval,predict}_samples` pairs of each split (before the tokenizer sees them)."""
    limits = {
        "train": data_args.max_train_samples,
        "validation": data_args.max_eval_samples,
        "test": data_args.max_predict_samples,
    }
    for split, limit in limits.items():
        if limit is not None and split in datasets:
            datasets[split] = datasets[split].select(range(min(limit, len(datasets[split]))))
    return datasets


def context_column(data_args: DataArguments) -> str | None:
    """The column whose contexts the run reads (--context_column with a --context_share), else None."""
    return data_args.context_column if data_args.context_share else None


def encode_sources(tokenizer, sources: list[str], contexts: list[str] | None, limit: int) -> dict:
    """The tokenizer's features of `sources`, each followed by its context as the second segment (`source </s>
    context </s>`, token_type_ids 1) where it has one and the two fit in `limit` tokens; a context that does not fit
    is left out, never cut (the source keeps its room)."""
    features = tokenizer(sources)
    if not contexts or not any(contexts):
        return features
    rows = [row for row, context in enumerate(contexts) if context]
    paired = tokenizer([sources[row] for row in rows], [contexts[row] for row in rows])
    for index, row in enumerate(rows):
        if len(paired["input_ids"][index]) <= limit:
            for key in features:
                features[key][row] = paired[key][index]
    return features


def encode_pairs(
    tokenizer,
    sources: list[str],
    targets: list[str],
    data_args: DataArguments,
    languages: list[str] | None = None,
    contexts: list[str] | None = None,
) -> dict:
    """Model inputs and labels of parallel text, cut to the run's maximum lengths, and `long`: whether each pair
    was longer. A cut source keeps its final </s>; a cut target does not, so that a pair cut short never teaches
    the model to end a translation where its sentence goes on. With --source_prefix every source begins with its
    tag; with `languages` (a target language per pair) every target begins with its language's token; with
    `contexts`, each source that has one is followed by it as its second segment (`encode_sources`)."""
    if data_args.source_prefix:
        sources = [f"{data_args.source_prefix} {source}" for source in sources]
    features = encode_sources(tokenizer, sources, contexts, data_args.max_source_length)
    labels = tokenizer(text_target=targets)["input_ids"]
    if languages is not None:
        target = target_side(tokenizer)
        labels = [
            [target.convert_tokens_to_ids(language_token(language)), *ids]
            for language, ids in zip(languages, labels, strict=True)
        ]
    source_limit, target_limit = data_args.max_source_length, data_args.max_target_length
    features["long"] = [
        len(ids) > source_limit or len(target) > target_limit for ids, target in zip(features["input_ids"], labels)
    ]
    for key in [key for key in features if key != "long"]:
        features[key] = [
            values if len(values) <= source_limit else values[: source_limit - 1] + values[-1:]
            for values in features[key]
        ]
    features["labels"] = [ids[:target_limit] for ids in labels]
    return features


def data_seed(training_args) -> int:
    """What the training data's draws (joined pairs, augmentation) are seeded with: --data_seed, else --seed."""
    return training_args.data_seed if training_args.data_seed is not None else training_args.seed


def augmentation_shares(data_args: DataArguments) -> dict[str, float]:
    """The share of training pairs each augmentation takes (`augmentation.augment`)."""
    return {
        "uppercase": data_args.uppercase_share,
        "titlecase": data_args.titlecase_share,
        "span_tokens": data_args.span_token_share,
        "terms": data_args.term_annotation_share,
    }


def context_column_of(dataset, data_args: DataArguments) -> str | None:
    """The run's context column where `dataset` has it (a split may have none: help text)."""
    column = context_column(data_args)
    return column if column and column in dataset.column_names else None


def training_terms(dataset, data_args: DataArguments, output_dir: str):
    """--term_annotation_share's terms: --terms' glossary, else those mined from the training split
    (`glossary.mine_terms`), written to output_dir/terms.tsv for the record (and the term test); None without."""
    if not data_args.term_annotation_share:
        return None
    terms = (
        read_glossary(data_args.terms)
        if data_args.terms
        else mine_terms(zip(dataset[data_args.source_lang], dataset[data_args.target_lang]))
    )
    os.makedirs(output_dir, exist_ok=True)
    with open(os.path.join(output_dir, "terms.tsv"), "w", encoding="utf-8") as f:
        f.writelines(f"{source}\t{target or ''}\n" for source, target in terms)
    return terms


def transform_training_split(dataset, tokenizer, data_args: DataArguments, training_args, report: dict):
    """The training split with joined pairs added, then a share augmented, then side constraints (formality tags,
    contexts) drawn; what each did goes into `report`."""
    language_column, contexts = data_args.target_lang_column, context_column(data_args)
    # a joined target must leave room for its language token, which the check below does not add
    limits = (
        dataclasses.replace(data_args, max_target_length=data_args.max_target_length - 1)
        if language_column
        else data_args
    )

    def fits(sources, targets):
        return [not long for long in encode_pairs(tokenizer, sources, targets, limits)["long"]]

    if data_args.formality_share:
        dataset = lift_tags(dataset, data_args.source_lang)
    elif gives_registers(dataset[data_args.source_lang]):
        raise ValueError(
            "--formality_share 0: the training split's sources begin with register tags (<formal>, <informal>), "
            "which only a run with --formality_share > 0 reads; give one, or data without tags"
        )

    if data_args.joined_pairs_share:
        dataset, report["joined_pairs"] = add_joined_pairs(
            dataset,
            data_args.source_lang,
            data_args.target_lang,
            data_args.joined_pairs_share,
            data_seed(training_args),
            fits,
            # a rewrite joins only rewrites of its register, and the joined pair keeps it
            same=[column for column in (language_column, GIVEN_REGISTER) if column in dataset.column_names],
            blank=[contexts] if contexts in dataset.column_names else [],
        )
    if any(augmentation_shares(data_args).values()):
        dataset, report["augmented_pairs"] = augment(
            dataset,
            data_args.source_lang,
            data_args.target_lang,
            augmentation_shares(data_args),
            data_seed(training_args),
            training_terms(dataset, data_args, training_args.output_dir),
        )
    if data_args.formality_share or contexts:
        dataset, report["side_constraints"] = side_constraints(
            dataset,
            data_args.source_lang,
            data_args.target_lang,
            data_args.formality_share,
            context_column_of(dataset, data_args),
            data_args.context_share,
            data_seed(training_args),
        )
    return dataset


def handle_long_pairs(tokenized, data_args: DataArguments, report: dict):
    """The tokenized training split with its long pairs dropped (--long_pairs drop; truncate cut them already),
    counted in `report` and logged."""
    long = sum(tokenized["long"])
    report["long_pairs"] = {
        "policy": data_args.long_pairs,
        "pairs": long,
        "max_source_length": data_args.max_source_length,
        "max_target_length": data_args.max_target_length,
    }
    if data_args.long_pairs == "drop" and long:
        tokenized = tokenized.filter(
            lambda batch: [not x for x in batch["long"]], batched=True, desc="Dropping long pairs"
        )
    if long:
        done = "dropped" if data_args.long_pairs == "drop" else "truncated"
        logger.warning(
            f"{long} training pair(s) longer than --max_source_length {data_args.max_source_length} or "
            f"--max_target_length {data_args.max_target_length} {done} (--long_pairs)."
        )
    return tokenized


def preprocess(datasets, tokenizer, data_args: DataArguments, training_args, keep_training_text: bool = False):
    """Tokenize every split once; return the tokenized splits and what was done to the training split (`{"long_pairs":
    dropped or truncated, "joined_pairs": added, "augmented_pairs": changed by each augmentation}`; the joined pairs
    are added before the augmentation draws, so that a joined pair never holds one token twice).
    `keep_training_text` keeps the training split's text beside its ids (for BPE-dropout, which segments it anew in
    every batch; the ids give the samplers their lengths)."""
    language_column, contexts = data_args.target_lang_column, context_column(data_args)

    def tokenize(batch):
        return encode_pairs(
            tokenizer,
            batch[data_args.source_lang],
            batch[data_args.target_lang],
            data_args,
            batch[language_column] if language_column else None,
            batch[contexts] if contexts and contexts in batch else None,
        )

    tokenized, report = {}, {}
    with training_args.main_process_first(desc="tokenization"):
        for split, dataset in datasets.items():
            if split == "train":
                dataset = transform_training_split(dataset, tokenizer, data_args, training_args, report)
            kept = (data_args.source_lang, data_args.target_lang) if keep_training_text and split == "train" else ()
            tokenized[split] = dataset.map(
                tokenize,
                batched=True,
                remove_columns=[name for name in dataset.column_names if name not in kept],
                desc=f"Tokenizing {split}",
            )
            if split == "train":
                tokenized[split] = handle_long_pairs(tokenized[split], data_args, report)
            tokenized[split] = tokenized[split].remove_columns("long")
    return tokenized, report
