"""What a training run reads and how it reads it: `DataArguments`, the data set, its columns and lengths, the
accepted suggestions of a fine-tune and the training-time transforms (joined pairs, casing, span tokens, term
annotations, contexts, formality tags), each checked when parsed."""

import typing
from dataclasses import dataclass, field

from ..text.formality import REGISTER_WORDS, has_register_words
from .batching import PAD_TO_MULTIPLE_OF, padded
from .suggestion_data import DEFAULT_HELD_OUT_SHARE, DEFAULT_REPLAY_RATIO, DEFAULT_SUGGESTION_REPEATS, HELD_OUT_FILE


LongPairs = typing.Literal["drop", "truncate"]


@dataclass
class DataArguments:
    data: str | None = field(
        default=None,
        metadata={
            "help": "Required: a directory with train/validation/test .tsv/.csv/.jsonl files, or a Hub dataset name."
        },
    )
    suggestions: str | None = field(
        default=None,
        metadata={
            "help": "Fine-tune the served model (--model_name_or_path) on these accepted suggestions (a TSV as "
            "`transformer-mt-suggestions export` writes it), mixed with a replay sample of its original "
            "data (--replay_data, which then stands for --data); a share is held out "
            f"(--suggestions_held_out_share) and saved beside the model as {HELD_OUT_FILE} for "
            "`transformer-mt-promote` (transformer_mt.training.suggestion_data)."
        },
    )
    replay_data: str | None = field(
        default=None,
        metadata={
            "help": "--suggestions: the served model's original data (a directory with "
            "train.tsv): its train split is replayed, its validation and test splits "
            "evaluate the run."
        },
    )
    replay_ratio: float = field(
        default=DEFAULT_REPLAY_RATIO,
        metadata={
            "help": f"--suggestions: replay pairs per (repeated) suggestion pair in the mix (default "
            f"{DEFAULT_REPLAY_RATIO:g}: half the mix is original data); 0 replays none."
        },
    )
    suggestion_repeats: int = field(
        default=DEFAULT_SUGGESTION_REPEATS,
        metadata={
            "help": f"--suggestions: how many times each trained suggestion is in the mix (default "
            f"{DEFAULT_SUGGESTION_REPEATS})."
        },
    )
    suggestions_held_out_share: float = field(
        default=DEFAULT_HELD_OUT_SHARE,
        metadata={
            "help": f"--suggestions: the share of suggestions (by source text) never trained on, kept for the "
            f"promotion test (default {DEFAULT_HELD_OUT_SHARE:g})."
        },
    )
    source_lang: str = field(default="en", metadata={"help": "Source language column."})
    target_lang: str = field(default="de", metadata={"help": "Target language column."})
    max_source_length: int = field(default=128, metadata={"help": "Longest source, in tokens (see --long_pairs)."})
    max_target_length: int = field(default=128, metadata={"help": "Longest target, in tokens (see --long_pairs)."})
    long_pairs: LongPairs = field(
        default="drop",
        metadata={
            "help": "Training pairs longer than --max_source_length or --max_target_length: drop them (counted "
            "in training_info.json) or truncate them (a cut target then has no </s>). Validation and "
            "test pairs are never dropped, and are scored against their full reference text."
        },
    )
    joined_pairs_share: float | None = field(
        default=None,
        metadata={
            "help": "Add multi-sentence training pairs: this share of the training split's size (e.g. 0.25) "
            "of 2-3 consecutive pairs joined, sources and targets alike, within the maximum lengths; "
            "drawn from --data_seed (else --seed), so the same seed adds the same pairs; 0 adds none."
        },
    )
    uppercase_share: float = field(
        default=0.0,
        metadata={
            "help": "Upper-case this share of the training pairs, both sides (placeholders and URLs kept), "
            "as OpusTrainer's UpperCase modifier does; drawn from --data_seed (else --seed); 0 (the "
            "default) changes none (transformer_mt.training.augmentation)."
        },
    )
    titlecase_share: float = field(
        default=0.0,
        metadata={
            "help": "Title-case this share of the training pairs, both sides (the first letter of every word "
            "upper-cased, the rest kept), as OpusTrainer's TitleCase modifier does; never the same "
            "pairs as --uppercase_share; 0 (the default) changes none."
        },
    )
    span_token_share: float = field(
        default=0.0,
        metadata={
            "help": "In this share of the training pairs, replace each protected span both sides hold "
            "(placeholders, URLs, paths, numbers, ...: text.spans) by a reserved token {0}, "
            "{1}, ... on both sides, so that the model learns to carry them; the model's config then "
            "records span_tokens=true, and translation shows it its spans as such tokens. 0 (the "
            "default) changes none."
        },
    )
    term_annotation_share: float = field(
        default=0.0,
        metadata={
            "help": "In this share of the training pairs, follow up to 2 source terms with their target term in "
            "annotation marks (`Save ⟦Speichern⟧`, text.glossary; Dinu et al. 2019) where the "
            "pair's target uses it, so that the model learns to write a glossary's terms; the terms "
            "are mined from the training split itself (its short pairs: dictionary entries, UI labels) "
            "unless --terms gives them, and saved beside the model as terms.tsv; the model's config "
            "then records term_annotations=true. 0 (the default) changes none."
        },
    )
    terms: str | None = field(
        default=None,
        metadata={
            "help": "--term_annotation_share's terms: a glossary TSV (source term, tab, target "
            "term) instead of those mined from the training split."
        },
    )
    context_column: str | None = field(
        default=None,
        metadata={
            "help": "A column of each pair's context (msgctxt, a key path), read as the source's "
            "second segment (`source </s> context </s>`, token_type_ids 1)."
        },
    )
    context_share: float = field(
        default=0.0,
        metadata={
            "help": "The share of training pairs with a context (--context_column) that keep it "
            "(validation and test keep all); the config records source_context=true."
        },
    )
    formality_share: float = field(
        default=0.0,
        metadata={
            "help": "The share of each register's training pairs (transformer_mt.text.formality) "
            "that begin with its tag, <formal> or <informal>; the config records "
            "formality_tags=true. 0 (the default) tags none."
        },
    )
    source_prefix: str | None = field(
        default=None,
        metadata={
            "help": "A tag that begins every source of the data set (e.g. <BT> for back-translations, a domain "
            "tag): added to the tokenizer as a special token, kept whole; translate with the same "
            "--source_prefix (transformer_mt.tags)."
        },
    )
    target_lang_column: str | None = field(
        default=None,
        metadata={
            "help": "Several target languages in one data set: this column holds each pair's target language "
            "(a code such as de), --target_lang the target text's column. Each target begins with its "
            "language's token (>>de<<), forced first when translating (--target_lang at translation; "
            "transformer_mt.tags)."
        },
    )
    max_train_samples: int | None = field(default=None, metadata={"help": "Use only the first N training pairs."})
    max_eval_samples: int | None = field(default=None, metadata={"help": "Use only the first N validation pairs."})
    max_predict_samples: int | None = field(default=None, metadata={"help": "Use only the first N test pairs."})
    dataset_config_name: str | None = field(
        default=None, metadata={"help": "The Hub dataset's configuration, e.g. de-en for wmt14."}
    )
    data_license: str | None = field(
        default=None,
        metadata={
            "help": "License(s) of the training data for the model card, comma-separated SPDX ids "
            "(default: the data's dataset card, e.g. data/en-de/README.md)."
        },
    )
    data_attribution: str | None = field(
        default=None, metadata={"help": "Attribution of the training data for the model card (default: the card's)."}
    )
    max_tokens_per_batch: int | None = field(
        default=None,
        metadata={
            "help": "Training batches of as many pairs as fit in N padded source + target tokens (fairseq's "
            "--max-tokens) instead of --per_device_train_batch_size pairs; per process, per "
            "accumulation step."
        },
    )

    def __post_init__(self):
        self.check_suggestions()
        for name in (
            "max_source_length",
            "max_target_length",
            "max_train_samples",
            "max_eval_samples",
            "max_predict_samples",
        ):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"--{name} must be >= 1, got {value}.")
        if self.joined_pairs_share is not None and not 0 <= self.joined_pairs_share <= 1:
            raise ValueError(f"--joined_pairs_share must be in [0, 1] (0 adds none), got {self.joined_pairs_share}.")
        for name in (
            "uppercase_share",
            "titlecase_share",
            "span_token_share",
            "term_annotation_share",
            "context_share",
            "formality_share",
        ):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"--{name} must be in [0, 1] (0 changes none), got {getattr(self, name)}.")
        if self.uppercase_share + self.titlecase_share > 1:
            raise ValueError(
                f"--uppercase_share {self.uppercase_share} and --titlecase_share "
                f"{self.titlecase_share} take different pairs: together at most 1."
            )
        if self.source_prefix is not None and (not self.source_prefix.strip() or len(self.source_prefix.split()) > 1):
            raise ValueError(f"--source_prefix is one tag without spaces, such as <BT>, got {self.source_prefix!r}.")
        if self.terms is not None and not self.term_annotation_share:
            raise ValueError("--terms gives --term_annotation_share its terms: give a share too (e.g. 0.1).")
        if self.context_share and self.context_column in (None, self.source_lang, self.target_lang):
            raise ValueError(
                f"--context_share {self.context_share} keeps the contexts of --context_column: name a "
                f"column of its own, got {self.context_column!r}."
            )
        if self.formality_share and not has_register_words(self.target_lang):
            raise ValueError(
                f"--formality_share: the target language {self.target_lang!r} has no registers that "
                f"transformer_mt.text.formality tells apart (it knows {', '.join(REGISTER_WORDS)})."
            )
        if self.target_lang_column is not None and self.target_lang_column in (self.source_lang, self.target_lang):
            raise ValueError(
                f"--target_lang_column {self.target_lang_column!r} must name a column of its own, not "
                "the source or target text's."
            )
        longest = padded(self.max_source_length, PAD_TO_MULTIPLE_OF) + padded(
            self.max_target_length, PAD_TO_MULTIPLE_OF
        )
        if self.max_tokens_per_batch is not None and self.max_tokens_per_batch < longest:
            raise ValueError(
                f"--max_tokens_per_batch must hold the longest pair, {longest} padded tokens "
                f"(--max_source_length {self.max_source_length} + --max_target_length "
                f"{self.max_target_length}, padded to multiples of {PAD_TO_MULTIPLE_OF}); got "
                f"{self.max_tokens_per_batch}."
            )

    def check_suggestions(self) -> None:
        """--suggestions' flags; with them, --replay_data is the run's --data (its validation and test splits)."""
        if self.suggestions is None:
            if self.replay_data is not None:
                raise ValueError("--replay_data is replayed beside --suggestions: give both.")
            return
        if self.replay_data is None:
            raise ValueError(
                "--suggestions needs --replay_data: the served model's original data (a directory "
                "with train.tsv), replayed so that it does not forget it."
            )
        if self.data is not None and self.data != self.replay_data:
            raise ValueError("--suggestions trains on the suggestions and --replay_data: drop --data.")
        self.data = self.replay_data
        if self.replay_ratio < 0 or self.suggestion_repeats < 1:
            raise ValueError(
                f"--replay_ratio must be >= 0 and --suggestion_repeats >= 1, got {self.replay_ratio} "
                f"and {self.suggestion_repeats}."
            )
        if not 0 <= self.suggestions_held_out_share < 1:
            raise ValueError(f"--suggestions_held_out_share must be in [0, 1), got {self.suggestions_held_out_share}.")
