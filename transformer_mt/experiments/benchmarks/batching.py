"""Sentence batches against token batches: real (non-pad) target tokens per second of training."""

import json
import statistics
import tempfile
from pathlib import Path

from transformer_mt.presets import MAIN_JOB

from .harness import (
    StepTimer,
    interleaved_order,
    markdown_table,
    prepare_data,
    ratio_rows,
    run_worker,
    sample_stats,
    training_arguments,
)
from .marian import OURS, load_engine, save_model_pairs


class TargetTokenTimer(StepTimer):
    """StepTimer that also records the real (non-pad) target tokens of every timed step."""

    def __init__(self, warmup: int, tokens_seen):
        super().__init__(warmup)
        self.tokens_seen, self.tokens, self.last = tokens_seen, [], 0

    def on_step_end(self, args, state, control, **kwargs):
        super().on_step_end(args, state, control, **kwargs)
        seen = self.tokens_seen()
        if state.global_step > self.warmup:
            self.tokens.append(seen - self.last)
        self.last = seen


def batching_worker(spec: dict) -> dict:
    """TransformerMT (the preset's size) trained on sentence batches (the main job's length-grouped pairs) or token
    batches of at most `max_tokens` padded tokens: real target tokens per second of optimizer step."""
    from transformers import AutoTokenizer, DataCollatorForSeq2Seq

    from transformer_mt.training import PAD_TO_MULTIPLE_OF, TransformerMTTrainer

    data = json.loads(Path(spec["data"]).read_text())
    model = load_engine(data["workdir"], spec["preset"], OURS).train()
    with tempfile.TemporaryDirectory() as output_dir:
        args = training_arguments(output_dir, spec["warmup"] + spec["steps"], length_grouped=True)
        from datasets import Dataset

        tokenizer = AutoTokenizer.from_pretrained(data["tokenizer"])
        trainer = TransformerMTTrainer(
            model=model,
            args=args,
            train_dataset=Dataset.from_list(data["pairs"]),
            data_collator=DataCollatorForSeq2Seq(
                tokenizer, model=model, label_pad_token_id=-100, pad_to_multiple_of=PAD_TO_MULTIPLE_OF
            ),
            max_tokens_per_batch=spec["max_tokens"],
        )
        timer = TargetTokenTimer(spec["warmup"], lambda: int(trainer.target_tokens_seen))
        trainer.add_callback(timer)
        trainer.train()
    return {
        "tokens_per_second": sum(timer.tokens) / sum(timer.seconds),
        "target tokens per step": sum(timer.tokens) / len(timer.tokens),
    }


def compare_batching(
    data_dir: str,
    max_tokens=(2048, 4096),
    repeats: int = 3,
    threads: int = 2,
    train_steps: int = 30,
    preset: str = "main-job",
    warmup: int = 3,
) -> dict:
    """Real target tokens/s of sentence batches and of token batches of each size, interleaved, each run its own
    process (`train_steps` timed steps after `warmup` untimed ones); {"batching": {engine: summary}}."""
    engines = {
        f"{MAIN_JOB['per_device_train_batch_size']} pairs, length-grouped": None,
        **{f"<= {n} padded tokens": n for n in max_tokens},
    }
    with tempfile.TemporaryDirectory(prefix="transformer-mt-benchmark-") as workdir:
        data = prepare_data(Path(workdir), data_dir, num_train=4000, num_sources=1)
        save_model_pairs(Path(workdir), (preset,))
        samples = {engine: [] for engine in engines}
        for engine in interleaved_order(list(engines), repeats):
            samples[engine].append(
                run_worker(
                    batching_worker,
                    {
                        "data": str(data),
                        "preset": preset,
                        "max_tokens": engines[engine],
                        "warmup": warmup,
                        "steps": train_steps,
                    },
                    threads,
                )
            )
    return {
        "threads": threads,
        "preset": preset,
        "batching": {
            engine: {
                **sample_stats([run["tokens_per_second"] for run in runs]),
                "target tokens per step": statistics.mean(run["target tokens per step"] for run in runs),
            }
            for engine, runs in samples.items()
        },
    }


def batching_report(results: dict) -> str:
    baseline = next(iter(results["batching"]))
    rows = ratio_rows({"training step": results["batching"]}, baseline, "real target tokens/s")
    return f"**training batches, {results['preset']} preset** ({results['threads']} threads)\n\n{markdown_table(rows)}"
