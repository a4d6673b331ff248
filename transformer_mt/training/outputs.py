"""What a run leaves in output_dir besides the Trainer's own files: the average of its last checkpoints (kept when
it validates at least as well), training_info.json, the test split's translations; and the push of it all to the
Hub."""

import json
import logging
import os

import numpy as np

from ..data import data_sources, dataset_card_data
from ..hub import push_to_hub
from .arguments import SetupArguments
from .averaging import average_weights, newest_complete
from .data_arguments import DataArguments


logger = logging.getLogger(__name__)


def average_at_end(trainer, count: int) -> dict:
    """Average the run's last `count` complete checkpoints into the trainer's model when the average validates at
    least as well as the model the run ended with; otherwise leave that model. Returns what was compared."""
    args = trainer.args
    metric = "eval_" + (args.metric_for_best_model or "loss").removeprefix("eval_")
    greater = args.greater_is_better if args.greater_is_better is not None else not metric.endswith("loss")
    checkpoints = newest_complete(args.output_dir, count)
    if len(checkpoints) < 2:
        logger.warning(
            f"--average_last {count}: the run saved {len(checkpoints)} complete checkpoint(s), too few "
            "to average; the model is the run's own."
        )
        return {
            "checkpoints": [path.name for path in checkpoints],
            "kept": "unaveraged",
            "reason": "fewer than 2 checkpoints",
        }
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
    return {
        "checkpoints": [path.name for path in checkpoints],
        "metric": metric,
        "averaged": averaged,
        "unaveraged": ended,
        "kept": "averaged" if better else "unaveraged",
    }


def load_weights(model, weights: dict) -> None:
    """Load saved weights (tied tables stored once, as transformers saves them) into `model`, all of them."""
    result = model.load_state_dict(weights, strict=False)
    missing = set(result.missing_keys) - set(model.all_tied_weights_keys)
    if missing or result.unexpected_keys:
        raise ValueError(
            f"the weights do not fit the model: missing {sorted(missing)[:5]}, unexpected "
            f"{sorted(result.unexpected_keys)[:5]}"
        )
    model.tie_weights()


def write_training_info(
    trainer, data_args: DataArguments, setup: SetupArguments, data_report: dict, averaging: dict | None = None
) -> None:
    """training_info.json beside the model: what the model card says about the data and the recipe."""
    card = dataset_card_data(data_args.data)
    sources = data_sources(data_args.data, limit=data_args.max_train_samples)
    licenses = (data_args.data_license.split(",") if data_args.data_license else card.get("license")) or list(
        dict.fromkeys(source["license"] for source in sources if source["license"])
    )
    args = trainer.args
    batch = (
        f"{data_args.max_tokens_per_batch} tokens"
        if data_args.max_tokens_per_batch
        else f"{args.per_device_train_batch_size} pairs"
    )
    info = {
        "source_lang": data_args.source_lang,
        "target_lang": data_args.target_lang,
        "data": data_args.data
        if not os.path.isdir(data_args.data)
        else os.path.basename(os.path.normpath(data_args.data)),
        "dataset_config_name": data_args.dataset_config_name,
        "data_licenses": [licenses] if isinstance(licenses, str) else [name.strip() for name in licenses],
        "data_attribution": data_args.data_attribution or card.get("attribution"),
        "data_sources": sources,
        "preset": setup.preset,
        "recipe": {
            "steps": trainer.state.global_step,
            "learning_rate": args.learning_rate,
            "lr_scheduler_type": str(getattr(args.lr_scheduler_type, "value", args.lr_scheduler_type)),
            "warmup_steps": args.warmup_steps,
            "label_smoothing": args.label_smoothing_factor,
            "batch": batch,
            "processes": args.world_size,
            "ema_decay": setup.ema_decay,
        },
        "augmentation": {
            "uppercase_share": data_args.uppercase_share,
            "titlecase_share": data_args.titlecase_share,
            "span_token_share": data_args.span_token_share,
            "term_annotation_share": data_args.term_annotation_share,
        },
        "side_constraints": {
            "context_column": data_args.context_column,
            "context_share": data_args.context_share,
            "formality_share": data_args.formality_share,
        },
        "training_pairs": data_report,
        "averaging": averaging,
    }
    with open(os.path.join(args.output_dir, "training_info.json"), "w", encoding="utf-8") as f:
        json.dump(info, f, indent=2, ensure_ascii=False)


def write_test_predictions(trainer, predictions) -> None:
    """output_dir/test_predictions.txt: the test split's translations, one a line."""
    tokenizer = trainer.processing_class
    ids = np.where(predictions != -100, predictions, tokenizer.pad_token_id)
    with open(os.path.join(trainer.args.output_dir, "test_predictions.txt"), "w", encoding="utf-8") as f:
        f.writelines(t.strip() + "\n" for t in tokenizer.batch_decode(ids, skip_special_tokens=True))


def push_run(training_args, setup: SetupArguments) -> None:
    """Push output_dir to the Hub (remote code and model card included) as --hub_model_id, else its own name."""
    repo_id = training_args.hub_model_id or os.path.basename(os.path.abspath(training_args.output_dir))
    uploaded, url = push_to_hub(
        training_args.output_dir,
        repo_id,
        overwrite=setup.hub_overwrite,
        private=bool(training_args.hub_private_repo),
        token=training_args.hub_token,
    )
    print(f"Pushed {len(uploaded)} files of {training_args.output_dir} to {repo_id}: {url}")
