"""Train (or fine-tune) a TransformerMT translation model with Seq2SeqTrainer.

    python scripts/train.py --data data/en-de --output_dir runs/en-de --do_train --position_embedding_type learned \
        --max_steps 2000 --per_device_train_batch_size 64 --learning_rate 1e-3

Every `Seq2SeqTrainingArguments` flag works (`--bf16`, `--resume_from_checkpoint`, `--report_to tensorboard`, ...),
and so does every `TransformerMTConfig` field (`--d_model 256 --normalize_before true ...`). The same command runs
under `accelerate launch --num_processes 2 scripts/train.py ...`. The output directory ends up holding the model,
the tokenizer and the generation config, loadable with `AutoModelForSeq2SeqLM`/`AutoTokenizer`, plus
`all_results.json` and the trainer state with the loss history (see `transformer_mt.training`).
"""

from transformer_mt import training
from transformer_mt.commands.cli import command


@command
def main(argv=None):
    trainer = training.run(*training.parse_args(argv))
    if trainer.is_world_process_zero() and trainer.args.do_train:
        print(f"Model, tokenizer and generation config saved in {trainer.args.output_dir}")


if __name__ == "__main__":
    main()
