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
from ..tokenization import TOKENIZER_TYPES
from ..tokenization.tokenization_transformer_mt import MIN_VOCAB_SIZE
from .data_arguments import DataArguments


PresetName = typing.Literal[tuple(PRESETS)]
TokenizerType = typing.Literal[TOKENIZER_TYPES]
DEFAULT_VOCAB_SIZE = 8000  # of a tokenizer trained for a new run


@dataclass
class SetupArguments:
    preset: PresetName | None = field(
        default=None,
        metadata={
            "help": "Start from these defaults (transformer_mt.presets); any flag overrides them. "
            "transformer-base and transformer-big are the paper's setups."
        },
    )
    model_name_or_path: str | None = field(
        default=None, metadata={"help": "Fine-tune this saved model instead of training one from scratch."}
    )
    tokenizer_name_or_path: str | None = field(
        default=None, metadata={"help": "Load this tokenizer; by default one is trained on the training data."}
    )
    tokenizer_vocab_size: int | None = field(
        default=None,
        metadata={
            "help": f"Vocabulary size of a newly trained tokenizer (default {DEFAULT_VOCAB_SIZE}); the source "
            "vocabulary's with --decoder_vocab_size."
        },
    )
    decoder_vocab_size: int | None = field(
        default=None,
        metadata={
            "help": "Train separate source and target vocabularies (a second tokenizer saved "
            "beside the first; the model's token tables are then not shared), the "
            "target one of this size. Default: one joint vocabulary."
        },
    )
    tokenizer_type: TokenizerType | None = field(
        default=None,
        metadata={
            "help": "Subword model of a newly trained tokenizer: bpe (byte-level BPE, the "
            "default) or unigram (SentencePiece-style Unigram, Metaspace)."
        },
    )
    special_tokens: list[str] | None = field(
        default=None,
        metadata={
            "help": "Tokens the tokenizer keeps whole, never split (tags such as <BT> or "
            ">>fr<<): added to a newly trained or a loaded tokenizer and saved with it; a "
            "loaded model's token tables grow to match (transformer_mt.tags)."
        },
    )
    bpe_dropout: float | None = field(
        default=None,
        metadata={
            "help": "BPE-dropout (Provilkov et al. 2020) while training: each training batch is "
            "segmented anew, each merge skipped with this probability (e.g. 0.1). BPE "
            "tokenizers only; validation, test and the saved tokenizer are unaffected. "
            "tokenizers draws it from an unseeded generator: such runs are not "
            "bit-reproducible."
        },
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
        default=None,
        metadata={
            "help": "Beams of the saved model's generation config and of the test split's "
            "translations (default: --generation_num_beams, else 4). Evaluations during "
            "training use --generation_num_beams (default: the same)."
        },
    )
    early_stopping_patience: int | None = field(
        default=None,
        metadata={
            "help": "Stop when the validation metric (--metric_for_best_model; default BLEU with "
            "--predict_with_generate, else the loss) has not improved for N evaluations, "
            "and end with the best checkpoint (turns on --load_best_model_at_end)."
        },
    )
    average_last: int | None = field(
        default=None,
        metadata={
            "help": "At the end of training, average the last N complete checkpoints (keep them "
            "with --save_total_limit) and keep the average when it validates at least "
            "as well as the model the run ends with (its best checkpoint with "
            "--early_stopping_patience); training_info.json says which was kept."
        },
    )
    ema_decay: float | None = field(
        default=None,
        metadata={
            "help": "Keep an exponential moving average of the weights, updated after every "
            "optimizer step with this decay (e.g. 0.999): validations, the best "
            "checkpoint, --average_last and the saved model use the average; "
            "checkpoints hold the trained weights beside it "
            "(transformer_mt.training.ema)."
        },
    )
    probe_steps: int | None = field(
        default=None,
        metadata={
            "help": "Every N steps, measure on 64 validation pairs whether the decoder reads its "
            "source (loss gain over a shuffled source, cross-attention entropy, gradient "
            "norms per block) into output_dir/probe.jsonl (transformer_mt.diagnostics)."
        },
    )

    def __post_init__(self):
        for name in ("tokenizer_vocab_size", "decoder_vocab_size"):
            value = getattr(self, name)
            if value is not None and value < MIN_VOCAB_SIZE:
                raise ValueError(
                    f"--{name} must be >= {MIN_VOCAB_SIZE} (4 special tokens, 256 bytes and a merge), got {value}."
                )
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


_CONFIG_FIELDS = [
    f
    for f in dataclasses.fields(TransformerMTConfig)
    if f.name in TransformerMTConfig.__annotations__ and f.name not in EXCLUDED
]
_NOT_READABLE = [f.name for f in _CONFIG_FIELDS if _flag_type(f.type) is None]
if _NOT_READABLE:  # a new field is a flag or excluded with its reason, never left out silently
    raise TypeError(f"TransformerMTConfig fields {_NOT_READABLE} have no flag type: add them to EXCLUDED, with why.")
ModelArguments = dataclasses.make_dataclass(
    "ModelArguments",
    [
        (
            f.name,
            _flag_type(f.type) | None,
            field(default=None, metadata={"help": f"TransformerMTConfig.{f.name} (default {f.default!r})"}),
        )
        for f in _CONFIG_FIELDS
    ],
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
