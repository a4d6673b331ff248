"""The BERT-style embedding block of encoder and decoder: token (x sqrt(d)) + segment + position (absolute
strategies; relative ones act in self-attention)."""

import math

import torch
from torch import nn

from .positional_embeddings import build_position_embedding


class TokenEmbedding(nn.Embedding):
    """A token table (source, target, the tied output projection); its own class so that init can find it."""


def token_init_std(config) -> float:
    """The standard deviation a new model draws its token rows with: d_model^-1/2 where the forward pass scales them
    by sqrt(d_model), so that they start at unit variance (fairseq's init), else init_std."""
    return config.d_model**-0.5 if config.scale_embedding else config.init_std


class TransformerMTEmbeddings(nn.Module):
    """token * scale + segment + absolute position -> LayerNorm (optional) -> dropout."""

    def __init__(self, config, vocab_size: int, num_heads: int):
        super().__init__()
        # Each stack owns its table; the model ties them (and the output projection) through _tied_weights_keys.
        self.embed_tokens = TokenEmbedding(vocab_size, config.d_model, config.pad_token_id)
        self.embed_scale = math.sqrt(config.d_model) if config.scale_embedding else 1.0
        self.token_type_embeddings = (
            nn.Embedding(config.type_vocab_size, config.d_model) if config.type_vocab_size > 0 else None
        )
        # The stack's one position strategy: the vectors added here, or the term its self-attention applies.
        self.embed_positions = build_position_embedding(config, num_heads)
        self.layernorm_embedding = (
            nn.LayerNorm(config.d_model, eps=config.layer_norm_eps) if config.layernorm_embedding else None
        )
        self.dropout = nn.Dropout(config.dropout)

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        token_type_ids: torch.LongTensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        position_ids: torch.LongTensor | None = None,
    ) -> torch.Tensor:
        """
        Args:
            input_ids: (B, T) token ids, or None when `inputs_embeds` is given.
            token_type_ids: (B, T) segment ids; absent means segment 0 everywhere.
            inputs_embeds: (B, T, d_model) unscaled token embeddings used instead of looking up `input_ids`.
            position_ids: (B, T) or (T,) positions; the stacks pass them, with the cache offset when decoding
                (default 0..T-1).

        The caller has reserved the positions (`embed_positions.reserve`); nothing here reads device values.
        """
        if inputs_embeds is None:
            inputs_embeds = self.embed_tokens(input_ids)
        embeddings = inputs_embeds * self.embed_scale

        if self.token_type_embeddings is not None:
            if token_type_ids is None:
                embeddings = embeddings + self.token_type_embeddings.weight[0]  # segment 0, broadcast over (B, T)
            else:
                embeddings = embeddings + self.token_type_embeddings(token_type_ids)

        if self.embed_positions.absolute:
            if position_ids is None:
                position_ids = torch.arange(embeddings.size(1), device=embeddings.device)
            embeddings = embeddings + self.embed_positions(position_ids).to(embeddings.dtype)  # (T or B, T, d)

        if self.layernorm_embedding is not None:
            embeddings = self.layernorm_embedding(embeddings)
        return self.dropout(embeddings)
