"""Train (or fine-tune) a TransformerMT translation model with Seq2SeqTrainer: the library behind scripts/train.py.

    data_args, setup_args, model_args, training_args = parse_args(["--data", "data/en-de", "--output_dir", "out",
                                                                   "--do_train", "--max_steps", "100"])
    trainer = run(data_args, setup_args, model_args, training_args)

The four argument groups are dataclasses: `DataArguments`, `SetupArguments`, `ModelArguments` (every architecture
field of `TransformerMTConfig`, None meaning the config's default) and transformers' `Seq2SeqTrainingArguments`.
`run` loads the data, builds or loads the tokenizer and the model, trains, evaluates, predicts and pushes as the
training arguments ask, and leaves the model, the tokenizer and the generation config in `output_dir`, loadable
with `AutoModelForSeq2SeqLM`/`AutoTokenizer`, with `all_results.json` and the trainer state beside them.
"""

import atexit
import copy
import dataclasses
import itertools
import json
import logging
import os
import time
import typing
from dataclasses import dataclass, field

import numpy as np
import torch
from torch.utils.data import DataLoader, Sampler
from tqdm.auto import tqdm
from transformers import (
    AutoConfig,
    AutoModelForSeq2SeqLM,
    AutoTokenizer,
    DataCollatorForSeq2Seq,
    EarlyStoppingCallback,
    GenerationConfig,
    HfArgumentParser,
    ProgressCallback,
    Seq2SeqTrainer,
    Seq2SeqTrainingArguments,
    TrainerCallback,
    set_seed,
)
from transformers.trainer_pt_utils import LengthGroupedSampler

from .averaging import average_weights, newest_complete
from .batching import TokenBatchSampler, padded
from .checkpoints import RESUMABLE_FIELDS, check_output_dir, check_tokenizer_matches, resolve_checkpoint
from .configuration import TransformerMTConfig
from .data import add_joined_pairs, dataset_card_data, load_parallel_data
from .diagnostics import AlignmentProbe, probe_batch
from .hub import push_to_hub
from .metrics import load_translation_metric
from .modeling import TransformerMTForConditionalGeneration
from .modeling.modeling_transformer_mt import seq2seq_loss
from .pipelines import length_settings
from .presets import PRESETS
from .tokenization import TOKENIZER_TYPES, target_side, tokenizer_fingerprint, tokenizer_type_of, train_tokenizer
from .tokenization.tokenization_transformer_mt import MIN_VOCAB_SIZE


logger = logging.getLogger(__name__)


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
                          "drawn from --data_seed (else --seed), so the same seed adds the same pairs."},
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
        for name in ("max_source_length", "max_target_length", "max_train_samples", "max_eval_samples",
                     "max_predict_samples"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"--{name} must be >= 1, got {value}.")
        if self.joined_pairs_share is not None and not 0 < self.joined_pairs_share <= 1:
            raise ValueError(f"--joined_pairs_share must be in (0, 1], got {self.joined_pairs_share}.")
        longest = (padded(self.max_source_length, PAD_TO_MULTIPLE_OF)
                   + padded(self.max_target_length, PAD_TO_MULTIPLE_OF))
        if self.max_tokens_per_batch is not None and self.max_tokens_per_batch < longest:
            raise ValueError(f"--max_tokens_per_batch must hold the longest pair, {longest} padded tokens "
                             f"(--max_source_length {self.max_source_length} + --max_target_length "
                             f"{self.max_target_length}, padded to multiples of {PAD_TO_MULTIPLE_OF}); got "
                             f"{self.max_tokens_per_batch}.")


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
        if self.max_train_minutes is not None and not self.max_train_minutes > 0:
            raise ValueError(f"--max_train_minutes must be > 0, got {self.max_train_minutes}.")
        for name in ("num_beams", "early_stopping_patience", "probe_steps", "average_last"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"--{name} must be >= 1, got {value}.")


# Every architecture field TransformerMTConfig declares is a command-line flag. Not: `vocab_size` and the special
# token ids (they come from the tokenizer), and `use_cache`/`is_encoder_decoder` (not choices; the former also
# clashes with the trainer's flag).
_NOT_FLAGS = {"vocab_size", "pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id",
              "forced_eos_token_id", "use_cache", "is_encoder_decoder", "is_decoder", "tokenizer_fingerprint"}
_CONFIG_FIELDS = [
    f for f in dataclasses.fields(TransformerMTConfig)
    if f.name in TransformerMTConfig.__annotations__ and f.name not in _NOT_FLAGS
]
ModelArguments = dataclasses.make_dataclass(
    "ModelArguments",
    [(f.name, f.type | None,
      field(default=None, metadata={"help": f"TransformerMTConfig.{f.name} (default {f.default!r})"}))
     for f in _CONFIG_FIELDS if f.type in (int, float, str, bool) or typing.get_origin(f.type) is typing.Literal],
)


class EpochSeededSampler(Sampler):
    """Draws a sampler's shuffle from (seed, epoch) alone, so that a resumed run sees the same order.

    transformers' LengthGroupedSampler shuffles with the global RNG at the start of each epoch; a run resumed mid
    epoch restores the RNG of the moment it was saved and shuffles differently.
    """

    def __init__(self, sampler: Sampler, seed: int):
        self.sampler, self.seed, self.epoch = sampler, seed, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.sampler)

    def __iter__(self):
        self.sampler.generator = torch.Generator().manual_seed(self.seed + self.epoch)
        return iter(self.sampler)


class TransformerMTTrainer(Seq2SeqTrainer):
    """Seq2SeqTrainer whose length-grouped batches resume exactly and whose label smoothing is fused.

    With `label_smoothing_factor`, transformers' LabelSmoother computes log-softmax, gathers and sums over the
    logits in several passes; torch's cross-entropy does the same loss (equal to float rounding) in one fused
    kernel, about 3x faster on the main job's logits (~10% of a training step on 2 CPU cores).
    """

    def __init__(self, *args, max_tokens_per_batch: int | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.max_tokens_per_batch = max_tokens_per_batch
        self.target_tokens_seen = 0
        if self.args.label_smoothing_factor and self.compute_loss_func is None:
            self.compute_loss_func = self.label_smoothed_loss

    def get_batch_samples(self, epoch_iterator, num_batches, device):
        batch_samples, num_items_in_batch = super().get_batch_samples(epoch_iterator, num_batches, device)
        for batch in batch_samples:  # real (non-pad) target tokens, kept as a tensor: no host sync per step
            self.target_tokens_seen = self.target_tokens_seen + (batch["labels"] != -100).sum()
        return batch_samples, num_items_in_batch

    def target_tokens_trained(self) -> int:
        """Real target tokens this trainer has trained on (all processes), since it was built."""
        return int(self.accelerator.reduce(torch.as_tensor(self.target_tokens_seen, device=self.args.device), "sum"))

    @property
    def data_seed(self) -> int:
        return self.args.data_seed if self.args.data_seed is not None else self.args.seed

    def get_train_dataloader(self):
        """With `max_tokens_per_batch`, token-bounded batches (`TokenBatchSampler`) instead of a fixed pair count."""
        if not self.max_tokens_per_batch:
            return super().get_train_dataloader()
        dataset = self._remove_unused_columns(self.train_dataset, description="Training")
        sampler = TokenBatchSampler(
            [len(ids) for ids in dataset["input_ids"]], [len(ids) for ids in dataset["labels"]],
            self.max_tokens_per_batch, self.data_seed, pad_to_multiple_of=PAD_TO_MULTIPLE_OF,
            num_processes=self.args.world_size, process_index=self.args.process_index)
        loader = self.accelerator.prepare(DataLoader(
            dataset, batch_sampler=sampler, collate_fn=self.data_collator,
            num_workers=self.args.dataloader_num_workers, pin_memory=self.args.dataloader_pin_memory))
        # The sampler already deals batches to processes; accelerate's shard wrapper (several processes) must pass
        # them through rather than deal them again (transformers does the same for its BatchRebalanceSampler).
        shard = getattr(loader, "batch_sampler", None)
        if shard is not None and getattr(shard, "batch_sampler", None) is sampler:
            shard.num_processes, shard.process_index = 1, 0
        return loader

    def label_smoothed_loss(self, outputs, labels, num_items_in_batch=None):
        return seq2seq_loss(outputs["logits"], labels, num_items_in_batch, self.args.label_smoothing_factor)

    def _issue_warnings_after_load(self, load_result):
        # Tied tables are stored once (as their source); loaded into it, they are not missing.
        tied = set(self.model.all_tied_weights_keys)
        missing = [key for key in load_result.missing_keys if key not in tied]
        super()._issue_warnings_after_load(load_result._replace(missing_keys=missing))

    def _get_train_sampler(self, train_dataset=None):
        sampler = super()._get_train_sampler(train_dataset)
        if isinstance(sampler, LengthGroupedSampler):
            return EpochSeededSampler(sampler, self.data_seed)
        return sampler


class TimeBudgetCallback(TrainerCallback):
    """Ends training once `minutes` of wall time have passed since the first step."""

    def __init__(self, minutes: float):
        self.seconds = 60 * minutes
        self.start = None

    def on_train_begin(self, args, state, control, **kwargs):
        self.start = time.monotonic()

    def on_step_end(self, args, state, control, **kwargs):
        # Only stop: the caller's --do_eval and save_model run once after train(); forcing them here did both twice.
        # Keeping the best checkpoint, though, the steps since the last evaluation count only if evaluated now.
        if time.monotonic() - self.start > self.seconds:
            control.should_training_stop = True
            if args.load_best_model_at_end:
                control.should_evaluate = control.should_save = True
        return control


class TimeBudgetProgressCallback(ProgressCallback):
    """The training progress bar of a run with a time budget: seconds of the budget spent, with the step count
    (the step bar would count toward `max_steps`, which the budget ends long before)."""

    def __init__(self, minutes: float):
        super().__init__()
        self.seconds = 60 * minutes

    def on_train_begin(self, args, state, control, **kwargs):
        self.start = time.monotonic()
        if state.is_world_process_zero:
            self.training_bar = tqdm(total=round(self.seconds), unit="s", dynamic_ncols=True,
                                     bar_format="{l_bar}{bar}| {n:.0f}/{total} s of the time budget{postfix}")

    def on_step_end(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            elapsed = min(time.monotonic() - self.start, self.seconds)
            self.training_bar.set_postfix_str(f"step {state.global_step}", refresh=False)
            self.training_bar.update(elapsed - self.training_bar.n)


def argument_parser() -> HfArgumentParser:
    """The command-line parser of the four argument groups (see `parse_args`)."""
    parser = HfArgumentParser((DataArguments, SetupArguments, ModelArguments, Seq2SeqTrainingArguments))
    # Processes started together (torchrun, `accelerate launch --multi_gpu`) form a CPU (gloo) group only with
    # use_cpu; without it, on a machine with no accelerator, transformers lets each process train alone.
    parser.set_defaults(use_cpu=not torch.accelerator.is_available())
    # On a GPU that has it, bf16 autocast by default: on CPUs here bf16 matmuls are slower than fp32 (README, Speed).
    parser.set_defaults(bf16=torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    return parser


def check_launch(training_args: Seq2SeqTrainingArguments) -> None:
    """Warn about a launch that will not do what it says: accelerate runs FSDP on accelerators only (its
    AcceleratorState turns FSDP on for multi-GPU/NPU/XPU... process groups, never for a CPU group), so an FSDP
    config on a machine without one trains plain data parallel, every process holding the whole model."""
    if os.environ.get("ACCELERATE_USE_FSDP", "false").lower() == "true" and training_args.use_cpu:
        logger.warning("The launch asks for FSDP, but accelerate shards models on accelerators only: on the CPU "
                       "these processes train as plain data parallel (DDP), each with the whole model.")


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


def build_tokenizer(setup: SetupArguments, datasets, data_args: DataArguments, training_args, checkpoint: str | None):
    """The run's tokenizer: the checkpoint's when resuming, the one named, or one trained on the training split
    (saved in output_dir/tokenizer): a joint vocabulary of both sides, or with --decoder_vocab_size one per side."""
    if checkpoint or setup.tokenizer_name_or_path or setup.model_name_or_path:
        tokenizer = AutoTokenizer.from_pretrained(
            checkpoint or setup.tokenizer_name_or_path or setup.model_name_or_path)
        for flag in ("tokenizer_type", "decoder_vocab_size"):
            value = getattr(setup, flag)
            if value is not None and not checkpoint:
                raise ValueError(f"--{flag} {value} shapes a tokenizer to train, but this run loads one "
                                 f"({tokenizer_type_of(tokenizer)}): drop the flag.")
        return tokenizer
    path = os.path.join(training_args.output_dir, "tokenizer")
    # The main process trains and saves; the others wait (main_process_first) and load the same files.
    with training_args.main_process_first(desc="tokenizer training"):
        if training_args.process_index == 0:
            train = datasets["train"]
            sources, targets = train[data_args.source_lang], train[data_args.target_lang]
            separate = setup.decoder_vocab_size is not None
            tokenizer = train_tokenizer(
                sources if separate else itertools.chain(sources, targets),
                vocab_size=setup.tokenizer_vocab_size or DEFAULT_VOCAB_SIZE,
                tokenizer_type=setup.tokenizer_type or "bpe", target_texts=targets if separate else None,
                target_vocab_size=setup.decoder_vocab_size)
            tokenizer.save_pretrained(path)
        else:
            tokenizer = AutoTokenizer.from_pretrained(path)
    return tokenizer


def config_overrides(model_args) -> dict:
    """The architecture flags given (None means: the config's default, or the checkpoint's value)."""
    return {key: value for key, value in dataclasses.asdict(model_args).items() if value is not None}


def check_resume_flags(checkpoint: str, setup: SetupArguments, model_args) -> None:
    """A resumed run continues the same model: a flag that would change its shape or vocabulary is refused."""
    saved = AutoConfig.from_pretrained(checkpoint)
    for key, value in config_overrides(model_args).items():
        if key not in RESUMABLE_FIELDS and getattr(saved, key) != value:
            raise ValueError(f"--{key} {value} differs from {checkpoint}'s {key}={getattr(saved, key)!r}; resuming "
                             "continues that model: drop the flag, or start a new run.")
    if setup.tokenizer_name_or_path:
        raise ValueError(f"--tokenizer_name_or_path is not used when resuming: the run continues with {checkpoint}'s "
                         "own tokenizer.")
    if setup.tokenizer_vocab_size is not None and setup.tokenizer_vocab_size != saved.vocab_size:
        raise ValueError(f"--tokenizer_vocab_size {setup.tokenizer_vocab_size} differs from {checkpoint}'s tokenizer "
                         f"({saved.vocab_size} tokens); resuming keeps it: drop the flag, or start a new run.")
    if setup.decoder_vocab_size is not None and (saved.share_encoder_decoder_embeddings
                                                  or setup.decoder_vocab_size != saved.decoder_vocab_size):
        kind = "shared" if saved.share_encoder_decoder_embeddings else "target"
        raise ValueError(f"--decoder_vocab_size {setup.decoder_vocab_size} differs from {checkpoint}'s {kind} "
                         f"vocabulary ({saved.decoder_vocab_size} tokens); resuming keeps it: drop the flag, or start "
                         "a new run.")
    if setup.tokenizer_type is not None:
        saved_type = tokenizer_type_of(AutoTokenizer.from_pretrained(checkpoint))
        if setup.tokenizer_type != saved_type:
            raise ValueError(f"--tokenizer_type {setup.tokenizer_type} differs from {checkpoint}'s tokenizer "
                             f"({saved_type}); resuming keeps it: drop the flag, or start a new run.")


def build_model(setup: SetupArguments, model_args, tokenizer, checkpoint: str | None, data_args: DataArguments):
    """The model to train: the checkpoint's architecture when resuming (its weights are loaded by the Trainer), the
    model named, or a new one sized by the tokenizer; the latter two record the data's languages."""
    overrides = config_overrides(model_args)
    if checkpoint:
        config = AutoConfig.from_pretrained(checkpoint, **overrides)
        return TransformerMTForConditionalGeneration(config)
    # translation splits its input into sentences by the source language's rules
    overrides.update(source_lang=data_args.source_lang, target_lang=data_args.target_lang)
    if setup.model_name_or_path:
        return AutoModelForSeq2SeqLM.from_pretrained(setup.model_name_or_path, **overrides)
    target = target_side(tokenizer)
    if target is not tokenizer:  # the vocabularies' real sizes (a small corpus may yield fewer tokens than asked)
        overrides.update(decoder_vocab_size=len(target), share_encoder_decoder_embeddings=False)
    config = TransformerMTConfig(
        vocab_size=len(tokenizer),
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        decoder_start_token_id=tokenizer.bos_token_id,
        tokenizer_fingerprint=tokenizer_fingerprint(tokenizer),
        **overrides,
    )
    return TransformerMTForConditionalGeneration(config)


def configure_best_checkpoint(setup: SetupArguments, training_args) -> list[TrainerCallback]:
    """With --early_stopping_patience: keep the best checkpoint by the validation metric, load it at the end, and
    stop after that many evaluations without improvement. Returns the callbacks to add (none without it)."""
    if not setup.early_stopping_patience:
        return []
    if training_args.eval_strategy == "no":
        raise ValueError("--early_stopping_patience needs evaluations during training: set --eval_strategy steps "
                         "(with --eval_steps) or epoch.")
    if training_args.save_strategy != training_args.eval_strategy or (
            training_args.eval_strategy == "steps" and training_args.save_steps % training_args.eval_steps):
        raise ValueError(f"--early_stopping_patience keeps the best checkpoint, so checkpoints must be saved where "
                         f"evaluations happen: --save_strategy {training_args.save_strategy} --save_steps "
                         f"{training_args.save_steps} against --eval_strategy {training_args.eval_strategy} "
                         f"--eval_steps {training_args.eval_steps} (save_steps must be a multiple of eval_steps).")
    training_args.load_best_model_at_end = True
    if training_args.metric_for_best_model is None:
        training_args.metric_for_best_model = "bleu" if training_args.predict_with_generate else "loss"
    if training_args.greater_is_better is None:
        training_args.greater_is_better = not training_args.metric_for_best_model.endswith("loss")
    return [EarlyStoppingCallback(early_stopping_patience=setup.early_stopping_patience)]


def average_at_end(trainer, count: int) -> dict:
    """Average the run's last `count` complete checkpoints into the trainer's model when the average validates at
    least as well as the model the run ended with; otherwise leave that model. Returns what was compared."""
    args = trainer.args
    metric = "eval_" + (args.metric_for_best_model or "loss").removeprefix("eval_")
    greater = args.greater_is_better if args.greater_is_better is not None else not metric.endswith("loss")
    checkpoints = newest_complete(args.output_dir, count)
    if len(checkpoints) < 2:
        logger.warning(f"--average_last {count}: the run saved {len(checkpoints)} complete checkpoint(s), too few "
                       "to average; the model is the run's own.")
        return {"checkpoints": [path.name for path in checkpoints], "kept": "unaveraged",
                "reason": "fewer than 2 checkpoints"}
    ended = trainer.state.best_metric if args.load_best_model_at_end else None
    if ended is None:
        ended = trainer.evaluate(metric_key_prefix="eval")[metric]
    model = trainer.model
    kept = {key: tensor.clone() for key, tensor in model.state_dict().items()}
    load_weights(model, average_weights(checkpoints))
    averaged = trainer.evaluate(metric_key_prefix="eval")[metric]
    better = averaged >= ended if greater else averaged <= ended
    if not better:
        model.load_state_dict(kept)
    return {"checkpoints": [path.name for path in checkpoints], "metric": metric, "averaged": averaged,
            "unaveraged": ended, "kept": "averaged" if better else "unaveraged"}


def load_weights(model, weights: dict) -> None:
    """Load saved weights (tied tables stored once, as transformers saves them) into `model`, all of them."""
    result = model.load_state_dict(weights, strict=False)
    missing = set(result.missing_keys) - set(model.all_tied_weights_keys)
    if missing or result.unexpected_keys:
        raise ValueError(f"the weights do not fit the model: missing {sorted(missing)[:5]}, unexpected "
                         f"{sorted(result.unexpected_keys)[:5]}")
    model.tie_weights()


def check_splits(datasets, data_args: DataArguments, training_args, setup: SetupArguments) -> None:
    """Every split the run is asked to use exists in the data."""
    needs = {"train": training_args.do_train, "validation": training_args.do_eval or bool(setup.average_last),
             "test": training_args.do_predict}
    flags = {"train": "--do_train", "validation": "--do_eval (or --average_last)", "test": "--do_predict"}
    for split, needed in needs.items():
        if needed and split not in datasets:
            raise ValueError(f"{flags[split]} needs a {split} split, but {data_args.data} has only: "
                             f"{', '.join(datasets)}.")


def limit_samples(datasets, data_args: DataArguments):
    """Keep the first `max_{train,eval,predict}_samples` pairs of each split (before the tokenizer sees them)."""
    limits = {"train": data_args.max_train_samples, "validation": data_args.max_eval_samples,
              "test": data_args.max_predict_samples}
    for split, limit in limits.items():
        if limit is not None and split in datasets:
            datasets[split] = datasets[split].select(range(min(limit, len(datasets[split]))))
    return datasets


def destroy_process_group() -> None:
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


def encode_pairs(tokenizer, sources: list[str], targets: list[str], data_args: DataArguments) -> dict:
    """Model inputs and labels of parallel text, cut to the run's maximum lengths, and `long`: whether each pair
    was longer. A cut source keeps its final </s>; a cut target does not, so that a pair cut short never teaches
    the model to end a translation where its sentence goes on."""
    features = tokenizer(sources)
    labels = tokenizer(text_target=targets)["input_ids"]
    source_limit, target_limit = data_args.max_source_length, data_args.max_target_length
    features["long"] = [len(ids) > source_limit or len(target) > target_limit
                        for ids, target in zip(features["input_ids"], labels)]
    for key in [key for key in features if key != "long"]:
        features[key] = [values if len(values) <= source_limit else values[:source_limit - 1] + values[-1:]
                         for values in features[key]]
    features["labels"] = [ids[:target_limit] for ids in labels]
    return features


def preprocess(datasets, tokenizer, data_args: DataArguments, training_args, keep_training_text: bool = False):
    """Tokenize every split once; return the tokenized splits and what was done to the training split (`{"long_pairs":
    dropped or truncated, "joined_pairs": added}`). `keep_training_text` keeps the training split's text beside its
    ids (for BPE-dropout, which segments it anew in every batch; the ids give the samplers their lengths)."""
    def tokenize(batch):
        return encode_pairs(tokenizer, batch[data_args.source_lang], batch[data_args.target_lang], data_args)

    def fits(sources, targets):
        return [not long for long in encode_pairs(tokenizer, sources, targets, data_args)["long"]]

    tokenized, report = {}, {}
    with training_args.main_process_first(desc="tokenization"):
        for split, dataset in datasets.items():
            if split == "train" and data_args.joined_pairs_share:
                seed = training_args.data_seed if training_args.data_seed is not None else training_args.seed
                dataset, report["joined_pairs"] = add_joined_pairs(
                    dataset, data_args.source_lang, data_args.target_lang, data_args.joined_pairs_share, seed, fits)
            kept = (data_args.source_lang, data_args.target_lang) if keep_training_text and split == "train" else ()
            tokenized[split] = dataset.map(
                tokenize, batched=True, remove_columns=[name for name in dataset.column_names if name not in kept],
                desc=f"Tokenizing {split}"
            )
            if split == "train":
                long = sum(tokenized[split]["long"])
                report["long_pairs"] = {"policy": data_args.long_pairs, "pairs": long,
                                        "max_source_length": data_args.max_source_length,
                                        "max_target_length": data_args.max_target_length}
                if data_args.long_pairs == "drop" and long:
                    tokenized[split] = tokenized[split].filter(lambda batch: [not x for x in batch["long"]],
                                                               batched=True, desc="Dropping long pairs")
                if long:
                    done = "dropped" if data_args.long_pairs == "drop" else "truncated"
                    logger.warning(f"{long} training pair(s) longer than --max_source_length "
                                   f"{data_args.max_source_length} or --max_target_length "
                                   f"{data_args.max_target_length} {done} (--long_pairs).")
            tokenized[split] = tokenized[split].remove_columns("long")
    return tokenized, report


class BPEDropoutCollator:
    """Segments every training batch anew with BPE-dropout (Provilkov et al. 2020, as fairseq and Marian offer it):
    each merge is skipped with probability `dropout`, so a pair is seen with a different segmentation each time it is
    drawn. Batches without text (validation, test) pass through unchanged to `collator`."""

    def __init__(self, collator, tokenizer, dropout: float, data_args: DataArguments):
        self.collator, self.data_args = collator, data_args
        self.tokenizer = copy.deepcopy(tokenizer)  # the run's own tokenizer (saved with the model) stays exact
        for side in {self.tokenizer, target_side(self.tokenizer)}:
            side.backend_tokenizer.model.dropout = dropout

    def __call__(self, features: list[dict]):
        source, target = self.data_args.source_lang, self.data_args.target_lang
        if source not in features[0]:
            return self.collator(features)
        encoded = encode_pairs(self.tokenizer, [f[source] for f in features], [f[target] for f in features],
                               self.data_args)
        encoded.pop("long")  # the pair was kept when the split was made; cut now if dropout lengthened it
        return self.collator([{key: values[i] for key, values in encoded.items()} for i in range(len(features))])


def write_training_info(trainer, data_args: DataArguments, setup: SetupArguments, data_report: dict,
                        averaging: dict | None = None) -> None:
    """training_info.json beside the model: what the model card says about the data and the recipe."""
    card = dataset_card_data(data_args.data)
    licenses = (data_args.data_license.split(",") if data_args.data_license else card.get("license")) or []
    args = trainer.args
    batch = (f"{data_args.max_tokens_per_batch} tokens" if data_args.max_tokens_per_batch
             else f"{args.per_device_train_batch_size} pairs")
    info = {
        "source_lang": data_args.source_lang,
        "target_lang": data_args.target_lang,
        "data": data_args.data if not os.path.isdir(data_args.data) else os.path.basename(
            os.path.normpath(data_args.data)),
        "dataset_config_name": data_args.dataset_config_name,
        "data_licenses": [licenses] if isinstance(licenses, str) else [name.strip() for name in licenses],
        "data_attribution": data_args.data_attribution or card.get("attribution"),
        "preset": setup.preset,
        "recipe": {"steps": trainer.state.global_step, "learning_rate": args.learning_rate,
                   "lr_scheduler_type": str(getattr(args.lr_scheduler_type, "value", args.lr_scheduler_type)),
                   "warmup_steps": args.warmup_steps, "label_smoothing": args.label_smoothing_factor,
                   "batch": batch, "processes": args.world_size},
        "training_pairs": data_report,
        "averaging": averaging,
    }
    with open(os.path.join(args.output_dir, "training_info.json"), "w", encoding="utf-8") as f:
        json.dump(info, f, indent=2, ensure_ascii=False)


class TranslationMetrics:
    """Seq2SeqTrainer's compute_metrics: BLEU and chrF of the predictions against the reference texts of the split
    being evaluated, as written in the data (never decoded from labels, which may be cut or lack characters the
    vocabulary does not have). `use(split)` names that split; evaluations during training use "validation"."""

    def __init__(self, tokenizer, references: dict[str, list[str]]):
        self.tokenizer, self.references, self.split = tokenizer, references, "validation"
        self.metric = load_translation_metric()
        self.signatures = {}

    def use(self, split: str) -> "TranslationMetrics":
        self.split = split
        return self

    def __call__(self, eval_prediction):
        predictions = eval_prediction.predictions
        if isinstance(predictions, tuple):
            predictions = predictions[0]
        predictions = np.where(predictions != -100, predictions, self.tokenizer.pad_token_id)
        hypotheses = [t.strip() for t in self.tokenizer.batch_decode(predictions, skip_special_tokens=True)]
        references = self.references[self.split]
        if len(hypotheses) != len(references):
            raise ValueError(f"{len(hypotheses)} translations for the {len(references)} {self.split} references")
        scores = self.metric.compute(predictions=hypotheses, references=references)
        self.signatures = {"bleu_signature": scores["bleu_signature"], "chrf_signature": scores["chrf_signature"]}
        return {"bleu": scores["bleu"], "chrf": scores["chrf"]}  # numbers only: they go to every logger too


def run(data_args: DataArguments, setup: SetupArguments, model_args, training_args: Seq2SeqTrainingArguments):
    """Train, evaluate, predict and push as the arguments ask; return the `Seq2SeqTrainer`.

    Everything is checked before anything is written: the output directory, the data and its splits, the
    checkpoint to resume from and the flags against it, the architecture flags. The caller's arguments are not
    changed: the run fills in its defaults (beams, lengths, the best-checkpoint settings) on a copy.
    """
    training_args = copy.copy(training_args)
    check_launch(training_args)
    if not data_args.data:
        raise ValueError("--data is required: a directory with train/validation/test .tsv/.csv/.jsonl files, or a "
                         "Hub dataset name.")
    checkpoint = None
    if training_args.do_train and training_args.resume_from_checkpoint:
        checkpoint = resolve_checkpoint(str(training_args.resume_from_checkpoint), training_args.output_dir)
        check_resume_flags(checkpoint, setup, model_args)
    elif training_args.do_train and training_args.process_index == 0:
        # A new run never writes into a directory that holds anything (an earlier model above all) unless asked.
        check_output_dir(training_args.output_dir, overwrite=setup.overwrite_output_dir,
                         flag="--overwrite_output_dir true (or --resume_from_checkpoint last to continue the run "
                              "there)")
    if not (setup.model_name_or_path or checkpoint):
        TransformerMTConfig(**config_overrides(model_args))  # a bad architecture flag fails here, not after training
    set_seed(training_args.seed)
    datasets = load_parallel_data(data_args.data, data_args.source_lang, data_args.target_lang,
                                  config_name=data_args.dataset_config_name)
    check_splits(datasets, data_args, training_args, setup)
    datasets = limit_samples(datasets, data_args)

    tokenizer = build_tokenizer(setup, datasets, data_args, training_args, checkpoint)
    if setup.bpe_dropout and tokenizer_type_of(tokenizer) != "bpe":
        raise ValueError(f"--bpe_dropout applies to BPE tokenizers; this run's tokenizer is "
                         f"{tokenizer_type_of(tokenizer)}.")
    model = build_model(setup, model_args, tokenizer, checkpoint, data_args)
    check_tokenizer_matches(model.config, tokenizer, checkpoint or setup.model_name_or_path or "the new model")
    # Truncation (`truncation=True`) then stops where the model's position table does.
    tokenizer.model_max_length = model.config.max_position_embeddings
    # Evaluation and the saved model decode alike: beam search (4 unless --generation_num_beams says otherwise).
    # Evaluation stops where its references were truncated; the saved model only at its position table, so that a
    # long input is never translated short (translate() bounds lengths relative to the input instead).
    asked = setup.num_beams or training_args.generation_num_beams  # what this run sets, if anything
    if setup.model_name_or_path and not checkpoint:
        # Fine-tuning keeps the checkpoint's generation config (an imported Opus-MT model's forced_eos_token_id and
        # bad_words_ids, a length penalty, ...) and changes only what this run sets.
        model.generation_config = copy.deepcopy(model.generation_config)
        if asked:
            model.generation_config.num_beams = asked
    else:
        model.generation_config = GenerationConfig(
            decoder_start_token_id=model.config.decoder_start_token_id,
            bos_token_id=model.config.bos_token_id,
            eos_token_id=model.config.eos_token_id,
            pad_token_id=model.config.pad_token_id,
            num_beams=asked or 4,
            max_length=model.config.max_position_embeddings,  # counts the decoder start token
        )
    num_beams = model.generation_config.num_beams
    training_args.generation_num_beams = training_args.generation_num_beams or num_beams
    training_args.generation_max_length = (training_args.generation_max_length
                                           or length_settings(data_args.max_target_length)["max_length"])
    tokenized, data_report = preprocess(datasets, tokenizer, data_args, training_args,
                                        keep_training_text=bool(setup.bpe_dropout))

    # --push_to_hub happens once, at the end, through our own push (remote code and model card included), so the
    # Trainer must not push checkpoints on its own.
    push, training_args.push_to_hub = training_args.push_to_hub, False
    collator = DataCollatorForSeq2Seq(tokenizer, model=model, label_pad_token_id=-100,
                                      pad_to_multiple_of=PAD_TO_MULTIPLE_OF)
    if setup.bpe_dropout:
        collator = BPEDropoutCollator(collator, tokenizer, setup.bpe_dropout, data_args)
        training_args.remove_unused_columns = False  # the collator needs the text; it returns only model inputs
    callbacks = configure_best_checkpoint(setup, training_args)
    if setup.max_train_minutes:
        callbacks.append(TimeBudgetCallback(setup.max_train_minutes))
    if setup.probe_steps and "validation" in tokenized:
        callbacks.append(AlignmentProbe(probe_batch(tokenized["validation"], collator), every=setup.probe_steps))
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        # Destroy the process group before the interpreter tears down its threads: left to exit, gloo can abort
        # a finished process ("terminate called without an active exception"), failing a run that succeeded.
        atexit.unregister(destroy_process_group)
        atexit.register(destroy_process_group)
    trainer = TransformerMTTrainer(
        model=model,
        args=training_args,
        train_dataset=tokenized.get("train"),
        eval_dataset=tokenized.get("validation"),
        data_collator=collator,
        processing_class=tokenizer,
        compute_metrics=TranslationMetrics(tokenizer, {split: list(dataset[data_args.target_lang]) for split, dataset
                                                       in datasets.items() if split != "train"})
        if training_args.predict_with_generate else None,
        callbacks=callbacks,
        max_tokens_per_batch=data_args.max_tokens_per_batch,
    )
    if setup.max_train_minutes and not training_args.disable_tqdm:
        trainer.remove_callback(ProgressCallback)
        trainer.add_callback(TimeBudgetProgressCallback(setup.max_train_minutes))
    if training_args.do_train:
        result = trainer.train(resume_from_checkpoint=checkpoint)
        result.metrics["train_target_tokens_per_second"] = round(
            trainer.target_tokens_trained() / result.metrics["train_runtime"], 1)
        averaging = average_at_end(trainer, setup.average_last) if setup.average_last else None
        trainer.save_model()  # model, tokenizer, generation config into output_dir
        if trainer.is_world_process_zero():
            write_training_info(trainer, data_args, setup, data_report, averaging)
        trainer.log_metrics("train", result.metrics)
        trainer.save_metrics("train", result.metrics)
        trainer.save_state()
    if training_args.do_eval:
        metrics = trainer.evaluate(metric_key_prefix="eval")
        trainer.log_metrics("eval", metrics)
        trainer.save_metrics("eval", metrics)
    if training_args.do_predict:
        if trainer.compute_metrics is not None:
            trainer.compute_metrics.use("test")
        prediction = trainer.predict(tokenized["test"], metric_key_prefix="test", num_beams=num_beams)
        if trainer.compute_metrics is not None:  # how the scores were computed, as papers report them
            signatures = trainer.compute_metrics.signatures
            prediction.metrics.update({f"test_{key}": value for key, value in signatures.items()})
        trainer.log_metrics("test", prediction.metrics)
        trainer.save_metrics("test", prediction.metrics)
        if trainer.is_world_process_zero() and training_args.predict_with_generate:
            ids = np.where(prediction.predictions != -100, prediction.predictions, tokenizer.pad_token_id)
            with open(os.path.join(training_args.output_dir, "test_predictions.txt"), "w", encoding="utf-8") as f:
                f.writelines(t.strip() + "\n" for t in tokenizer.batch_decode(ids, skip_special_tokens=True))
    if push and trainer.is_world_process_zero():
        repo_id = training_args.hub_model_id or os.path.basename(os.path.abspath(training_args.output_dir))
        uploaded, url = push_to_hub(training_args.output_dir, repo_id, overwrite=setup.hub_overwrite,
                                    private=bool(training_args.hub_private_repo), token=training_args.hub_token)
        print(f"Pushed {len(uploaded)} files of {training_args.output_dir} to {repo_id}: {url}")
    return trainer
