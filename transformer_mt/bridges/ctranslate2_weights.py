"""How each part of a TransformerMT model fills CTranslate2's `TransformerSpec` (`bridges.ctranslate2` builds the
spec and calls these): the embeddings with their positions and segments, each layer's attention, feed-forward
network and LayerNorms, as forward() computes them.
"""

import torch


def set_stack(spec, embeddings_spec, stack, config, length: int, segments_spec=()) -> None:
    """Embeddings, positions (with the segment-0 vector folded in, or the segment table in `segments_spec`) and
    LayerNorms of an encoder or decoder; `length`: the rows of the position table.

    Rotary positions act in attention, and CTranslate2 then adds no position vector (its encoder table, which must
    exist, is zeros): the token rows are written already scaled and with the segment vector added, computed as
    forward() computes them, so the sums are the same floats."""
    block = stack.embeddings
    weight = block.embed_tokens.weight
    segment = block.token_type_embeddings.weight[0] if block.token_type_embeddings is not None else None
    positions = block.embed_positions
    if segments_spec:  # a second embedding of the segments, merged by addition before the scaling (switched off)
        segments_spec[0].weight = block.token_type_embeddings.weight
        embeddings_spec.weight, spec.scale_embeddings = weight * block.embed_scale, False
        table = positions.table(length) if positions.absolute else torch.zeros(length, config.d_model)
        if hasattr(spec, "position_encodings"):
            spec.position_encodings.encodings = table.to(weight.dtype)
    elif positions.absolute:
        embeddings_spec.weight = weight
        spec.scale_embeddings = block.embed_scale if config.scale_embedding else False
        table = positions.table(length)
        if segment is not None:
            table = table + segment  # segment 0: what every single sentence gets
        spec.position_encodings.encodings = table.to(weight.dtype)
    else:
        rows = weight * block.embed_scale
        embeddings_spec.weight = rows + segment if segment is not None else rows
        spec.scale_embeddings = False
        if hasattr(spec, "position_encodings"):
            spec.position_encodings.encodings = torch.zeros(length, config.d_model, dtype=weight.dtype)
    if block.layernorm_embedding is not None:
        set_layer_norm(spec.layernorm_embedding, block.layernorm_embedding)
    if stack.layer_norm is not None:
        set_layer_norm(spec.layer_norm, stack.layer_norm)


def set_layer(spec, layer) -> None:
    """Self-attention and feed-forward network, shared by encoder and decoder layers."""
    set_attention(spec.self_attention, layer.self_attn, layer.self_attn_layer_norm, fused=True)
    set_linear(spec.ffn.linear_0, layer.fc1)
    set_linear(spec.ffn.linear_1, layer.fc2)
    set_layer_norm(spec.ffn.layer_norm, layer.final_layer_norm)


def set_attention(spec, attention, layer_norm, fused: bool) -> None:
    """Self-attention takes one fused QKV projection; cross-attention takes Q, then fused KV (from the encoder)."""
    projections = (attention.q_proj, attention.k_proj, attention.v_proj)
    groups = [projections] if fused else [projections[:1], projections[1:]]
    for linear_spec, group in zip(spec.linear[:-1], groups, strict=True):  # the last one is out_proj
        linear_spec.weight = torch.cat([linear.weight for linear in group])
        linear_spec.bias = torch.cat([linear.bias for linear in group])
    set_linear(spec.linear[-1], attention.out_proj)
    set_layer_norm(spec.layer_norm, layer_norm)


def set_linear(spec, linear) -> None:
    spec.weight = linear.weight
    spec.bias = linear.bias


def set_layer_norm(spec, layer_norm) -> None:
    spec.gamma = layer_norm.weight
    spec.beta = layer_norm.bias


__all__ = ["set_attention", "set_layer", "set_layer_norm", "set_linear", "set_stack"]
