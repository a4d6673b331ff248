"""The training pipeline end to end on ~200 real pairs: loss, checkpoints, resume, saved model, accelerate."""

import copy
import itertools
import json
import math
import shutil
import subprocess

import pytest
import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, pipeline

from transformer_mt import translate
from transformer_mt.tokenization import tokenizer_fingerprint

from .utils import SENTENCES, TINY, command_env, saved_weights, train, train_command


def run(output_dir, *flags):
    return train(output_dir, *flags)


def test_loss_falls_and_the_saved_model_loads_and_translates(tmp_path, position_type):
    output_dir = tmp_path / "run"
    trainer = run(
        output_dir,
        "--do_train",
        "--do_predict",
        "--predict_with_generate",
        "--max_steps",
        60,
        "--position_embedding_type",
        position_type,
        "--save_strategy",
        "no",
    )
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    assert len(losses) == 12
    assert losses[-1] < losses[0] - 1.0, losses  # more than one nat per token lower

    test = json.loads((output_dir / "test_results.json").read_text())
    assert 0 <= test["test_bleu"] <= 100 and 0 <= test["test_chrf"] <= 100
    assert test["test_bleu_signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:")
    assert test["test_chrf_signature"].startswith("nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:")
    assert len((output_dir / "test_predictions.txt").read_text().splitlines()) == 16

    model = AutoModelForSeq2SeqLM.from_pretrained(output_dir)
    tokenizer = AutoTokenizer.from_pretrained(output_dir)
    assert model.config.position_embedding_type == position_type and model.config.d_model == 32
    assert model.config.vocab_size == len(tokenizer) and model.generation_config.num_beams == 2
    assert model.config.tokenizer_fingerprint == tokenizer_fingerprint(tokenizer)  # a swapped tokenizer is noticed
    assert tokenizer.model_max_length == model.config.max_position_embeddings  # truncation stops at the table
    # the saved model is not bound to the training targets' length (17 here): only to its position table
    assert model.generation_config.max_length == model.config.max_position_embeddings
    sentences = ["Click the Save button.", "Close the window."]
    translations = translate(model, tokenizer, sentences)
    assert len(translations) == 2 and all(isinstance(t, str) for t in translations)
    translator = pipeline("translation", model=str(output_dir), tokenizer=str(output_dir))
    assert [r["translation_text"].strip() for r in translator(sentences)] == translations


def test_checkpoint_resume_finishes_the_run(tmp_path, trained_tiny_model):
    output_dir = tmp_path / "run"  # a copy of the session's run of --max_steps 20 --save_steps 10
    shutil.copytree(trained_tiny_model, output_dir)
    checkpoint = output_dir / "checkpoint-20"
    assert (checkpoint / "model.safetensors").exists() and (checkpoint / "trainer_state.json").exists()
    assert not (checkpoint / "pytorch_model.bin").exists()  # weights as safetensors; the trainer's own state
    # (optimizer.pt, rng_state.pth) is read back with torch.load(weights_only=True)

    resumed = run(
        output_dir, "--do_train", "--max_steps", 30, "--save_steps", 10, "--resume_from_checkpoint", checkpoint
    )
    assert resumed.state.global_step == 30
    logged_steps = [e["step"] for e in resumed.state.log_history if "loss" in e]
    assert logged_steps == [5, 10, 15, 20, 25, 30]  # history of the first run carried over, then continued
    assert (output_dir / "checkpoint-30").exists()
    AutoModelForSeq2SeqLM.from_pretrained(output_dir)


def test_a_new_run_does_not_replace_a_saved_model(tmp_path):
    output_dir = tmp_path / "run"
    run(output_dir, "--do_train", "--max_steps", 2, "--save_strategy", "no")
    saved = (output_dir / "model.safetensors").read_bytes()
    with pytest.raises(FileExistsError, match="is not empty; pass --overwrite_output_dir true"):
        run(output_dir, "--do_train", "--max_steps", 2, "--save_strategy", "no", "--learning_rate", 1e-2)
    assert (output_dir / "model.safetensors").read_bytes() == saved
    run(
        output_dir,
        "--do_train",
        "--max_steps",
        2,
        "--save_strategy",
        "no",
        "--learning_rate",
        1e-2,
        "--overwrite_output_dir",
        "true",
    )
    assert (output_dir / "model.safetensors").read_bytes() != saved


@pytest.mark.slow  # over 3 s on 2 cores: the fast loop keeps under 3 minutes
def test_time_budget_stops_training_and_still_saves(tmp_path):
    output_dir = tmp_path / "run"
    trainer = run(
        output_dir, "--do_train", "--max_steps", 100_000, "--max_train_minutes", 0.05, "--save_strategy", "no"
    )
    assert 0 < trainer.state.global_step < 100_000
    assert (output_dir / "model.safetensors").exists()


@pytest.mark.slow  # two training processes under accelerate launch
def test_two_processes_train_as_one_group_and_save_one_model(tmp_path):
    """The shipped DDP config (configs/accelerate/ddp.yaml), launched on 2 CPU processes, bf16 off."""
    output_dir = tmp_path / "run"
    command = train_command(
        output_dir,
        "--do_train",
        "--max_steps",
        "4",
        "--save_strategy",
        "no",
        processes=2,
        accelerate_config="ddp.yaml",
    )
    result = subprocess.run(command, env=command_env(), capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((output_dir / "train_results.json").read_text())["train_runtime"] > 0
    assert list(output_dir.glob("*.safetensors")) == [output_dir / "model.safetensors"]
    state = json.loads((output_dir / "trainer_state.json").read_text())
    assert state["global_step"] == 4
    # 32 of the pairs kept (those within the tiny preset's lengths) a step, 2 x 16: one group, not two alone
    dropped = json.loads((output_dir / "training_info.json").read_text())["training_pairs"]["long_pairs"]["pairs"]
    assert state["epoch"] == pytest.approx(4 / math.ceil((200 - dropped) / 32))
    AutoModelForSeq2SeqLM.from_pretrained(output_dir)


def step_logs(output_dir) -> list[tuple[float, float]]:
    """(loss, grad_norm) logged at every optimizer step."""
    history = json.loads((output_dir / "trainer_state.json").read_text())["log_history"]
    return [(entry["loss"], entry["grad_norm"]) for entry in history if "loss" in entry]


@pytest.mark.slow  # three training runs and two processes under torchrun, per case
@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_gradient_accumulation_and_processes_give_the_loss_and_gradients_of_one_batch(tmp_path, label_smoothing):
    """16 pairs a step as 1x16, 2x8, 4x4 micro-batches and on 2 processes x 8: the same step, to float rounding."""
    common = [
        "--do_train",
        "--max_steps",
        "3",
        "--logging_steps",
        "1",
        "--save_strategy",
        "no",
        "--dropout",
        "0",
        "--label_smoothing_factor",
        label_smoothing,
    ]
    runs = {}
    for micro_batches in (1, 2, 4):
        runs[f"1 process, {micro_batches}x{16 // micro_batches}"] = output_dir = tmp_path / f"ga{micro_batches}"
        train(
            output_dir,
            *common,
            "--per_device_train_batch_size",
            16 // micro_batches,
            "--gradient_accumulation_steps",
            micro_batches,
        )
    runs["2 processes, 8 each"] = output_dir = tmp_path / "ddp"
    result = subprocess.run(
        train_command(output_dir, *common, "--per_device_train_batch_size", 8, processes=2),
        env=command_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]

    reference_logs, reference_weights = step_logs(tmp_path / "ga1"), saved_weights(tmp_path / "ga1")
    assert len(reference_logs) == 3
    for name, output_dir in runs.items():
        for step, ((loss, grad_norm), (expected_loss, expected_norm)) in enumerate(
            zip(step_logs(output_dir), reference_logs, strict=True)
        ):
            assert loss == pytest.approx(expected_loss, rel=1e-4), (name, step)
            assert grad_norm == pytest.approx(expected_norm, rel=1e-4), (name, step)
        for key, tensor in saved_weights(output_dir).items():
            torch.testing.assert_close(tensor, reference_weights[key], rtol=0, atol=1e-5, msg=f"{name}: {key}")


def test_the_fused_label_smoothing_equals_transformers_label_smoother():
    from transformers.trainer_pt_utils import LabelSmoother

    from transformer_mt.modeling.modeling_transformer_mt import seq2seq_loss

    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(4, 6, 50, generator=generator, requires_grad=True)
    labels = torch.randint(0, 50, (4, 6), generator=generator)
    labels[1, 4:] = -100
    count = (labels != -100).sum()
    for num_items_in_batch in (None, count + 7):  # a share of a larger accumulated batch
        theirs = LabelSmoother(0.1)({"logits": logits}, labels, num_items_in_batch=num_items_in_batch)
        (their_grad,) = torch.autograd.grad(theirs, logits)
        ours = seq2seq_loss(logits, labels, num_items_in_batch, label_smoothing=0.1)
        (our_grad,) = torch.autograd.grad(ours, logits)
        torch.testing.assert_close(ours, theirs, rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(our_grad, their_grad, rtol=1e-5, atol=1e-7)


EARLY_STOPPING = [
    "--do_train",
    "--predict_with_generate",
    "--eval_strategy",
    "steps",
    "--eval_steps",
    "2",
    "--save_steps",
    "2",
    "--early_stopping_patience",
    "2",
    "--max_eval_samples",
    "8",
    "--generation_max_length",
    "6",
]


def evaluations(trainer) -> list[tuple[int, float]]:
    """(step, validation BLEU) of the evaluations during training (not the --do_eval one after it)."""
    during = itertools.takewhile(lambda entry: "train_runtime" not in entry, trainer.state.log_history)
    return [(entry["step"], entry["eval_bleu"]) for entry in during if "eval_bleu" in entry]


def test_early_stopping_stops_and_ends_with_the_best_checkpoint(tmp_path):
    trainer = run(tmp_path / "run", *EARLY_STOPPING, "--max_steps", "40")
    scores = evaluations(trainer)
    best_step, best = max(scores, key=lambda score: (score[1], -score[0]))  # the first of the highest
    # Stopped two evaluations after the last improvement, long before max_steps.
    assert [step for step, _ in scores][-1] == best_step + 2 * 2 < 40
    assert trainer.state.global_step == best_step + 4
    assert trainer.state.best_model_checkpoint.endswith(f"checkpoint-{best_step}")
    assert trainer.state.best_metric == best
    # The saved model is the best checkpoint's, not the last step's.
    best_weights = saved_weights(tmp_path / "run" / f"checkpoint-{best_step}")
    last_weights = saved_weights(tmp_path / "run" / f"checkpoint-{trainer.state.global_step}")
    final = saved_weights(tmp_path / "run")
    assert all(torch.equal(final[key], best_weights[key]) for key in final)
    assert any(not torch.equal(final[key], last_weights[key]) for key in final)


@pytest.mark.slow  # over 3 s on 2 cores: the fast loop keeps under 3 minutes
def test_early_stopping_continues_its_count_when_resumed(tmp_path):
    straight = run(tmp_path / "straight", *EARLY_STOPPING, "--max_steps", "40")
    run(tmp_path / "resumed", *EARLY_STOPPING, "--max_steps", "2")  # one evaluation, then a new process resumes it
    resumed = run(tmp_path / "resumed", *EARLY_STOPPING, "--max_steps", "40", "--resume_from_checkpoint", "last")
    assert resumed.state.global_step == straight.state.global_step
    best = [trainer.state.best_model_checkpoint.rsplit("-", 1)[1] for trainer in (resumed, straight)]
    assert best[0] == best[1]


def test_early_stopping_needs_evaluations_where_checkpoints_are_saved(tmp_path):
    with pytest.raises(ValueError, match="--early_stopping_patience needs evaluations during training"):
        run(tmp_path / "a", "--do_train", "--early_stopping_patience", "2", "--max_steps", "4")
    with pytest.raises(ValueError, match="save_steps must be a multiple of eval_steps"):
        run(
            tmp_path / "b",
            "--do_train",
            "--eval_strategy",
            "steps",
            "--eval_steps",
            "4",
            "--save_steps",
            "6",
            "--early_stopping_patience",
            "2",
            "--max_steps",
            "4",
        )


@pytest.mark.slow  # over 3 s on 2 cores: the fast loop keeps under 3 minutes
def test_a_time_budget_with_the_best_checkpoint_evaluates_where_it_stops(tmp_path):
    trainer = run(
        tmp_path / "run",
        *EARLY_STOPPING,
        "--eval_steps",
        "1000",
        "--save_steps",
        "1000",
        "--max_steps",
        "100000",
        "--max_train_minutes",
        "0.05",
    )
    scores = evaluations(trainer)
    assert trainer.state.global_step < 100000
    assert [step for step, _ in scores] == [trainer.state.global_step]  # evaluated (and saved) at the stop
    assert trainer.state.best_model_checkpoint.endswith(f"checkpoint-{trainer.state.global_step}")


def test_the_time_budget_progress_bar_counts_seconds_of_the_budget(tmp_path, capsys):
    run(
        tmp_path / "run",
        "--do_train",
        "--max_steps",
        "100000",
        "--max_train_minutes",
        "0.03",
        "--save_strategy",
        "no",
        "--disable_tqdm",
        "false",
    )
    bar = capsys.readouterr().err
    assert "s of the time budget" in bar and "/2 s of the time budget" in bar, bar[-500:]
    assert "100000" not in bar


def test_real_target_tokens_per_second_counts_every_label_of_an_epoch_once(tmp_path):
    trainer = run(tmp_path / "run", "--do_train", "--num_train_epochs", "1", "--save_strategy", "no")
    metrics = json.loads((tmp_path / "run" / "train_results.json").read_text())
    labels = sum(len(row["labels"]) for row in trainer.train_dataset)  # 200 pairs, each label ending in </s>
    assert trainer.target_tokens_trained() == labels
    assert metrics["train_target_tokens_per_second"] == pytest.approx(labels / metrics["train_runtime"], rel=1e-3)


def test_run_leaves_the_callers_arguments_as_they_were(tmp_path):
    from transformer_mt import training

    args = training.parse_args(
        [
            *TINY,
            "--output_dir",
            str(tmp_path / "run"),
            "--do_train",
            "--max_steps",
            "2",
            "--save_steps",
            "2",
            "--eval_strategy",
            "steps",
            "--eval_steps",
            "2",
            "--early_stopping_patience",
            "1",
            "--predict_with_generate",
            "--push_to_hub",
            "false",
        ]
    )
    before = copy.deepcopy(args[-1].to_dict())
    trainer = training.run(*args)
    assert args[-1].to_dict() == before
    assert trainer.args.load_best_model_at_end and trainer.args.metric_for_best_model == "bleu"
    assert trainer.args.generation_max_length == 17  # TINY's --generation_max_length, kept


def test_fine_tuning_keeps_the_checkpoints_generation_config(tmp_path, trained_tiny_model):
    from transformers import GenerationConfig

    shutil.copytree(trained_tiny_model, tmp_path / "base")  # a trained run, ours to edit
    saved = GenerationConfig.from_pretrained(tmp_path / "base")
    saved.update(forced_eos_token_id=2, bad_words_ids=[[5]], length_penalty=0.6, num_beams=5)
    saved.save_pretrained(tmp_path / "base")  # as an imported Opus-MT model carries them

    run(
        tmp_path / "tuned",
        "--do_train",
        "--max_steps",
        "2",
        "--save_strategy",
        "no",
        "--model_name_or_path",
        tmp_path / "base",
        "--tokenizer_name_or_path",
        tmp_path / "base",
        "--generation_num_beams",
        "3",
    )
    tuned = GenerationConfig.from_pretrained(tmp_path / "tuned")
    assert (tuned.forced_eos_token_id, tuned.bad_words_ids, tuned.length_penalty) == (2, [[5]], 0.6)
    assert tuned.num_beams == 3  # what the run set


# --- Tokenizer choices: Unigram, separate source/target vocabularies, BPE-dropout ---

SENTENCES_EN = ["Click the Save button.", "Close the window."]


def test_a_unigram_tokenizer_trains_saves_and_translates(tmp_path):
    from transformer_mt.tokenization import tokenizer_type_of

    output_dir = tmp_path / "run"
    run(output_dir, "--do_train", "--max_steps", 4, "--save_strategy", "no", "--tokenizer_type", "unigram")
    model = AutoModelForSeq2SeqLM.from_pretrained(output_dir)
    tokenizer = AutoTokenizer.from_pretrained(output_dir)
    assert tokenizer_type_of(tokenizer) == "unigram" and tokenizer.tokenize("Close the window.")[0].startswith("▁")
    assert model.config.vocab_size == len(tokenizer)
    assert model.config.tokenizer_fingerprint == tokenizer_fingerprint(tokenizer)
    assert_pipeline_decodes_generate(output_dir, model, tokenizer.batch_decode)


def assert_pipeline_decodes_generate(output_dir, model, decode):
    """pipeline("translation") of the saved run gives `decode` of generate()'s ids."""
    tokenizer = AutoTokenizer.from_pretrained(output_dir)
    with torch.no_grad():
        ids = model.eval().generate(
            **tokenizer(SENTENCES_EN, return_tensors="pt", padding=True), num_beams=1, max_new_tokens=12
        )
    expected = [text.strip() for text in decode(ids, skip_special_tokens=True)]
    translator = pipeline(
        "translation", model=str(output_dir), tokenizer=str(output_dir), num_beams=1, max_new_tokens=12
    )
    assert [r["translation_text"].strip() for r in translator(SENTENCES_EN)] == expected


def test_separate_vocabularies_train_save_load_and_generate(tmp_path):
    output_dir = tmp_path / "run"
    trainer = run(
        output_dir,
        "--do_train",
        "--max_steps",
        30,
        "--save_strategy",
        "no",
        "--tokenizer_vocab_size",
        300,
        "--decoder_vocab_size",
        350,
    )
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    assert losses[-1] < losses[0] - 1.0, losses
    assert (output_dir / "target_tokenizer.json").is_file()
    model = AutoModelForSeq2SeqLM.from_pretrained(output_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(output_dir)
    config = model.config
    assert tokenizer.separate_vocabs and not config.share_encoder_decoder_embeddings
    assert (config.vocab_size, config.decoder_vocab_size) == (len(tokenizer), len(tokenizer.target_tokenizer))
    assert config.vocab_size != config.decoder_vocab_size
    assert model.model.encoder.get_input_embeddings().num_embeddings == config.vocab_size
    assert model.get_output_embeddings().weight.shape[0] == config.decoder_vocab_size
    assert config.tokenizer_fingerprint == tokenizer_fingerprint(tokenizer)
    # generate() gives target ids; the pipeline decodes them with the target vocabulary
    assert_pipeline_decodes_generate(output_dir, model, tokenizer.target_tokenizer.batch_decode)


def test_tokenizer_flags_that_cannot_apply_are_refused(tmp_path):
    first = tmp_path / "first"
    run(
        first,
        "--do_train",
        "--max_steps",
        2,
        "--save_strategy",
        "steps",
        "--save_steps",
        2,
        "--decoder_vocab_size",
        300,
    )
    with pytest.raises(ValueError, match="--decoder_vocab_size 320 differs from .*target vocabulary"):
        run(first, "--do_train", "--max_steps", 4, "--resume_from_checkpoint", "last", "--decoder_vocab_size", 320)
    with pytest.raises(ValueError, match="--tokenizer_type unigram differs from .*tokenizer \\(bpe\\)"):
        run(first, "--do_train", "--max_steps", 4, "--resume_from_checkpoint", "last", "--tokenizer_type", "unigram")
    with pytest.raises(ValueError, match="--decoder_vocab_size 300 shapes a tokenizer to train, but this run loads"):
        run(
            tmp_path / "second",
            "--do_train",
            "--max_steps",
            2,
            "--tokenizer_name_or_path",
            str(first),
            "--decoder_vocab_size",
            300,
        )
    with pytest.raises(ValueError, match="--bpe_dropout applies to BPE tokenizers, not --tokenizer_type unigram"):
        run(tmp_path / "third", "--do_train", "--max_steps", 2, "--tokenizer_type", "unigram", "--bpe_dropout", 0.1)
    assert not (tmp_path / "third").exists()  # refused before anything is written
    with pytest.raises(ValueError, match=r"--bpe_dropout must be a probability in \(0, 1\), got 1.0"):
        run(tmp_path / "fourth", "--do_train", "--max_steps", 2, "--bpe_dropout", 1.0)


def test_bpe_dropout_segments_training_batches_anew_and_leaves_the_saved_tokenizer_exact(tmp_path):
    from transformer_mt.training import BPEDropoutCollator

    output_dir = tmp_path / "run"
    trainer = run(output_dir, "--do_train", "--max_steps", 4, "--save_strategy", "no", "--bpe_dropout", 0.3)
    saved = json.loads((output_dir / "tokenizer.json").read_text())
    assert saved["model"]["type"] == "BPE" and saved["model"]["dropout"] is None
    collator = trainer.data_collator
    assert isinstance(collator, BPEDropoutCollator)
    rows = [trainer.train_dataset[i] for i in range(8)]
    assert {"en", "de"} <= set(rows[0])  # the training split keeps its text for the collator
    exact = collator.collator(
        [{key: row[key] for key in ("input_ids", "token_type_ids", "attention_mask", "labels")} for row in rows]
    )
    draws = [collator(copy.deepcopy(rows)) for _ in range(5)]
    assert any(
        draw["input_ids"].shape != exact["input_ids"].shape or not torch.equal(draw["input_ids"], exact["input_ids"])
        for draw in draws
    )
    longer = [(draw["labels"] != -100).sum() >= (exact["labels"] != -100).sum() for draw in draws]
    assert all(longer)  # skipped merges only ever split tokens
    # batches without text (validation, test) are the exact segmentation
    eval_rows = [trainer.eval_dataset[i] for i in range(4)]
    assert "en" not in eval_rows[0]
    assert torch.equal(collator(eval_rows)["input_ids"], collator.collator(eval_rows)["input_ids"])


def pair_lengths(output_dir) -> list[tuple[int, int]]:
    """Source and target tokens of each of the tiny recipe's 200 training pairs, with the run's tokenizer."""
    from transformer_mt.data import load_parallel_data

    tokenizer = AutoTokenizer.from_pretrained(output_dir)
    train_split = load_parallel_data(TINY[TINY.index("--data") + 1])["train"].select(range(200))
    sources = tokenizer(list(train_split["en"]))["input_ids"]
    targets = tokenizer(text_target=list(train_split["de"]))["input_ids"]
    return [(len(s), len(t)) for s, t in zip(sources, targets)]


def long_pairs_of(output_dir, limit: int) -> list[bool]:
    """Whether each of the tiny recipe's 200 training pairs is longer than `limit` tokens on either side."""
    return [max(lengths) > limit for lengths in pair_lengths(output_dir)]


@pytest.mark.parametrize("policy", ["drop", "truncate"])
def test_long_training_pairs_are_dropped_and_counted_or_truncated_without_their_end(tmp_path, policy):
    limit = 24
    trainer = run(
        tmp_path / "run",
        "--do_train",
        "--max_steps",
        1,
        "--save_strategy",
        "no",
        "--long_pairs",
        policy,
        "--max_source_length",
        limit,
        "--max_target_length",
        limit,
    )
    long = long_pairs_of(tmp_path / "run", limit)
    assert 20 < sum(long) < 180  # the limit bites, and leaves pairs to train on
    info = json.loads((tmp_path / "run" / "training_info.json").read_text())
    assert info["training_pairs"]["long_pairs"] == {
        "policy": policy,
        "pairs": sum(long),
        "max_source_length": limit,
        "max_target_length": limit,
    }
    labels = trainer.train_dataset["labels"]
    assert max(map(len, labels)) <= limit and max(map(len, trainer.train_dataset["input_ids"])) <= limit
    if policy == "drop":
        assert len(labels) == 200 - sum(long) and all(ids[-1] == 2 for ids in labels)
    else:
        assert len(labels) == 200
        cut = [ids for ids, (_, target) in zip(labels, pair_lengths(tmp_path / "run")) if target > limit]
        assert cut and all(2 not in ids for ids in cut)  # a cut target does not end: it has no </s>
        assert all(ids[-1] == 2 for ids in trainer.train_dataset["input_ids"])  # a cut source keeps its </s>


def test_validation_and_test_are_never_dropped_and_are_scored_against_their_full_references(tmp_path):
    import sacrebleu

    from transformer_mt.data import load_parallel_data

    output_dir = tmp_path / "run"
    trainer = run(
        output_dir,
        "--do_train",
        "--do_eval",
        "--do_predict",
        "--predict_with_generate",
        "--max_steps",
        2,
        "--save_strategy",
        "no",
        "--max_source_length",
        8,
        "--max_target_length",
        8,
    )
    assert len(trainer.eval_dataset) == 16
    references = list(load_parallel_data(TINY[TINY.index("--data") + 1])["test"]["de"][:16])
    hypotheses = (output_dir / "test_predictions.txt").read_text(encoding="utf-8").splitlines()
    test = json.loads((output_dir / "test_results.json").read_text())
    assert test["test_bleu"] == sacrebleu.corpus_bleu(hypotheses, [references]).score
    assert test["test_chrf"] == sacrebleu.corpus_chrf(hypotheses, [references]).score


def test_joined_pairs_are_added_to_the_training_split_within_the_lengths(tmp_path):
    trainer = run(
        tmp_path / "run",
        "--do_train",
        "--max_steps",
        1,
        "--save_strategy",
        "no",
        "--joined_pairs_share",
        0.25,
        "--max_source_length",
        160,
        "--max_target_length",
        160,
    )
    info = json.loads((tmp_path / "run" / "training_info.json").read_text())
    long = sum(long_pairs_of(tmp_path / "run", 160))
    assert info["training_pairs"]["joined_pairs"] == 50
    assert info["training_pairs"]["long_pairs"]["pairs"] == long  # no joined pair is over the limits
    assert len(trainer.train_dataset) == 200 - long + 50
    assert max(map(len, trainer.train_dataset["input_ids"])) > max(
        map(len, trainer.train_dataset["input_ids"][: 200 - long])
    )  # longer inputs than any single pair


@pytest.mark.parametrize("better", ["averaged", "unaveraged"])
def test_averaging_at_the_end_keeps_the_model_that_validates_better(tmp_path, monkeypatch, better):
    from transformer_mt import training
    from transformer_mt.training.averaging import average_weights, last_complete

    evaluated = []
    real_evaluate = training.TransformerMTTrainer.evaluate

    def evaluate(self, *args, **kwargs):  # the run's own evaluation, with the average made to win or lose
        metrics = real_evaluate(self, *args, **kwargs)
        evaluated.append(metrics["eval_loss"])
        if len(evaluated) == 2:  # the second evaluation of average_at_end is the average's
            metrics["eval_loss"] = evaluated[0] + (-1 if better == "averaged" else 1)
        return metrics

    monkeypatch.setattr(training.TransformerMTTrainer, "evaluate", evaluate)
    output_dir = tmp_path / "run"
    trainer = run(
        output_dir, "--do_train", "--max_steps", 12, "--save_steps", 4, "--save_total_limit", 3, "--average_last", 3
    )
    info = json.loads((output_dir / "training_info.json").read_text())["averaging"]
    assert info["checkpoints"] == ["checkpoint-4", "checkpoint-8", "checkpoint-12"] and info["kept"] == better
    saved = saved_weights(output_dir)
    expected = (
        average_weights(last_complete(output_dir, 3))
        if better == "averaged"
        else saved_weights(output_dir / "checkpoint-12")
    )
    assert saved.keys() == expected.keys()
    assert all(torch.equal(saved[key], expected[key]) for key in saved)  # the saved model is the one kept
    assert torch.equal(trainer.model.lm_head.weight, trainer.model.model.shared.weight)  # still tied


def test_averaging_at_the_end_says_so_when_the_run_saved_too_few_checkpoints(tmp_path, caplog):
    output_dir = tmp_path / "run"
    run(output_dir, "--do_train", "--max_steps", 4, "--save_steps", 4, "--average_last", 3)
    info = json.loads((output_dir / "training_info.json").read_text())["averaging"]
    assert info == {"checkpoints": ["checkpoint-4"], "kept": "unaveraged", "reason": "fewer than 2 checkpoints"}
    assert "too few to average" in caplog.text
    assert all(
        torch.equal(a, b)
        for a, b in zip(saved_weights(output_dir).values(), saved_weights(output_dir / "checkpoint-4").values())
    )


def test_evaluation_keeps_the_splits_order_when_training_groups_by_length(tmp_path):
    """Predictions are scored against the split's reference texts by position, so evaluation batches must come in
    the split's order; transformers 5 groups them by length when training does (the main job's recipe), which
    paired each translation with another sentence's reference (the main job reported BLEU 0.2)."""
    trainer = run(
        tmp_path / "run",
        "--do_train",
        "--do_eval",
        "--max_steps",
        1,
        "--save_strategy",
        "no",
        "--train_sampling_strategy",
        "group_by_length",
        "--max_eval_samples",
        64,
    )
    pad = trainer.processing_class.pad_token_id
    seen = [
        [token for token in row if token != pad]
        for batch in trainer.get_eval_dataloader()
        for row in batch["input_ids"].tolist()
    ]
    assert seen == trainer.eval_dataset["input_ids"]
    assert len({len(ids) for ids in seen}) > 1  # lengths differ: a length-grouped order would show


def test_every_config_field_is_a_train_flag_or_excluded_with_its_reason():
    """`python scripts/train.py --FIELD` for every TransformerMTConfig field (int | None ones too), unless
    arguments.EXCLUDED says why not."""
    import dataclasses

    from transformer_mt import TransformerMTConfig, training
    from transformer_mt.training.arguments import EXCLUDED

    fields = set(TransformerMTConfig.__annotations__)
    flags = set(vars(training.argument_parser().parse_known_args(["--output_dir", "x"])[0]))
    for name in fields:
        assert name in flags or name in EXCLUDED, name
    assert fields - set(EXCLUDED) == {field.name for field in dataclasses.fields(training.ModelArguments)}
    assert set(EXCLUDED) <= fields and all(reason.strip() for reason in EXCLUDED.values())


def test_alignment_heads_is_a_flag_that_reaches_the_config(tmp_path):
    from transformer_mt import train_tokenizer, training

    tokenizer = train_tokenizer(SENTENCES * 5, vocab_size=300, min_frequency=1)
    for flags, expected in (([], None), (["--alignment_heads", "2"], 2)):
        data_args, setup, model_args, _ = training.parse_args([*TINY, "--output_dir", str(tmp_path), *flags])
        assert model_args.alignment_heads == expected
        model = training.build_model(setup, model_args, tokenizer, None, data_args)
        assert model.config.alignment_heads == expected
