"""Input checks at the forward entries: a ValueError naming the argument, the value and what is allowed.

Shapes and dtypes are Python attributes, checked on every eager call. Values cost a host read: one for each
stack's ids (token, segment and position ids together), one for the labels (their range and whether they hold a
target), so a training forward reads the host three times. They are checked once per sequence: not for the
tokens generate() appends to a cache, and never while compiling (every check returns at once then, so that a
compiled graph holds no host read and no data-dependent branch).
"""

import torch


IGNORE_INDEX = -100  # labels that the loss skips (padding), as everywhere in transformers


def check_inputs(
    *,
    prefix: str,
    vocab_size: int,
    type_vocab_size: int,
    d_model: int,
    input_ids: torch.Tensor | None,
    inputs_embeds: torch.Tensor | None,
    attention_mask: torch.Tensor | None,
    token_type_ids: torch.Tensor | None,
    position_ids: torch.Tensor | None,
    past_length: int | torch.Tensor = 0,
    check_values: bool = True,
) -> None:
    """Check one stack's inputs; `prefix` is "" for the encoder's arguments and "decoder_" for the decoder's.
    Nothing is checked while compiling."""
    if torch.compiler.is_compiling():
        return
    if (input_ids is None) == (inputs_embeds is None):
        raise ValueError(f"Pass exactly one of `{prefix}input_ids` and `{prefix}inputs_embeds`.")
    if input_ids is not None:
        _check_ids_tensor(f"{prefix}input_ids", input_ids)
        if input_ids.dim() != 2:
            raise ValueError(f"`{prefix}input_ids` must have shape (batch, length), got {tuple(input_ids.shape)}.")
        shape = tuple(input_ids.shape)
    else:
        if inputs_embeds.dim() != 3 or inputs_embeds.shape[-1] != d_model:
            raise ValueError(
                f"`{prefix}inputs_embeds` must have shape (batch, length, d_model={d_model}), got "
                f"{tuple(inputs_embeds.shape)}."
            )
        shape = tuple(inputs_embeds.shape[:2])
    if 0 in shape:
        name, given = ("input_ids", input_ids) if input_ids is not None else ("inputs_embeds", inputs_embeds)
        raise ValueError(
            f"`{prefix}{name}` is empty (shape {tuple(given.shape)}): there is nothing to "
            f"{'decode' if prefix else 'encode'}."
        )
    for name, tensor in (("token_type_ids", token_type_ids), ("position_ids", position_ids)):
        if tensor is not None:
            _check_ids_tensor(f"{prefix}{name}", tensor)
            if tuple(tensor.shape) not in (shape, shape[1:]):
                raise ValueError(
                    f"`{prefix}{name}` has shape {tuple(tensor.shape)} but `{prefix}input_ids` has shape "
                    f"{shape}; they must match."
                )
    if attention_mask is not None:
        if attention_mask.dim() not in (2, 4):
            raise ValueError(
                f"`{prefix}attention_mask` must have shape (batch, length) (or be a prepared 4-D mask), "
                f"got {attention_mask.dim()} dimensions: {tuple(attention_mask.shape)}."
            )
        expected = (shape[0], past_length + shape[1]) if isinstance(past_length, int) else None
        if attention_mask.dim() == 2 and expected is not None and tuple(attention_mask.shape) != expected:
            raise ValueError(
                f"`{prefix}attention_mask` has shape {tuple(attention_mask.shape)} but must be "
                f"{expected} "
                f"(batch, cached + new tokens) for `{prefix}input_ids` of shape {shape}."
            )
    if check_values:
        no_segments = "but this model has no segment table (type_vocab_size=0): pass no token_type_ids, or zeros"
        _check_ranges(
            [
                (f"{prefix}input_ids", input_ids, vocab_size, f"outside [0, {prefix}vocab_size={vocab_size})"),
                (
                    f"{prefix}token_type_ids",
                    token_type_ids,
                    max(type_vocab_size, 1),
                    f"outside [0, type_vocab_size={type_vocab_size})" if type_vocab_size else no_segments,
                ),
                (f"{prefix}position_ids", position_ids, None, "but positions must be >= 0"),
            ]
        )


def check_labels(
    labels: torch.Tensor, vocab_size: int, shift_needs: dict[str, int | None], shifted: bool = False
) -> None:
    """Labels are ids in [0, vocab_size) or -100 (ignored), with at least one target to compute the loss on.

    `shift_needs` holds the config ids that building `decoder_input_ids` from the labels needs (empty when the
    caller gave decoder inputs of its own). `shifted`: the loss predicts labels[:, 1:] (a causal LM's), so that is
    where a target must be. Nothing is checked while compiling.
    """
    if torch.compiler.is_compiling():
        return
    _check_ids_tensor("labels", labels)
    if labels.dim() != 2:
        raise ValueError(f"`labels` must have shape (batch, length), got {tuple(labels.shape)}.")
    if labels.numel() == 0:
        raise ValueError(
            f"`labels` is empty (shape {tuple(labels.shape)}): there is no target to compute the loss on."
        )
    for name, value in shift_needs.items():
        if value is None:
            raise ValueError(
                f"`labels` without `decoder_input_ids`: the decoder inputs are the labels shifted right "
                f"behind decoder_start_token_id and padded with pad_token_id, but config.{name} is None."
            )
    targets = labels.ne(IGNORE_INDEX)
    outside = targets & ((labels < 0) | (labels >= vocab_size))
    if shifted:
        targets = targets[:, 1:]  # the first label is never predicted
    has_target, has_outside = torch.stack([targets.any(), outside.any()]).tolist()  # the labels' host read
    if has_outside:
        raise ValueError(
            f"`labels` contains {labels[outside][0].item()}, outside [0, "
            f"decoder_vocab_size={vocab_size}) "
            f"(use {IGNORE_INDEX} for positions the loss should skip)."
        )
    if not has_target:
        where = " after the first position (a causal LM predicts labels[:, 1:])" if shifted else ""
        raise ValueError(f"`labels` are all {IGNORE_INDEX}{where}: there is no target token to compute the loss on.")


def positions_needed(seq_length: int, position_ids: torch.Tensor | None, cache=None) -> int:
    """How many rows of the position table this call reads (reads given position_ids on the host)."""
    if position_ids is not None:
        return int(position_ids.max()) + 1
    if cache is None:
        return seq_length
    # The cache's key length after this call: past + new tokens, or a static cache's full length.
    return cache.get_mask_sizes(seq_length, 0)[0]


def _check_ids_tensor(name: str, tensor: torch.Tensor) -> None:
    if not isinstance(tensor, torch.Tensor):
        raise ValueError(f"`{name}` must be a torch.Tensor of integer ids, got {type(tensor).__name__}.")
    if tensor.is_floating_point() or tensor.is_complex() or tensor.dtype == torch.bool:
        raise ValueError(f"`{name}` must hold integer ids (torch.long), got {tensor.dtype}.")


def _check_ranges(checks) -> None:
    """Raise for the first (name, ids, upper bound or None, message) whose ids fall outside [0, upper)."""
    checks = [(name, ids, upper, message) for name, ids, upper, message in checks if ids is not None]
    if not checks:
        return
    outside = [(ids < 0) if upper is None else (ids < 0) | (ids >= upper) for _, ids, upper, _ in checks]
    flags = torch.stack([mask.any() for mask in outside]).tolist()  # this stack's one host read
    for (name, ids, _, message), mask, flag in zip(checks, outside, flags):
        if flag:
            raise ValueError(f"`{name}` contains {ids[mask][0].item()}, {message}.")
