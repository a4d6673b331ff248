"""`run`: one training run, from its arguments to the model in `output_dir`, as a list of named steps; and those
steps: the tokenizer, the model and its generation config, the collator and the callbacks, training, prediction
(the checks made before anything is written are in `checks`, what the run leaves behind in `outputs`)."""

import atexit
import copy
import dataclasses
import itertools
import logging
import os

import torch
from transformers import (
    AutoConfig,
    AutoModelForSeq2SeqLM,
    AutoTokenizer,
    DataCollatorForSeq2Seq,
    EarlyStoppingCallback,
    GenerationConfig,
    ProgressCallback,
    Seq2SeqTrainingArguments,
    TrainerCallback,
    set_seed,
)

from ..bridges.marian import converted_for_run
from ..checkpoints import check_tokenizer_matches
from ..configuration import TransformerMTConfig
from ..diagnostics import AlignmentProbe, probe_batch
from ..lengths import length_settings
from ..modeling import TransformerMTForConditionalGeneration
from ..tags import add_special_tokens, fit_model_to_tokenizer, language_token
from ..text.formality import TAGS as FORMALITY_TAGS
from ..tokenization import target_side, tokenizer_fingerprint, tokenizer_type_of, train_tokenizer
from .arguments import DEFAULT_VOCAB_SIZE, DataArguments, SetupArguments, config_overrides
from .batching import PAD_TO_MULTIPLE_OF
from .checks import check_run, vocabulary_request
from .outputs import average_at_end, push_run, write_test_predictions, write_training_info
from .preprocessing import load_splits, preprocess
from .trainer import (
    BPEDropoutCollator,
    TimeBudgetCallback,
    TimeBudgetProgressCallback,
    TransformerMTTrainer,
    ValidationMetrics,
    VocabularyRequest,
)


logger = logging.getLogger(__name__)


def run(data_args: DataArguments, setup: SetupArguments, model_args, training_args: Seq2SeqTrainingArguments):
    """Train, evaluate, predict and push as the arguments ask; return the `Seq2SeqTrainer`.

    Everything is checked before anything is written: the output directory, the data and its splits, the
    checkpoint to resume from and the flags against it, the architecture flags. The caller's arguments are not
    changed: the run fills in its defaults (beams, lengths, the best-checkpoint settings) on a copy.
    """
    training_args = copy.copy(training_args)
    checkpoint = check_run(data_args, setup, model_args, training_args)
    setup = start_from_marian(setup, data_args, training_args)
    set_seed(training_args.seed)
    datasets = load_splits(data_args, training_args, setup)

    tokenizer = build_tokenizer(setup, datasets, data_args, training_args, checkpoint)
    model = build_model(setup, model_args, tokenizer, checkpoint, data_args)
    check_tokenizer_matches(model.config, tokenizer, checkpoint or setup.model_name_or_path or "the new model")
    # Truncation (`truncation=True`) then stops where the model's position table does.
    tokenizer.model_max_length = model.config.max_position_embeddings
    model.generation_config = generation_config_for(model, setup, training_args, checkpoint)
    set_evaluation_decoding(training_args, model.generation_config, data_args)
    tokenized, data_report = preprocess(
        datasets, tokenizer, data_args, training_args, keep_training_text=bool(setup.bpe_dropout)
    )

    # --push_to_hub happens once, at the end, through our own push (remote code and model card included), so the
    # Trainer must not push checkpoints on its own.
    push, training_args.push_to_hub = training_args.push_to_hub, False
    collator = build_collator(tokenizer, model, setup, data_args, training_args)
    callbacks = build_callbacks(setup, training_args, tokenized, collator, checkpoint)
    destroy_process_group_at_exit()
    trainer = build_trainer(
        model, tokenizer, datasets, tokenized, collator, callbacks, data_args, setup, training_args
    )

    if training_args.do_train:
        train(trainer, checkpoint, data_args, setup, data_report)
    if training_args.do_eval:
        evaluate(trainer)
    if training_args.do_predict:
        predict(trainer, tokenized["test"])
    if push and trainer.is_world_process_zero():
        push_run(training_args, setup)
    return trainer


def start_from_marian(setup: SetupArguments, data_args: DataArguments, training_args) -> SetupArguments:
    """A MarianMT (Opus-MT) `--model_name_or_path`, converted for this run (`bridges.marian.converted_for_run`)."""
    path = converted_for_run(setup.model_name_or_path, training_args, data_args.source_lang, data_args.target_lang)
    return setup if path == setup.model_name_or_path else dataclasses.replace(setup, model_name_or_path=path)


def build_tokenizer(setup: SetupArguments, datasets, data_args: DataArguments, training_args, checkpoint: str | None):
    """The run's tokenizer: the checkpoint's when resuming, the one named, or one trained on the training split
    (saved in output_dir/tokenizer): a joint vocabulary of both sides, or with --decoder_vocab_size one per side."""
    if checkpoint or setup.tokenizer_name_or_path or setup.model_name_or_path:
        tokenizer = AutoTokenizer.from_pretrained(
            checkpoint or setup.tokenizer_name_or_path or setup.model_name_or_path
        )
        for flag in ("tokenizer_type", "decoder_vocab_size"):
            value = getattr(setup, flag)
            if value is not None and not checkpoint:
                raise ValueError(
                    f"--{flag} {value} shapes a tokenizer to train, but this run loads one "
                    f"({tokenizer_type_of(tokenizer)}): drop the flag."
                )
    else:
        tokenizer = train_run_tokenizer(setup, datasets, data_args, training_args)
    if setup.bpe_dropout and tokenizer_type_of(tokenizer) != "bpe":
        raise ValueError(
            f"--bpe_dropout applies to BPE tokenizers; this run's tokenizer is {tokenizer_type_of(tokenizer)}."
        )
    added = add_special_tokens(tokenizer, run_tags(setup, datasets, data_args))
    if added and checkpoint:
        raise ValueError(
            f"{checkpoint}'s tokenizer lacks {', '.join(added)}; resuming keeps the run's tokenizer: "
            "drop the flags that add them, or start a new run."
        )
    return tokenizer


def run_tags(setup: SetupArguments, datasets, data_args: DataArguments) -> list[str]:
    """The special tokens a run's tokenizer must hold (`transformer_mt.tags`): --special_tokens, the
    --source_prefix tag, the register tags of --formality_share and the language tokens of every target language in
    the data."""
    tags = [
        *(setup.special_tokens or []),
        *([data_args.source_prefix] if data_args.source_prefix else []),
        *(FORMALITY_TAGS.values() if data_args.formality_share else []),
    ]
    if setup.bpe_dropout and data_args.context_share:
        raise ValueError(
            "--bpe_dropout segments training text anew in the collator, which does not see "
            "--context_column: use one of the two."
        )
    column = data_args.target_lang_column
    if column:
        if setup.bpe_dropout:
            raise ValueError(
                "--bpe_dropout segments training text anew in the collator, which does not see "
                "--target_lang_column: use one of the two."
            )
        languages = set()
        for split, dataset in datasets.items():
            for row, value in enumerate(dataset[column], 1):
                if not isinstance(value, str) or not value.strip():
                    raise ValueError(
                        f"--target_lang_column {column!r}: pair {row} of the {split} split has no "
                        f"target language ({value!r}); every pair needs a code such as de"
                    )
                languages.add(value)
        tags += [language_token(language) for language in sorted(languages)]
    return tags


def train_run_tokenizer(setup: SetupArguments, datasets, data_args: DataArguments, training_args):
    """A tokenizer trained on the training split and saved in output_dir/tokenizer."""
    path = os.path.join(training_args.output_dir, "tokenizer")
    # The main process trains and saves; the others wait (main_process_first) and load the same files.
    with training_args.main_process_first(desc="tokenizer training"):
        if training_args.process_index == 0:
            train_split = datasets["train"]
            sources, targets = train_split[data_args.source_lang], train_split[data_args.target_lang]
            separate = setup.decoder_vocab_size is not None
            tokenizer = train_tokenizer(
                sources if separate else itertools.chain(sources, targets),
                vocab_size=setup.tokenizer_vocab_size or DEFAULT_VOCAB_SIZE,
                tokenizer_type=setup.tokenizer_type or "bpe",
                target_texts=targets if separate else None,
                target_vocab_size=setup.decoder_vocab_size,
            )
            tokenizer.save_pretrained(path)
        else:
            tokenizer = AutoTokenizer.from_pretrained(path)
    return tokenizer


def build_model(setup: SetupArguments, model_args, tokenizer, checkpoint: str | None, data_args: DataArguments):
    """The model to train: the checkpoint's architecture when resuming (its weights are loaded by the Trainer), the
    model named, or a new one sized by the tokenizer; the latter two record the data's languages. A run with span
    tokens records them (`span_tokens`); a model fine-tuned without keeps its own."""
    overrides = config_overrides(model_args)
    if data_args.span_token_share:
        overrides["span_tokens"] = True
    if data_args.term_annotation_share:
        overrides["term_annotations"] = True
    if data_args.context_share:
        overrides["source_context"] = True
    if data_args.formality_share:
        overrides["formality_tags"] = True
    if checkpoint:
        config = AutoConfig.from_pretrained(checkpoint, **overrides)
        return TransformerMTForConditionalGeneration(config)
    # translation splits its input into sentences by the source language's rules; a model of several targets has
    # their language tokens instead of one target language
    overrides.update(
        source_lang=data_args.source_lang, target_lang=None if data_args.target_lang_column else data_args.target_lang
    )
    if setup.model_name_or_path:
        model = AutoModelForSeq2SeqLM.from_pretrained(setup.model_name_or_path, **overrides)
        fit_model_to_tokenizer(model, tokenizer)  # tokens the run added to its tokenizer get rows
        return model
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


def generation_config_for(model, setup: SetupArguments, training_args, checkpoint: str | None) -> GenerationConfig:
    """How the saved model decodes: beam search (4 unless --num_beams or --generation_num_beams says otherwise,
    early_stopping=True), up to its position table, so that a long input is never translated short (translate()
    bounds lengths relative to the input instead). Fine-tuning keeps the checkpoint's generation config (an
    imported Opus-MT model's forced_eos_token_id and bad_words_ids, a length penalty, ...) and changes only what
    this run sets."""
    asked = setup.num_beams or training_args.generation_num_beams  # what this run sets, if anything
    if setup.model_name_or_path and not checkpoint:
        generation_config = copy.deepcopy(model.generation_config)
        if asked:
            generation_config.num_beams = asked
        return generation_config
    return GenerationConfig(
        decoder_start_token_id=model.config.decoder_start_token_id,
        bos_token_id=model.config.bos_token_id,
        eos_token_id=model.config.eos_token_id,
        pad_token_id=model.config.pad_token_id,
        num_beams=asked or 4,
        # beam search stops once num_beams hypotheses are finished: as CTranslate2 searches, so that the fast engine
        # gives generate()'s tokens (transformer_mt.engines)
        early_stopping=True,
        max_length=model.config.max_position_embeddings,  # counts the decoder start token
    )


def set_evaluation_decoding(training_args, generation_config: GenerationConfig, data_args: DataArguments) -> None:
    """Evaluations decode as the saved model does (its beams, unless --generation_num_beams says otherwise), and stop
    where their references were truncated."""
    training_args.generation_num_beams = training_args.generation_num_beams or generation_config.num_beams
    training_args.generation_max_length = (
        training_args.generation_max_length or length_settings(data_args.max_target_length)["max_length"]
    )


def build_collator(tokenizer, model, setup: SetupArguments, data_args: DataArguments, training_args):
    """Batches padded to a multiple of PAD_TO_MULTIPLE_OF; with --bpe_dropout, training batches segmented anew."""
    collator = DataCollatorForSeq2Seq(
        tokenizer, model=model, label_pad_token_id=-100, pad_to_multiple_of=PAD_TO_MULTIPLE_OF
    )
    if setup.bpe_dropout:
        collator = BPEDropoutCollator(collator, tokenizer, setup.bpe_dropout, data_args)
        training_args.remove_unused_columns = False  # the collator needs the text; it returns only model inputs
    return collator


def build_callbacks(setup: SetupArguments, training_args, tokenized, collator, checkpoint: str | None):
    """The run's callbacks: early stopping with the best checkpoint, the time budget, the alignment probe, and the
    record of the vocabulary sizes asked for."""
    callbacks = configure_best_checkpoint(setup, training_args)
    if setup.max_train_minutes:
        callbacks.append(TimeBudgetCallback(setup.max_train_minutes))
    if setup.probe_steps and "validation" in tokenized:
        callbacks.append(AlignmentProbe(probe_batch(tokenized["validation"], collator), every=setup.probe_steps))
    callbacks.append(VocabularyRequest(**vocabulary_request(setup, checkpoint)))
    return callbacks


def configure_best_checkpoint(setup: SetupArguments, training_args) -> list[TrainerCallback]:
    """With --early_stopping_patience: keep the best checkpoint by the validation metric, load it at the end, and
    stop after that many evaluations without improvement. Returns the callbacks to add (none without it)."""
    if not setup.early_stopping_patience:
        return []
    if training_args.eval_strategy == "no":
        raise ValueError(
            "--early_stopping_patience needs evaluations during training: set --eval_strategy steps "
            "(with --eval_steps) or epoch."
        )
    if training_args.save_strategy != training_args.eval_strategy or (
        training_args.eval_strategy == "steps" and training_args.save_steps % training_args.eval_steps
    ):
        raise ValueError(
            f"--early_stopping_patience keeps the best checkpoint, so checkpoints must be saved where "
            f"evaluations happen: --save_strategy {training_args.save_strategy} --save_steps "
            f"{training_args.save_steps} against --eval_strategy {training_args.eval_strategy} "
            f"--eval_steps {training_args.eval_steps} (save_steps must be a multiple of eval_steps)."
        )
    training_args.load_best_model_at_end = True
    if training_args.metric_for_best_model is None:
        training_args.metric_for_best_model = "bleu" if training_args.predict_with_generate else "loss"
    if training_args.greater_is_better is None:
        training_args.greater_is_better = not training_args.metric_for_best_model.endswith("loss")
    return [EarlyStoppingCallback(early_stopping_patience=setup.early_stopping_patience)]


def destroy_process_group_at_exit() -> None:
    """Destroy the process group before the interpreter tears down its threads: left to exit, gloo can abort a
    finished process ("terminate called without an active exception"), failing a run that succeeded."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        atexit.unregister(destroy_process_group)
        atexit.register(destroy_process_group)


def destroy_process_group() -> None:
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


def build_trainer(
    model,
    tokenizer,
    datasets,
    tokenized,
    collator,
    callbacks,
    data_args: DataArguments,
    setup: SetupArguments,
    training_args,
) -> TransformerMTTrainer:
    """The trainer: scored by BLEU and chrF against the raw references with --predict_with_generate, with the time
    budget's progress bar under --max_train_minutes."""
    trainer = TransformerMTTrainer(
        model=model,
        args=training_args,
        train_dataset=tokenized.get("train"),
        eval_dataset=tokenized.get("validation"),
        data_collator=collator,
        processing_class=tokenizer,
        compute_metrics=ValidationMetrics(
            tokenizer,
            {split: list(dataset[data_args.target_lang]) for split, dataset in datasets.items() if split != "train"},
        )
        if training_args.predict_with_generate
        else None,
        callbacks=callbacks,
        max_tokens_per_batch=data_args.max_tokens_per_batch,
        ema_decay=setup.ema_decay,
        force_first_label=bool(data_args.target_lang_column),
    )
    if setup.max_train_minutes and not training_args.disable_tqdm:
        trainer.remove_callback(ProgressCallback)
        trainer.add_callback(TimeBudgetProgressCallback(setup.max_train_minutes))
    return trainer


def train(trainer, checkpoint: str | None, data_args: DataArguments, setup: SetupArguments, data_report: dict):
    """Train (resuming from `checkpoint`), average the last checkpoints if asked, and save the model, the metrics,
    the trainer state and training_info.json."""
    result = trainer.train(resume_from_checkpoint=checkpoint)
    result.metrics["train_target_tokens_per_second"] = round(
        trainer.target_tokens_trained() / result.metrics["train_runtime"], 1
    )
    averaging = average_at_end(trainer, setup.average_last) if setup.average_last else None
    trainer.save_model()  # model, tokenizer, generation config into output_dir
    if trainer.is_world_process_zero():
        write_training_info(trainer, data_args, setup, data_report, averaging)
    trainer.log_metrics("train", result.metrics)
    trainer.save_metrics("train", result.metrics)
    trainer.save_state()


def evaluate(trainer) -> None:
    """Score the validation split; save the metrics."""
    metrics = trainer.evaluate(metric_key_prefix="eval")
    trainer.log_metrics("eval", metrics)
    trainer.save_metrics("eval", metrics)


def predict(trainer, test_split) -> None:
    """Translate the test split with the saved model's beams; save its scores (with the metrics' signatures, as
    papers report them) and, with --predict_with_generate, write its translations."""
    if trainer.compute_metrics is not None:
        trainer.compute_metrics.use("test")
    prediction = trainer.predict(
        test_split, metric_key_prefix="test", num_beams=trainer.model.generation_config.num_beams
    )
    if trainer.compute_metrics is not None:  # how the scores were computed, as papers report them
        signatures = trainer.compute_metrics.signatures
        prediction.metrics.update({f"test_{key}": value for key, value in signatures.items()})
    trainer.log_metrics("test", prediction.metrics)
    trainer.save_metrics("test", prediction.metrics)
    if trainer.is_world_process_zero() and trainer.args.predict_with_generate:
        write_test_predictions(trainer, prediction.predictions)
