"""The command line of training: four argument groups (`DataArguments`, `SetupArguments`, `ModelArguments`, and
transformers' `Seq2SeqTrainingArguments`), the parser that reads them, and the presets and recipes that set their
defaults.

`ModelArguments` has one flag per field of `TransformerMTConfig` but those in `EXCLUDED`, each with its reason (None
meaning the config's default, or the checkpoint's value when resuming).
"""

import dataclasses
import types
import typing
from dataclasses import dataclass, field

import torch
from transformers import HfArgumentParser, Seq2SeqTrainingArguments

from ..configuration import TransformerMTConfig
from ..presets import PRESETS
from ..text.formality import REGISTER_WORDS, has_register_words
from ..tokenization import TOKENIZER_TYPES
from ..tokenization.tokenization_transformer_mt import MIN_VOCAB_SIZE
from .batching import padded
from .suggestion_data import DEFAULT_HELD_OUT_SHARE, DEFAULT_REPLAY_RATIO, DEFAULT_SUGGESTION_REPEATS, HELD_OUT_FILE


PresetName = typing.Literal[tuple(PRESETS)]
LongPairs = typing.Literal["drop", "truncate"]
TokenizerType = typing.Literal[TOKENIZER_TYPES]
DEFAULT_VOCAB_SIZE = 8000  # of a tokenizer trained for a new run
PAD_TO_MULTIPLE_OF = 8  # batches are padded to a multiple of 8 tokens (tensor-core and vector friendly)


@dataclass
class DataArguments:
    data: str | None = field(
        default=None,
        metadata={"help": "Required: a directory with train/validation/test .tsv/.csv/.jsonl files, or a Hub "
                          "dataset name."},
    )
    suggestions: str | None = field(
        default=None,
        metadata={"help": "Fine-tune the served model (--model_name_or_path) on these accepted suggestions (a TSV as "
                          "`transformer-mt-suggestions export` writes it), mixed with a replay sample of its original "
                          "data (--replay_data, which then stands for --data); a share is held out "
                          f"(--suggestions_held_out_share) and saved beside the model as {HELD_OUT_FILE} for "
                          "`transformer-mt-promote` (transformer_mt.training.suggestion_data)."},
    )
    replay_data: str | None = field(
        default=None, metadata={"help": "--suggestions: the served model's original data (a directory with "
                                        "train.tsv): its train split is replayed, its validation and test splits "
                                        "evaluate the run."},
    )
    replay_ratio: float = field(
        default=DEFAULT_REPLAY_RATIO,
        metadata={"help": f"--suggestions: replay pairs per (repeated) suggestion pair in the mix (default "
                          f"{DEFAULT_REPLAY_RATIO:g}: half the mix is original data); 0 replays none."},
    )
    suggestion_repeats: int = field(
        default=DEFAULT_SUGGESTION_REPEATS,
        metadata={"help": f"--suggestions: how many times each trained suggestion is in the mix (default "
                          f"{DEFAULT_SUGGESTION_REPEATS})."},
    )
    suggestions_held_out_share: float = field(
        default=DEFAULT_HELD_OUT_SHARE,
        metadata={"help": f"--suggestions: the share of suggestions (by source text) never trained on, kept for the "
                          f"promotion test (default {DEFAULT_HELD_OUT_SHARE:g})."},
    )
    source_lang: str = field(default="en", metadata={"help": "Source language column."})
    target_lang: str = field(default="de", metadata={"help": "Target language column."})
    max_source_length: int = field(default=128, metadata={"help": "Longest source, in tokens (see --long_pairs)."})
    max_target_length: int = field(default=128, metadata={"help": "Longest target, in tokens (see --long_pairs)."})
    long_pairs: LongPairs = field(
        default="drop",
        metadata={"help": "Training pairs longer than --max_source_length or --max_target_length: drop them (counted "
                          "in training_info.json) or truncate them (a cut target then has no </s>). Validation and "
                          "test pairs are never dropped, and are scored against their full reference text."},
    )
    joined_pairs_share: float | None = field(
        default=None,
        metadata={"help": "Add multi-sentence training pairs: this share of the training split's size (e.g. 0.25) "
                          "of 2-3 consecutive pairs joined, sources and targets alike, within the maximum lengths; "
                          "drawn from --data_seed (else --seed), so the same seed adds the same pairs; 0 adds none."},
    )
    uppercase_share: float = field(
        default=0.0,
        metadata={"help": "Upper-case this share of the training pairs, both sides (placeholders and URLs kept), "
                          "as OpusTrainer's UpperCase modifier does; drawn from --data_seed (else --seed); 0 (the "
                          "default) changes none (transformer_mt.training.augmentation)."},
    )
    titlecase_share: float = field(
        default=0.0,
        metadata={"help": "Title-case this share of the training pairs, both sides (the first letter of every word "
                          "upper-cased, the rest kept), as OpusTrainer's TitleCase modifier does; never the same "
                          "pairs as --uppercase_share; 0 (the default) changes none."},
    )
    span_token_share: float = field(
        default=0.0,
        metadata={"help": "In this share of the training pairs, replace each protected span both sides hold "
                          "(placeholders, URLs, paths, numbers, ...: text.spans) by a reserved token {0}, "
                          "{1}, ... on both sides, so that the model learns to carry them; the model's config then "
                          "records span_tokens=true, and translation shows it its spans as such tokens. 0 (the "
                          "default) changes none."},
    )
    term_annotation_share: float = field(
        default=0.0,
        metadata={"help": "In this share of the training pairs, follow up to 2 source terms with their target term in "
                          "annotation marks (`Save ⟦Speichern⟧`, text.glossary; Dinu et al. 2019) where the "
                          "pair's target uses it, so that the model learns to write a glossary's terms; the terms "
                          "are mined from the training split itself (its short pairs: dictionary entries, UI labels) "
                          "unless --terms gives them, and saved beside the model as terms.tsv; the model's config "
                          "then records term_annotations=true. 0 (the default) changes none."},
    )
    terms: str | None = field(
        default=None, metadata={"help": "--term_annotation_share's terms: a glossary TSV (source term, tab, target "
                                        "term) instead of those mined from the training split."},
    )
    context_column: str | None = field(
        default=None, metadata={"help": "A column of each pair's context (msgctxt, a key path), read as the source's "
                                        "second segment (`source </s> context </s>`, token_type_ids 1)."})
    context_share: float = field(
        default=0.0, metadata={"help": "The share of training pairs with a context (--context_column) that keep it "
                                       "(validation and test keep all); the config records source_context=true."})
    formality_share: float = field(
        default=0.0, metadata={"help": "The share of each register's training pairs (transformer_mt.text.formality) "
                                       "that begin with its tag, <formal> or <informal>; the config records "
                                       "formality_tags=true. 0 (the default) tags none."})
    source_prefix: str | None = field(
        default=None,
        metadata={"help": "A tag that begins every source of the data set (e.g. <BT> for back-translations, a domain "
                          "tag): added to the tokenizer as a special token, kept whole; translate with the same "
                          "--source_prefix (transformer_mt.tags)."},
    )
    target_lang_column: str | None = field(
        default=None,
        metadata={"help": "Several target languages in one data set: this column holds each pair's target language "
                          "(a code such as de), --target_lang the target text's column. Each target begins with its "
                          "language's token (>>de<<), forced first when translating (--target_lang at translation; "
                          "transformer_mt.tags)."},
    )
    max_train_samples: int | None = field(default=None, metadata={"help": "Use only the first N training pairs."})
    max_eval_samples: int | None = field(default=None, metadata={"help": "Use only the first N validation pairs."})
    max_predict_samples: int | None = field(default=None, metadata={"help": "Use only the first N test pairs."})
    dataset_config_name: str | None = field(
        default=None, metadata={"help": "The Hub dataset's configuration, e.g. de-en for wmt14."}
    )
    data_license: str | None = field(
        default=None, metadata={"help": "License(s) of the training data for the model card, comma-separated SPDX ids "
                                        "(default: the data's dataset card, e.g. data/en-de/README.md)."}
    )
    data_attribution: str | None = field(
        default=None, metadata={"help": "Attribution of the training data for the model card (default: the card's)."}
    )
    max_tokens_per_batch: int | None = field(
        default=None,
        metadata={"help": "Training batches of as many pairs as fit in N padded source + target tokens (fairseq's "
                          "--max-tokens) instead of --per_device_train_batch_size pairs; per process, per "
                          "accumulation step."},
    )

    def __post_init__(self):
        self.check_suggestions()
        for name in ("max_source_length", "max_target_length", "max_train_samples", "max_eval_samples",
                     "max_predict_samples"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"--{name} must be >= 1, got {value}.")
        if self.joined_pairs_share is not None and not 0 <= self.joined_pairs_share <= 1:
            raise ValueError(f"--joined_pairs_share must be in [0, 1] (0 adds none), got {self.joined_pairs_share}.")
        for name in ("uppercase_share", "titlecase_share", "span_token_share", "term_annotation_share",
                     "context_share", "formality_share"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"--{name} must be in [0, 1] (0 changes none), got {getattr(self, name)}.")
        if self.uppercase_share + self.titlecase_share > 1:
            raise ValueError(f"--uppercase_share {self.uppercase_share} and --titlecase_share "
                             f"{self.titlecase_share} take different pairs: together at most 1.")
        if self.source_prefix is not None and (not self.source_prefix.strip() or len(self.source_prefix.split()) > 1):
            raise ValueError(f"--source_prefix is one tag without spaces, such as <BT>, got {self.source_prefix!r}.")
        if self.terms is not None and not self.term_annotation_share:
            raise ValueError("--terms gives --term_annotation_share its terms: give a share too (e.g. 0.1).")
        if self.context_share and self.context_column in (None, self.source_lang, self.target_lang):
            raise ValueError(f"--context_share {self.context_share} keeps the contexts of --context_column: name a "
                             f"column of its own, got {self.context_column!r}.")
        if self.formality_share and not has_register_words(self.target_lang):
            raise ValueError(f"--formality_share: the target language {self.target_lang!r} has no registers that "
                             f"transformer_mt.text.formality tells apart (it knows {', '.join(REGISTER_WORDS)}).")
        if self.target_lang_column is not None and self.target_lang_column in (self.source_lang, self.target_lang):
            raise ValueError(f"--target_lang_column {self.target_lang_column!r} must name a column of its own, not "
                             "the source or target text's.")
        longest = (padded(self.max_source_length, PAD_TO_MULTIPLE_OF)
                   + padded(self.max_target_length, PAD_TO_MULTIPLE_OF))
        if self.max_tokens_per_batch is not None and self.max_tokens_per_batch < longest:
            raise ValueError(f"--max_tokens_per_batch must hold the longest pair, {longest} padded tokens "
                             f"(--max_source_length {self.max_source_length} + --max_target_length "
                             f"{self.max_target_length}, padded to multiples of {PAD_TO_MULTIPLE_OF}); got "
                             f"{self.max_tokens_per_batch}.")

    def check_suggestions(self) -> None:
        """--suggestions' flags; with them, --replay_data is the run's --data (its validation and test splits)."""
        if self.suggestions is None:
            if self.replay_data is not None:
                raise ValueError("--replay_data is replayed beside --suggestions: give both.")
            return
        if self.replay_data is None:
            raise ValueError("--suggestions needs --replay_data: the served model's original data (a directory "
                             "with train.tsv), replayed so that it does not forget it.")
        if self.data is not None and self.data != self.replay_data:
            raise ValueError("--suggestions trains on the suggestions and --replay_data: drop --data.")
        self.data = self.replay_data
        if self.replay_ratio < 0 or self.suggestion_repeats < 1:
            raise ValueError(f"--replay_ratio must be >= 0 and --suggestion_repeats >= 1, got {self.replay_ratio} "
                             f"and {self.suggestion_repeats}.")
        if not 0 <= self.suggestions_held_out_share < 1:
            raise ValueError(f"--suggestions_held_out_share must be in [0, 1), got "
                             f"{self.suggestions_held_out_share}.")


@dataclass
class SetupArguments:
    preset: PresetName | None = field(
        default=None, metadata={"help": "Start from these defaults (transformer_mt.presets); any flag overrides them. "
                                        "transformer-base and transformer-big are the paper's setups."}
    )
    model_name_or_path: str | None = field(
        default=None, metadata={"help": "Fine-tune this saved model instead of training one from scratch."}
    )
    tokenizer_name_or_path: str | None = field(
        default=None, metadata={"help": "Load this tokenizer; by default one is trained on the training data."}
    )
    tokenizer_vocab_size: int | None = field(
        default=None,
        metadata={"help": f"Vocabulary size of a newly trained tokenizer (default {DEFAULT_VOCAB_SIZE}); the source "
                          "vocabulary's with --decoder_vocab_size."}
    )
    decoder_vocab_size: int | None = field(
        default=None, metadata={"help": "Train separate source and target vocabularies (a second tokenizer saved "
                                        "beside the first; the model's token tables are then not shared), the "
                                        "target one of this size. Default: one joint vocabulary."}
    )
    tokenizer_type: TokenizerType | None = field(
        default=None, metadata={"help": "Subword model of a newly trained tokenizer: bpe (byte-level BPE, the "
                                        "default) or unigram (SentencePiece-style Unigram, Metaspace)."}
    )
    special_tokens: list[str] | None = field(
        default=None, metadata={"help": "Tokens the tokenizer keeps whole, never split (tags such as <BT> or "
                                        ">>fr<<): added to a newly trained or a loaded tokenizer and saved with it; a "
                                        "loaded model's token tables grow to match (transformer_mt.tags)."}
    )
    bpe_dropout: float | None = field(
        default=None, metadata={"help": "BPE-dropout (Provilkov et al. 2020) while training: each training batch is "
                                        "segmented anew, each merge skipped with this probability (e.g. 0.1). BPE "
                                        "tokenizers only; validation, test and the saved tokenizer are unaffected. "
                                        "tokenizers draws it from an unseeded generator: such runs are not "
                                        "bit-reproducible."}
    )
    overwrite_output_dir: bool = field(
        default=False, metadata={"help": "Train from scratch into an output directory that already holds a model."}
    )
    hub_overwrite: bool = field(
        default=False, metadata={"help": "With --push_to_hub: replace the files of an existing Hub repo."}
    )
    max_train_minutes: float | None = field(
        default=None, metadata={"help": "Stop training after this many minutes (then evaluate and save as usual)."}
    )
    num_beams: int | None = field(
        default=None, metadata={"help": "Beams of the saved model's generation config and of the test split's "
                                        "translations (default: --generation_num_beams, else 4). Evaluations during "
                                        "training use --generation_num_beams (default: the same)."}
    )
    early_stopping_patience: int | None = field(
        default=None, metadata={"help": "Stop when the validation metric (--metric_for_best_model; default BLEU with "
                                        "--predict_with_generate, else the loss) has not improved for N evaluations, "
                                        "and end with the best checkpoint (turns on --load_best_model_at_end)."}
    )
    average_last: int | None = field(
        default=None, metadata={"help": "At the end of training, average the last N complete checkpoints (keep them "
                                        "with --save_total_limit) and keep the average when it validates at least "
                                        "as well as the model the run ends with (its best checkpoint with "
                                        "--early_stopping_patience); training_info.json says which was kept."}
    )
    ema_decay: float | None = field(
        default=None, metadata={"help": "Keep an exponential moving average of the weights, updated after every "
                                        "optimizer step with this decay (e.g. 0.999): validations, the best "
                                        "checkpoint, --average_last and the saved model use the average; "
                                        "checkpoints hold the trained weights beside it "
                                        "(transformer_mt.training.ema)."}
    )
    probe_steps: int | None = field(
        default=None, metadata={"help": "Every N steps, measure on 64 validation pairs whether the decoder reads its "
                                        "source (loss gain over a shuffled source, cross-attention entropy, gradient "
                                        "norms per block) into output_dir/probe.jsonl (transformer_mt.diagnostics)."}
    )

    def __post_init__(self):
        for name in ("tokenizer_vocab_size", "decoder_vocab_size"):
            value = getattr(self, name)
            if value is not None and value < MIN_VOCAB_SIZE:
                raise ValueError(f"--{name} must be >= {MIN_VOCAB_SIZE} (4 special tokens, 256 bytes and a merge), "
                                 f"got {value}.")
        if self.bpe_dropout is not None and not 0 < self.bpe_dropout < 1:
            raise ValueError(f"--bpe_dropout must be a probability in (0, 1), got {self.bpe_dropout}.")
        if self.bpe_dropout is not None and self.tokenizer_type not in (None, "bpe"):
            raise ValueError(f"--bpe_dropout applies to BPE tokenizers, not --tokenizer_type {self.tokenizer_type}.")
        if self.ema_decay is not None and not 0 < self.ema_decay < 1:
            raise ValueError(f"--ema_decay must be in (0, 1), e.g. 0.999, got {self.ema_decay}.")
        if self.max_train_minutes is not None and not self.max_train_minutes > 0:
            raise ValueError(f"--max_train_minutes must be > 0, got {self.max_train_minutes}.")
        for name in ("num_beams", "early_stopping_patience", "probe_steps", "average_last"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"--{name} must be >= 1, got {value}.")


# Every field TransformerMTConfig declares is a command-line flag of ModelArguments, except these (field: why).
EXCLUDED = {
    "vocab_size": "the tokenizer's size: a trained or loaded tokenizer sets it",
    "decoder_vocab_size": "the target tokenizer's size: --decoder_vocab_size (SetupArguments) trains one, whose "
                          "real size sets it",
    "pad_token_id": "the tokenizer's special token sets it",
    "bos_token_id": "the tokenizer's special token sets it",
    "eos_token_id": "the tokenizer's special token sets it",
    "decoder_start_token_id": "the tokenizer's special token (bos) sets it",
    "forced_eos_token_id": "a token id, which only the tokenizer could name; None: nothing forced",
    "tokenizer_fingerprint": "computed from the tokenizer the run uses",
    "source_lang": "--source_lang (DataArguments, the data's source column) sets it",
    "target_lang": "--target_lang (DataArguments, the data's target column) sets it",
    "use_cache": "decoding's, not the architecture's (and the trainer's flag of that name would clash)",
    "is_encoder_decoder": "the model train.py trains is an encoder-decoder",
    "is_decoder": "the decoder alone (TransformerMTForCausalLM) is not what train.py trains",
    "span_tokens": "--span_token_share > 0 (DataArguments) sets it; a fine-tuned model keeps its own",
    "term_annotations": "--term_annotation_share > 0 (DataArguments) sets it; a fine-tuned model keeps its own",
    "source_context": "--context_share > 0 (DataArguments) sets it; a fine-tuned model keeps its own",
    "formality_tags": "--formality_share > 0 (DataArguments) sets it; a fine-tuned model keeps its own",
}


def _flag_type(annotation):
    """X of a field typed X or `X | None` (Optional[X]) where X is int, float, str, bool or a Literal; else None."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        kept = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        annotation = kept[0] if len(kept) == 1 else None
    if annotation in (int, float, str, bool) or typing.get_origin(annotation) is typing.Literal:
        return annotation
    return None


_CONFIG_FIELDS = [f for f in dataclasses.fields(TransformerMTConfig)
                  if f.name in TransformerMTConfig.__annotations__ and f.name not in EXCLUDED]
_NOT_READABLE = [f.name for f in _CONFIG_FIELDS if _flag_type(f.type) is None]
if _NOT_READABLE:  # a new field is a flag or excluded with its reason, never left out silently
    raise TypeError(f"TransformerMTConfig fields {_NOT_READABLE} have no flag type: add them to EXCLUDED, with why.")
ModelArguments = dataclasses.make_dataclass(
    "ModelArguments",
    [(f.name, _flag_type(f.type) | None,
      field(default=None, metadata={"help": f"TransformerMTConfig.{f.name} (default {f.default!r})"}))
     for f in _CONFIG_FIELDS],
)


def config_overrides(model_args) -> dict:
    """The architecture flags given (None means: the config's default, or the checkpoint's value)."""
    return {key: value for key, value in dataclasses.asdict(model_args).items() if value is not None}


def bf16_by_default() -> bool:
    """Whether training here defaults to bf16 autocast (and the main job to its GPU recipe): on a CUDA GPU that has
    bf16; on CPUs here bf16 matmuls are slower than fp32 (docs/results.md, "Speed")."""
    return torch.cuda.is_available() and torch.cuda.is_bf16_supported()


def argument_parser() -> HfArgumentParser:
    """The command-line parser of the four argument groups (see `parse_args`)."""
    parser = HfArgumentParser((DataArguments, SetupArguments, ModelArguments, Seq2SeqTrainingArguments))
    # Processes started together (torchrun, `accelerate launch --multi_gpu`) form a CPU (gloo) group only with
    # use_cpu; without it, on a machine with no accelerator, transformers lets each process train alone.
    parser.set_defaults(use_cpu=not torch.accelerator.is_available())
    parser.set_defaults(bf16=bf16_by_default())
    return parser


def parse_args(argv=None, defaults: dict | None = None):
    """(DataArguments, SetupArguments, ModelArguments, Seq2SeqTrainingArguments) from `argv` (default sys.argv).

    `defaults` replaces the dataclass defaults of any field of the four groups (a recipe); `--preset NAME` in `argv`
    replaces them again with a preset's (`transformer_mt.presets`); the flags in `argv` still win.
    """
    parser = argument_parser()
    if defaults:
        parser.set_defaults(**defaults)
    preset = parser.parse_known_args(argv)[0].preset
    if preset:
        parser.set_defaults(**PRESETS[preset])
    return parser.parse_args_into_dataclasses(args=argv)

