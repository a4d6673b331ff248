"""Train (or fine-tune) a TransformerMT translation model with Seq2SeqTrainer: the library behind scripts/train.py.

    data_args, setup_args, model_args, training_args = parse_args(["--data", "data/en-de", "--output_dir", "out",
                                                                   "--do_train", "--max_steps", "100"])
    trainer = run(data_args, setup_args, model_args, training_args)

The four argument groups are dataclasses: `DataArguments`, `SetupArguments`, `ModelArguments` (every field of
`TransformerMTConfig` but those in `arguments.EXCLUDED`, None meaning the config's default) and transformers'
`Seq2SeqTrainingArguments`. `run` loads the data, builds or loads the tokenizer and the model, trains, evaluates,
predicts and pushes as the training arguments ask, and leaves the model, the tokenizer and the generation config in
`output_dir`, loadable with `AutoModelForSeq2SeqLM`/`AutoTokenizer`, with `all_results.json` and the trainer state
beside them.

One module per question: `arguments` (the command line, its setup and model flags), `data_arguments` (the data a
run reads and the training-time transforms), `trainer` (the Trainer, its callbacks, collator and metrics),
`preprocessing` (the data), `batching` (token-sized batches, the padding multiple), `augmentation` (a share of the
training pairs upper-cased, title-cased or with reserved span tokens), `checks` (what a run checks before it writes
anything), `run` (the steps of a run), `ema` (the moving average of the weights), `outputs` (what a run leaves
behind), `suggestion_data` (a fine-tune on accepted suggestions: some held out, the rest mixed with replayed original
data).
"""

from ..checkpoints import RESUMABLE_FIELDS
from .arguments import (
    DEFAULT_VOCAB_SIZE,
    ModelArguments,
    SetupArguments,
    argument_parser,
    bf16_by_default,
    config_overrides,
    parse_args,
)
from .batching import PAD_TO_MULTIPLE_OF
from .checks import check_launch, check_resume_flags, check_run
from .data_arguments import DataArguments
from .outputs import average_at_end, load_weights, write_test_predictions, write_training_info
from .preprocessing import check_splits, encode_pairs, limit_samples, load_splits, preprocess
from .run import (
    build_callbacks,
    build_collator,
    build_model,
    build_tokenizer,
    configure_best_checkpoint,
    generation_config_for,
    run,
)
from .trainer import (
    BPEDropoutCollator,
    EpochSeededSampler,
    TimeBudgetCallback,
    TimeBudgetProgressCallback,
    TransformerMTTrainer,
    ValidationMetrics,
    VocabularyRequest,
)


__all__ = [
    "DEFAULT_VOCAB_SIZE",
    "PAD_TO_MULTIPLE_OF",
    "RESUMABLE_FIELDS",
    "BPEDropoutCollator",
    "DataArguments",
    "EpochSeededSampler",
    "ModelArguments",
    "SetupArguments",
    "TimeBudgetCallback",
    "TimeBudgetProgressCallback",
    "TransformerMTTrainer",
    "ValidationMetrics",
    "VocabularyRequest",
    "argument_parser",
    "average_at_end",
    "bf16_by_default",
    "build_callbacks",
    "build_collator",
    "build_model",
    "build_tokenizer",
    "check_launch",
    "check_resume_flags",
    "check_run",
    "check_splits",
    "config_overrides",
    "configure_best_checkpoint",
    "encode_pairs",
    "generation_config_for",
    "limit_samples",
    "load_splits",
    "load_weights",
    "parse_args",
    "preprocess",
    "run",
    "write_test_predictions",
    "write_training_info",
]
