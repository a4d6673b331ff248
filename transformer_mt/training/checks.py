"""The checks a run makes before it writes anything: the launch, the data flag, the checkpoint to resume from and
the flags against it (or, for a new run, an empty output directory), the architecture flags."""

import logging
import os

from transformers import AutoConfig, AutoTokenizer, Seq2SeqTrainingArguments

from ..checkpoints import RESUMABLE_FIELDS, check_output_dir, resolve_checkpoint
from ..configuration import TransformerMTConfig
from ..tokenization import tokenizer_type_of
from .arguments import DEFAULT_VOCAB_SIZE, SetupArguments, config_overrides
from .data_arguments import DataArguments
from .ema import check_resume as check_ema_resume
from .trainer import VocabularyRequest


logger = logging.getLogger(__name__)


def check_run(data_args: DataArguments, setup: SetupArguments, model_args, training_args) -> str | None:
    """The checks made before anything is written: the launch, the data flag, the checkpoint to resume from and the
    flags against it (or, for a new run, an output directory with nothing in it), the architecture flags. Returns
    the checkpoint to resume from, if any."""
    check_launch(training_args)
    if not data_args.data:
        raise ValueError(
            "--data is required: a directory with train/validation/test .tsv/.csv/.jsonl files, or a Hub dataset name."
        )
    checkpoint = None
    if training_args.do_train and training_args.resume_from_checkpoint:
        checkpoint = resolve_checkpoint(str(training_args.resume_from_checkpoint), training_args.output_dir)
        check_resume_flags(checkpoint, setup, model_args)
    elif training_args.do_train and training_args.process_index == 0:
        # A new run never writes into a directory that holds anything (an earlier model above all) unless asked.
        check_output_dir(
            training_args.output_dir,
            overwrite=setup.overwrite_output_dir,
            flag="--overwrite_output_dir true (or --resume_from_checkpoint last to continue the run there)",
        )
    if not (setup.model_name_or_path or checkpoint):
        TransformerMTConfig(**config_overrides(model_args))  # a bad architecture flag fails here, not after training
    return checkpoint


def check_launch(training_args: Seq2SeqTrainingArguments) -> None:
    """Warn about a launch that will not do what it says: accelerate runs FSDP on accelerators only (its
    AcceleratorState turns FSDP on for multi-GPU/NPU/XPU... process groups, never for a CPU group), so an FSDP
    config on a machine without one trains plain data parallel, every process holding the whole model."""
    if os.environ.get("ACCELERATE_USE_FSDP", "false").lower() == "true" and training_args.use_cpu:
        logger.warning(
            "The launch asks for FSDP, but accelerate shards models on accelerators only: on the CPU "
            "these processes train as plain data parallel (DDP), each with the whole model."
        )


def check_resume_flags(checkpoint: str, setup: SetupArguments, model_args) -> None:
    """A resumed run continues the same model: a flag that would change its shape or vocabulary, or its moving
    average of the weights, is refused."""
    check_ema_resume(checkpoint, setup.ema_decay)
    saved = AutoConfig.from_pretrained(checkpoint)
    for key, value in config_overrides(model_args).items():
        if key not in RESUMABLE_FIELDS and getattr(saved, key) != value:
            raise ValueError(
                f"--{key} {value} differs from {checkpoint}'s {key}={getattr(saved, key)!r}; resuming "
                "continues that model: drop the flag, or start a new run."
            )
    if setup.tokenizer_name_or_path:
        raise ValueError(
            f"--tokenizer_name_or_path is not used when resuming: the run continues with {checkpoint}'s own tokenizer."
        )
    # The sizes are compared with what the run asked for: a small corpus yields fewer tokens than asked.
    asked = vocabulary_request(setup, checkpoint)
    if setup.tokenizer_vocab_size is not None and setup.tokenizer_vocab_size != asked["tokenizer_vocab_size"]:
        raise ValueError(
            f"--tokenizer_vocab_size {setup.tokenizer_vocab_size} differs from {checkpoint}'s tokenizer "
            f"(asked for {asked['tokenizer_vocab_size']} tokens, has {saved.vocab_size}); resuming keeps "
            "it: drop the flag, or start a new run."
        )
    if setup.decoder_vocab_size is not None and setup.decoder_vocab_size != asked["decoder_vocab_size"]:
        kind = "shared" if saved.share_encoder_decoder_embeddings else "target"
        raise ValueError(
            f"--decoder_vocab_size {setup.decoder_vocab_size} differs from {checkpoint}'s {kind} "
            f"vocabulary (asked for {asked['decoder_vocab_size']} tokens, has "
            f"{saved.decoder_vocab_size}); resuming keeps it: drop the flag, or start a new run."
        )
    if setup.tokenizer_type is not None:
        saved_type = tokenizer_type_of(AutoTokenizer.from_pretrained(checkpoint))
        if setup.tokenizer_type != saved_type:
            raise ValueError(
                f"--tokenizer_type {setup.tokenizer_type} differs from {checkpoint}'s tokenizer "
                f"({saved_type}); resuming keeps it: drop the flag, or start a new run."
            )


def vocabulary_request(setup: SetupArguments, checkpoint: str | None) -> dict:
    """The vocabulary sizes this run asks for: its flags for a new run; when resuming, what the checkpoint's run
    asked for (`VocabularyRequest`), or for a checkpoint saved before that was recorded, the sizes it has."""
    if not checkpoint:
        return {
            "tokenizer_vocab_size": setup.tokenizer_vocab_size or DEFAULT_VOCAB_SIZE,
            "decoder_vocab_size": setup.decoder_vocab_size,
        }
    recorded = VocabularyRequest.recorded(checkpoint)
    if recorded is not None:
        return recorded
    saved = AutoConfig.from_pretrained(checkpoint)
    return {
        "tokenizer_vocab_size": saved.vocab_size,
        "decoder_vocab_size": None if saved.share_encoder_decoder_embeddings else saved.decoder_vocab_size,
    }
