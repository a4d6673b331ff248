"""Token-sized training batches: fairseq's `--max-tokens`, Marian's `mini-batch-fit`.

A batch of sentences of similar length is cheap (little padding) and a batch's cost is its padded size, so the
batches hold as many pairs as fit in a budget of padded source + target tokens rather than a fixed count. They are
made once per run, from the pairs sorted by length after a seeded shuffle (so that equal lengths mix), and only
their order changes from epoch to epoch, drawn from (seed, epoch) alone: a run resumed mid-epoch sees the same
batches in the same order, whatever happened to the global random state.
"""

import math

import numpy as np
import torch
from torch.utils.data import Sampler


PAD_TO_MULTIPLE_OF = 8  # batches are padded to a multiple of 8 tokens (tensor-core and vector friendly)


def padded(length: int, multiple: int) -> int:
    """`length` rounded up to a multiple of `multiple`, as the collator pads it."""
    return -(-length // multiple) * multiple


def token_batches(
    source_lengths, target_lengths, max_tokens: int, seed: int, pad_to_multiple_of: int = 1
) -> list[list[int]]:
    """Indices grouped into batches whose padded size, rows x (longest source + longest target), is at most
    `max_tokens`; every index lands in exactly one batch."""
    source_lengths, target_lengths = np.asarray(source_lengths), np.asarray(target_lengths)
    longest = padded(int(source_lengths.max()), pad_to_multiple_of) + padded(
        int(target_lengths.max()), pad_to_multiple_of
    )
    if longest > max_tokens:
        raise ValueError(
            f"max_tokens_per_batch ({max_tokens}) is smaller than the longest pair, {longest} padded "
            "source + target tokens; raise it or truncate shorter (max_source_length/max_target_length)."
        )
    shuffled = np.random.default_rng(seed).permutation(len(source_lengths))
    # Sorted by target, then source length (fairseq's order); the stable sort keeps the shuffle among equals.
    order = shuffled[np.lexsort((source_lengths[shuffled], target_lengths[shuffled]))]
    batches, batch, longest_source, longest_target = [], [], 0, 0
    for index in order.tolist():
        source = max(longest_source, padded(int(source_lengths[index]), pad_to_multiple_of))
        target = max(longest_target, padded(int(target_lengths[index]), pad_to_multiple_of))
        if batch and (len(batch) + 1) * (source + target) > max_tokens:
            batches.append(batch)
            batch = []
            source = padded(int(source_lengths[index]), pad_to_multiple_of)
            target = padded(int(target_lengths[index]), pad_to_multiple_of)
        batch.append(index)
        longest_source, longest_target = source, target
    batches.append(batch)
    return batches


class TokenBatchSampler(Sampler):
    """Yields this process's token-bounded batches of an epoch, in an order drawn from (seed, epoch).

    With several processes, the epoch's batches are dealt round-robin, each process drawing its own; the epoch is
    filled up to a multiple of the process count with its first batches again, so every process takes the same
    number of steps and every pair is seen at least once an epoch (exactly once on one process).
    """

    def __init__(
        self,
        source_lengths,
        target_lengths,
        max_tokens: int,
        seed: int,
        pad_to_multiple_of: int = 1,
        num_processes: int = 1,
        process_index: int = 0,
    ):
        self.batches = token_batches(source_lengths, target_lengths, max_tokens, seed, pad_to_multiple_of)
        self.seed, self.epoch = seed, 0
        self.num_processes, self.process_index = num_processes, process_index

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return math.ceil(len(self.batches) / self.num_processes)

    def __iter__(self):
        order = torch.randperm(len(self.batches), generator=torch.Generator().manual_seed(self.seed + self.epoch))
        order = order.tolist()
        for position in range(self.process_index, len(self) * self.num_processes, self.num_processes):
            yield self.batches[order[position % len(order)]]


__all__ = ["TokenBatchSampler", "padded", "token_batches"]
