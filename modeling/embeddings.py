"""The BERT-style embedding block shared by encoder and decoder: token (x sqrt(d)) + segment + position."""

import math

import torch
from torch import nn

from .positional_embeddings import build_position_embedding


class TokenEmbedding(nn.Embedding):
    """The token table (source, target, and the tied output projection); its own class so init can find it."""


class TransformerMTEmbeddings(nn.Module):
    """token * scale + segment + position -> LayerNorm (optional) -> dropout."""

    def __init__(self, config, embed_tokens: nn.Embedding):
        super().__init__()
        self.embed_tokens = embed_tokens  # the model's shared table, tied to the output projection
        self.embed_scale = math.sqrt(config.d_model) if config.scale_embedding else 1.0
        self.token_type_embeddings = (
            nn.Embedding(config.type_vocab_size, config.d_model) if config.type_vocab_size > 0 else None
        )
        self.embed_positions = build_position_embedding(config)
        self.layernorm_embedding = (
            nn.LayerNorm(config.d_model, eps=config.layer_norm_eps) if config.layernorm_embedding else None
        )
        self.dropout = nn.Dropout(config.dropout)

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        token_type_ids: torch.LongTensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        past_length: int = 0,
    ) -> torch.Tensor:
        """
        Args:
            input_ids: (B, T) token ids, or None when `inputs_embeds` is given.
            token_type_ids: (B, T) segment ids; absent means segment 0 everywhere.
            inputs_embeds: (B, T, d_model) unscaled token embeddings used instead of looking up `input_ids`.
            past_length: tokens already in the cache; positions continue from there.
        """
        if inputs_embeds is None:
            inputs_embeds = self.embed_tokens(input_ids)
        seq_length = inputs_embeds.size(1)
        embeddings = inputs_embeds * self.embed_scale

        if self.token_type_embeddings is not None:
            if token_type_ids is None:
                embeddings = embeddings + self.token_type_embeddings.weight[0]  # segment 0, broadcast over (B, T)
            else:
                embeddings = embeddings + self.token_type_embeddings(token_type_ids)

        self.embed_positions.reserve(past_length + seq_length)
        position_ids = torch.arange(past_length, past_length + seq_length, device=embeddings.device)
        embeddings = embeddings + self.embed_positions(position_ids).to(embeddings.dtype)  # (T, d) over (B, T, d)

        if self.layernorm_embedding is not None:
            embeddings = self.layernorm_embedding(embeddings)
        return self.dropout(embeddings)
