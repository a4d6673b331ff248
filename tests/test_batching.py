"""Token-sized batches: bounded, covering every pair once an epoch, resumable, dealt to processes."""

import json
import subprocess

import numpy as np
import pytest

from transformer_mt.training import parse_args
from transformer_mt.training.batching import TokenBatchSampler, padded, token_batches

from .utils import TINY, command_env, train, train_command


def lengths(seed=0, n=500):
    generator = np.random.default_rng(seed)
    return generator.integers(1, 40, n), generator.integers(1, 50, n)


@pytest.mark.parametrize("multiple", [1, 8])
def test_every_batch_fits_the_budget_and_every_pair_lands_once(multiple):
    source, target = lengths()
    batches = token_batches(source, target, max_tokens=400, seed=3, pad_to_multiple_of=multiple)
    assert sorted(i for batch in batches for i in batch) == list(range(len(source)))
    for batch in batches:
        cost = len(batch) * (padded(max(source[batch]), multiple) + padded(max(target[batch]), multiple))
        assert cost <= 400
    # Packed, not one pair a batch: every batch but the last could not take the next pair.
    assert len(batches) < len(source) / 4
    # Similar lengths together: far less padding than batches of random pairs of the same sizes.
    order = np.random.default_rng(0).permutation(len(source))
    sorted_padding = sum(len(b) * max(target[b]) - target[b].sum() for b in batches)
    sizes = np.cumsum([len(b) for b in batches])[:-1]
    random_padding = sum(len(b) * max(target[b]) - target[b].sum() for b in np.split(order, sizes))
    assert sorted_padding < random_padding / 3


def test_a_budget_below_the_longest_pair_is_named():
    with pytest.raises(ValueError, match=r"max_tokens_per_batch \(50\) is smaller than the longest pair, 64"):
        token_batches([10, 30], [12, 34], max_tokens=50, seed=0)
    with pytest.raises(ValueError, match="--max_tokens_per_batch must hold the longest pair, 128 padded tokens"):
        parse_args(
            [
                *TINY,
                "--output_dir",
                "x",
                "--max_source_length",
                "60",
                "--max_target_length",
                "64",
                "--max_tokens_per_batch",
                "100",
            ]
        )


def test_the_order_changes_each_epoch_and_is_the_same_for_the_same_epoch():
    source, target = lengths()
    sampler = TokenBatchSampler(source, target, 400, seed=5)
    epochs = []
    for epoch in (0, 1, 0):
        sampler.set_epoch(epoch)
        epochs.append(list(sampler))
    assert epochs[0] == epochs[2] != epochs[1]
    assert sorted(map(sorted, epochs[0])) == sorted(map(sorted, epochs[1]))  # the same batches, reordered
    assert len(epochs[0]) == len(sampler)


@pytest.mark.parametrize("processes", [2, 3])
def test_processes_draw_their_own_batches_and_together_cover_the_epoch(processes):
    source, target = lengths(n=301)
    single = list(TokenBatchSampler(source, target, 300, seed=1))
    shards = [
        list(TokenBatchSampler(source, target, 300, seed=1, num_processes=processes, process_index=rank))
        for rank in range(processes)
    ]
    assert len({len(shard) for shard in shards}) == 1  # the same number of steps on every process
    dealt = [batch for step in zip(*shards) for batch in step]
    assert dealt[: len(single)] == single  # round-robin over the one-process order
    assert dealt[len(single) :] == single[: len(dealt) - len(single)]  # filled up with the epoch's first batches


def test_training_with_token_batches_uses_them(tmp_path):
    trainer = train(
        tmp_path / "run", "--do_train", "--max_steps", "4", "--max_tokens_per_batch", "256", "--save_strategy", "no"
    )
    kept = len(trainer.train_dataset)  # --long_pairs drop leaves the pairs within the tiny preset's 32 tokens
    assert 0 < kept < 200
    loader = trainer.get_train_dataloader()
    budget_batches = list(loader)
    assert len(loader) > kept * 16 // 256  # every kept pair holds >= 8 + 8 padded tokens
    for batch in budget_batches:
        assert batch["input_ids"].numel() + batch["labels"].numel() <= 256
    assert sum(len(batch["input_ids"]) for batch in budget_batches) == kept


@pytest.mark.slow
def test_two_processes_deal_token_batches_between_them(tmp_path):
    """One process of a 2-process group takes half the epoch's batches: 3 steps are twice the epoch fraction."""
    flags = ["--do_train", "--max_steps", "3", "--save_strategy", "no", "--max_tokens_per_batch", "256"]
    single = train(tmp_path / "one", *flags)
    result = subprocess.run(
        train_command(tmp_path / "ddp", *flags, processes=2),
        env=command_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    state = json.loads((tmp_path / "ddp" / "trainer_state.json").read_text())
    assert state["global_step"] == 3
    assert state["epoch"] == pytest.approx(2 * single.state.epoch, rel=0.1)
