"""The trainer and what it is built with: `TransformerMTTrainer` (Seq2SeqTrainer with exactly resumable batches and
fused label smoothing), its callbacks (a time budget, the record of the run's vocabulary request), the BPE-dropout
collator, and `ValidationMetrics`, the BLEU/chrF of evaluations."""

import copy
import json
import os
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Sampler, SequentialSampler
from tqdm.auto import tqdm
from transformers import LogitsProcessorList, ProgressCallback, Seq2SeqTrainer, TrainerCallback
from transformers.trainer_callback import ExportableState
from transformers.trainer_pt_utils import LengthGroupedSampler
from transformers.trainer_utils import has_length

from ..constraints import ForcedFirstTokens
from ..metrics import load_translation_metric
from ..modeling.modeling_transformer_mt import seq2seq_loss
from ..tokenization import target_side
from .batching import PAD_TO_MULTIPLE_OF, TokenBatchSampler
from .data_arguments import DataArguments
from .ema import WeightEMA
from .preprocessing import encode_pairs


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
    """Seq2SeqTrainer whose length-grouped batches resume exactly, whose label smoothing is fused, and which keeps
    a moving average of the weights with `ema_decay`.

    With `label_smoothing_factor`, transformers' LabelSmoother computes log-softmax, gathers and sums over the
    logits in several passes; torch's cross-entropy does the same loss (equal to float rounding) in one fused
    kernel, about 3x faster on the main job's logits (~10% of a training step on 2 CPU cores).

    With `ema_decay` (`ema.WeightEMA`), the average is what evaluations during training score and what checkpoints
    save as their model; when training ends the model is the average (or, with `load_best_model_at_end`, the best
    checkpoint's average), and the weights the optimizer trained are in each checkpoint beside it.
    """

    def __init__(
        self,
        *args,
        max_tokens_per_batch: int | None = None,
        ema_decay: float | None = None,
        force_first_label: bool = False,
        **kwargs,
    ):
        super().__init__(*args, **kwargs)
        self.force_first_label = force_first_label
        self.max_tokens_per_batch = max_tokens_per_batch
        self.target_tokens_seen = 0
        if self.args.label_smoothing_factor and self.compute_loss_func is None:
            self.compute_loss_func = self.label_smoothed_loss
        if ema_decay and (self.is_fsdp_enabled or self.is_deepspeed_enabled):
            raise ValueError(
                f"--ema_decay {ema_decay} keeps an average of whole parameters: it does not work with "
                "FSDP or DeepSpeed, which shard them; drop one of the two."
            )
        self.ema = WeightEMA(self.model, ema_decay) if ema_decay else None
        self.training_weights_in_model = False  # True while training with a moving average: evaluations swap it in
        if self.ema is not None:
            self.add_callback(EMAUpdate(self.ema))

    def train(self, *args, **kwargs):
        self.training_weights_in_model = self.ema is not None
        try:
            result = super().train(*args, **kwargs)
        finally:
            self.training_weights_in_model = False
        if self.ema is not None and not (self.args.load_best_model_at_end and self.state.best_model_checkpoint):
            self.ema.copy_to(self.model)  # the run's model is the average (the best checkpoint's is one already)
        return result

    def evaluate(self, *args, **kwargs):
        if not self.training_weights_in_model:
            return super().evaluate(*args, **kwargs)
        with self.ema.swapped_in(self.model):
            return super().evaluate(*args, **kwargs)

    def prediction_step(self, model, inputs, prediction_loss_only, ignore_keys=None, **gen_kwargs):
        """With `force_first_label` (a run of several target languages), each translation begins with its
        reference's first token, its target-language token, as translation forces it."""
        if self.force_first_label and self.args.predict_with_generate and "labels" in inputs:
            # the run's evaluation settings (beams, lengths) stay: transformers uses them only when given nothing
            gen_kwargs = {**getattr(self, "_gen_kwargs", {}), **gen_kwargs}
            gen_kwargs["logits_processor"] = LogitsProcessorList([ForcedFirstTokens(inputs["labels"][:, 0].tolist())])
        return super().prediction_step(model, inputs, prediction_loss_only, ignore_keys=ignore_keys, **gen_kwargs)

    def _save_checkpoint(self, model, trial):
        if not self.training_weights_in_model:
            return super()._save_checkpoint(model, trial)
        if self.args.should_save:  # before the trainer state, which marks a checkpoint complete
            folder = os.path.join(self._get_output_dir(trial=trial), f"checkpoint-{self.state.global_step}")
            self.ema.save_training_weights(self.model, folder)
        with self.ema.swapped_in(self.model):
            return super()._save_checkpoint(model, trial)

    def _load_from_checkpoint(self, resume_from_checkpoint, model=None):
        super()._load_from_checkpoint(resume_from_checkpoint, model)
        if self.ema is not None and model is None:  # the checkpoint's model is the average; its trained weights
            self.ema.resume(self.model, resume_from_checkpoint)

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
            [len(ids) for ids in dataset["input_ids"]],
            [len(ids) for ids in dataset["labels"]],
            self.max_tokens_per_batch,
            self.data_seed,
            pad_to_multiple_of=PAD_TO_MULTIPLE_OF,
            num_processes=self.args.world_size,
            process_index=self.args.process_index,
        )
        loader = self.accelerator.prepare(
            DataLoader(
                dataset,
                batch_sampler=sampler,
                collate_fn=self.data_collator,
                num_workers=self.args.dataloader_num_workers,
                pin_memory=self.args.dataloader_pin_memory,
            )
        )
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

    def _get_eval_sampler(self, eval_dataset):
        """Validation and test in the split's own order, whatever the training sampler: ValidationMetrics pairs
        each prediction with the reference text at its position, and test_predictions.txt follows the split.
        (transformers 5 groups evaluation batches by length too when training does, which reordered them: the main
        job scored its own good translations against other sentences' references, BLEU ~0.2.) Several processes
        keep transformers' sharding, which gathers predictions back in order."""
        if eval_dataset is None or not has_length(eval_dataset):
            return None
        return SequentialSampler(eval_dataset) if self.args.world_size <= 1 else None


class EMAUpdate(TrainerCallback):
    """Updates the moving average after each optimizer step, before the step's evaluation or checkpoint."""

    def __init__(self, ema: WeightEMA):
        self.ema = ema

    def on_step_end(self, args, state, control, model=None, **kwargs):
        self.ema.update(model)


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
            self.training_bar = tqdm(
                total=round(self.seconds),
                unit="s",
                dynamic_ncols=True,
                bar_format="{l_bar}{bar}| {n:.0f}/{total} s of the time budget{postfix}",
            )

    def on_step_end(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            elapsed = min(time.monotonic() - self.start, self.seconds)
            self.training_bar.set_postfix_str(f"step {state.global_step}", refresh=False)
            self.training_bar.update(elapsed - self.training_bar.n)


class VocabularyRequest(TrainerCallback, ExportableState):
    """Records in every checkpoint (its trainer_state.json) the vocabulary sizes the run asked for, so that a resumed
    run compares its flags with them, not with the sizes realised: a small corpus yields fewer tokens than asked."""

    def __init__(self, tokenizer_vocab_size: int | None = None, decoder_vocab_size: int | None = None):
        self.tokenizer_vocab_size, self.decoder_vocab_size = tokenizer_vocab_size, decoder_vocab_size

    def state(self) -> dict:
        return {
            "args": {"tokenizer_vocab_size": self.tokenizer_vocab_size, "decoder_vocab_size": self.decoder_vocab_size},
            "attributes": {},
        }

    def on_train_begin(self, args, state, control, **kwargs):
        # A state resumed from a checkpoint saved before this record existed has no entry for it yet.
        state.stateful_callbacks.setdefault(type(self).__name__, self.state())

    @classmethod
    def recorded(cls, checkpoint: str) -> dict | None:
        """The sizes a checkpoint's run asked for, or None for a checkpoint saved before they were recorded."""
        with open(os.path.join(checkpoint, "trainer_state.json"), encoding="utf-8") as f:
            saved = json.load(f).get("stateful_callbacks", {}).get(cls.__name__)
        return saved["args"] if saved else None


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
        encoded = encode_pairs(
            self.tokenizer, [f[source] for f in features], [f[target] for f in features], self.data_args
        )
        encoded.pop("long")  # the pair was kept when the split was made; cut now if dropout lengthened it
        return self.collator([{key: values[i] for key, values in encoded.items()} for i in range(len(features))])


class ValidationMetrics:
    """Seq2SeqTrainer's compute_metrics: BLEU and chrF of the predictions against the reference texts of the split
    being evaluated, as written in the data (never decoded from labels, which may be cut or lack characters the
    vocabulary does not have). `use(split)` names that split; evaluations during training use "validation"."""

    def __init__(self, tokenizer, references: dict[str, list[str]]):
        self.tokenizer, self.references, self.split = tokenizer, references, "validation"
        self.metric = load_translation_metric()
        self.signatures = {}

    def use(self, split: str) -> "ValidationMetrics":
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
