"""The encoder-decoder Transformer of "Attention Is All You Need" with BERT-style embeddings.

Reads top-down: attention, the residual layers, encoder, decoder, the base model, the translation head.
Module names follow transformers' seq2seq models (`self_attn`, `encoder_attn`, `fc1`, `fc2`, `layers`,
`embed_tokens`, `embed_positions`, `lm_head`) so that PEFT, quantizers and checkpoint converters find them.
"""

from collections.abc import Callable

import torch
from torch import nn
from transformers import initialization as init
from transformers.activations import ACT2FN
from transformers.cache_utils import Cache, DynamicCache, EncoderDecoderCache
from transformers.generation import GenerationMixin
from transformers.masking_utils import create_bidirectional_mask, create_causal_mask
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.modeling_outputs import (
    BaseModelOutput,
    BaseModelOutputWithPastAndCrossAttentions,
    Seq2SeqLMOutput,
    Seq2SeqModelOutput,
)
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS, PreTrainedModel
from transformers.processing_utils import Unpack
from transformers.utils import TransformersKwargs, can_return_tuple
from transformers.utils.deprecation import deprecate_kwarg
from transformers.utils.generic import merge_with_config_defaults
from transformers.utils.output_capturing import OutputRecorder, capture_outputs

from ..configuration.configuration_transformer_mt import TransformerMTConfig
from .embeddings import TokenEmbedding, TransformerMTEmbeddings
from .positional_embeddings import SinusoidalPositionalEmbedding


def shift_tokens_right(labels: torch.Tensor, pad_token_id: int, decoder_start_token_id: int) -> torch.Tensor:
    """Teacher-forcing decoder inputs: `decoder_start_token_id` then labels[:-1], with -100 replaced by pad."""
    shifted = labels.new_full(labels.shape, pad_token_id)
    shifted[:, 0] = decoder_start_token_id
    shifted[:, 1:] = labels[:, :-1]
    return shifted.masked_fill(shifted == -100, pad_token_id)


def check_inputs(
    prefix: str,
    vocab_size: int,
    type_vocab_size: int,
    input_ids: torch.Tensor | None,
    inputs_embeds: torch.Tensor | None,
    attention_mask: torch.Tensor | None,
    token_type_ids: torch.Tensor | None,
    past_length: int = 0,
) -> None:
    """Reject malformed inputs with a ValueError naming the argument, before any kernel runs.

    `prefix` is "" for the encoder's arguments and "decoder_" for the decoder's, as in the forward signatures.
    """
    if (input_ids is None) == (inputs_embeds is None):
        raise ValueError(f"Pass exactly one of `{prefix}input_ids` and `{prefix}inputs_embeds`.")
    if input_ids is not None:
        if input_ids.dim() != 2:
            raise ValueError(f"`{prefix}input_ids` must have shape (batch, length), got {tuple(input_ids.shape)}.")
        shape = tuple(input_ids.shape)
        _check_range(f"{prefix}input_ids", input_ids, vocab_size, f"{prefix}vocab_size")
    else:
        shape = tuple(inputs_embeds.shape[:2])
    if token_type_ids is not None:
        if tuple(token_type_ids.shape) != shape:
            raise ValueError(
                f"`{prefix}token_type_ids` has shape {tuple(token_type_ids.shape)} but `{prefix}input_ids` has "
                f"shape {shape}; they must match."
            )
        if type_vocab_size > 0:
            _check_range(f"{prefix}token_type_ids", token_type_ids, type_vocab_size, "type_vocab_size")
    if attention_mask is not None and attention_mask.dim() == 2:
        expected = (shape[0], past_length + shape[1])
        if tuple(attention_mask.shape) != expected:
            raise ValueError(
                f"`{prefix}attention_mask` has shape {tuple(attention_mask.shape)} but must be {expected} "
                f"(batch, cached + new tokens) for `{prefix}input_ids` of shape {shape}."
            )


def _check_range(name: str, ids: torch.Tensor, size: int, size_name: str) -> None:
    outside = (ids < 0) | (ids >= size)
    if outside.any():  # one reduction and one host sync per call, also per decoding step
        raise ValueError(f"`{name}` contains {ids[outside][0].item()}, outside [0, {size_name}={size}).")


def eager_attention_forward(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float,
    dropout: float = 0.0,
    **kwargs,
):
    """softmax(Q K^T * scaling + mask) V; returns (B, T, H, D) outputs and (B, H, T, S) weights."""
    attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask
    attn_weights = nn.functional.softmax(attn_weights, dim=-1)
    attn_weights = nn.functional.dropout(attn_weights, p=dropout, training=module.training)
    attn_output = torch.matmul(attn_weights, value).transpose(1, 2).contiguous()
    return attn_output, attn_weights


class TransformerMTAttention(nn.Module):
    """Multi-head attention: self-attention, or cross-attention when `key_value_states` is given."""

    def __init__(self, config: TransformerMTConfig, num_heads: int, is_causal: bool = False, layer_idx: int = 0):
        super().__init__()
        self.config = config
        self.embed_dim = config.d_model
        self.num_heads = num_heads
        self.head_dim = config.d_model // num_heads
        self.scaling = self.head_dim**-0.5
        self.dropout = config.attention_dropout
        self.is_causal = is_causal
        self.layer_idx = layer_idx
        self.q_proj = nn.Linear(self.embed_dim, self.embed_dim)
        self.k_proj = nn.Linear(self.embed_dim, self.embed_dim)
        self.v_proj = nn.Linear(self.embed_dim, self.embed_dim)
        self.out_proj = nn.Linear(self.embed_dim, self.embed_dim)

    @deprecate_kwarg("past_key_values", "5.40.0", new_name="cache")
    def forward(
        self,
        hidden_states: torch.Tensor,
        key_value_states: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        cache: Cache | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        is_cross_attention = key_value_states is not None
        input_shape = hidden_states.shape[:-1]  # (B, T)
        query = self.q_proj(hidden_states).view(*input_shape, -1, self.head_dim).transpose(1, 2)  # (B, H, T, D)

        layer_cache = None
        if cache is not None:
            if isinstance(cache, EncoderDecoderCache):
                layer_cache = cache.cross_attention_cache if is_cross_attention else cache.self_attention_cache
            else:
                layer_cache = cache
        # Cross-attention keys/values depend only on the encoder output: computed at the first step, then reused.
        reuse = is_cross_attention and isinstance(cache, EncoderDecoderCache) and cache.is_updated.get(self.layer_idx)
        if reuse:
            key = layer_cache.layers[self.layer_idx].keys
            value = layer_cache.layers[self.layer_idx].values
        else:
            source = key_value_states if is_cross_attention else hidden_states
            kv_shape = (*source.shape[:-1], -1, self.head_dim)
            key = self.k_proj(source).view(kv_shape).transpose(1, 2)  # (B, H, S, D)
            value = self.v_proj(source).view(kv_shape).transpose(1, 2)
            if layer_cache is not None:
                key, value = layer_cache.update(key, value, self.layer_idx)
                if is_cross_attention and isinstance(cache, EncoderDecoderCache):
                    cache.is_updated[self.layer_idx] = True

        attention_interface: Callable = ALL_ATTENTION_FUNCTIONS.get_interface(
            self.config._attn_implementation, eager_attention_forward
        )
        attn_output, attn_weights = attention_interface(
            self,
            query,
            key,
            value,
            attention_mask,
            dropout=self.dropout if self.training else 0.0,
            scaling=self.scaling,
            **kwargs,
        )
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()  # (B, T, H * D)
        return self.out_proj(attn_output), attn_weights


class TransformerMTLayer(GradientCheckpointingLayer):
    """What encoder and decoder layers share: self-attention and a feed-forward network, each in a residual block."""

    def __init__(self, config: TransformerMTConfig, num_heads: int, ffn_dim: int, is_causal: bool, layer_idx: int):
        super().__init__()
        self.normalize_before = config.normalize_before
        self.dropout = config.dropout
        self.activation_fn = ACT2FN[config.activation_function]
        self.activation_dropout = config.activation_dropout
        self.self_attn = TransformerMTAttention(config, num_heads, is_causal=is_causal, layer_idx=layer_idx)
        self.self_attn_layer_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.fc1 = nn.Linear(config.d_model, ffn_dim)
        self.fc2 = nn.Linear(ffn_dim, config.d_model)
        self.final_layer_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)

    def residual(self, hidden_states: torch.Tensor, layer_norm: nn.LayerNorm, sublayer, **kwargs) -> torch.Tensor:
        """x + dropout(sublayer(x)), normalised after the sum (post-LN, the paper) or before the sublayer (pre-LN)."""
        residual = hidden_states
        if self.normalize_before:
            hidden_states = layer_norm(hidden_states)
        hidden_states = sublayer(hidden_states, **kwargs)
        if isinstance(hidden_states, tuple):  # attention returns (output, weights)
            hidden_states = hidden_states[0]
        hidden_states = residual + nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)
        if not self.normalize_before:
            hidden_states = layer_norm(hidden_states)
        return hidden_states

    def feed_forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        hidden_states = self.activation_fn(self.fc1(hidden_states))
        hidden_states = nn.functional.dropout(hidden_states, p=self.activation_dropout, training=self.training)
        return self.fc2(hidden_states)


class TransformerMTEncoderLayer(TransformerMTLayer):
    """Bidirectional self-attention, then the feed-forward network."""

    def __init__(self, config: TransformerMTConfig, layer_idx: int = 0):
        super().__init__(config, config.encoder_attention_heads, config.encoder_ffn_dim, False, layer_idx)

    def forward(
        self, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None, **kwargs: Unpack[TransformersKwargs]
    ) -> torch.Tensor:
        hidden_states = self.residual(
            hidden_states, self.self_attn_layer_norm, self.self_attn, attention_mask=attention_mask, **kwargs
        )
        return self.residual(hidden_states, self.final_layer_norm, self.feed_forward)


class TransformerMTDecoderLayer(TransformerMTLayer):
    """Causal self-attention, cross-attention over the encoder output, then the feed-forward network."""

    def __init__(self, config: TransformerMTConfig, layer_idx: int = 0):
        super().__init__(config, config.decoder_attention_heads, config.decoder_ffn_dim, True, layer_idx)
        self.encoder_attn = TransformerMTAttention(config, config.decoder_attention_heads, layer_idx=layer_idx)
        self.encoder_attn_layer_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)

    @deprecate_kwarg("past_key_values", "5.40.0", new_name="cache")
    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        encoder_hidden_states: torch.Tensor | None = None,
        encoder_attention_mask: torch.Tensor | None = None,
        cache: Cache | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> torch.Tensor:
        hidden_states = self.residual(
            hidden_states, self.self_attn_layer_norm, self.self_attn, attention_mask=attention_mask, cache=cache,
            **kwargs,
        )
        hidden_states = self.residual(
            hidden_states,
            self.encoder_attn_layer_norm,
            self.encoder_attn,
            key_value_states=encoder_hidden_states,
            attention_mask=encoder_attention_mask,
            cache=cache,
            **kwargs,
        )
        return self.residual(hidden_states, self.final_layer_norm, self.feed_forward)


class TransformerMTPreTrainedModel(PreTrainedModel):
    config: TransformerMTConfig
    config_class = TransformerMTConfig
    base_model_prefix = "model"
    supports_gradient_checkpointing = True
    _no_split_modules = ["TransformerMTEncoderLayer", "TransformerMTDecoderLayer"]
    _supports_sdpa = True
    # Flash and flex kernels need a GPU to be checked against eager; not claimed until they are.
    _supports_flash_attn = False
    _supports_flex_attn = False
    _can_compile_fullgraph = False  # the sinusoid table grows on demand and inputs are validated eagerly

    def _init_weights(self, module):
        super()._init_weights(module)
        if isinstance(module, SinusoidalPositionalEmbedding):
            init.copy_(module.sinusoids, module.build_table(module.sinusoids.size(0), dtype=module.sinusoids.dtype))
        elif isinstance(module, TransformerMTForConditionalGeneration) and module.config.use_final_logits_bias:
            init.zeros_(module.final_logits_bias)
        elif isinstance(module, TokenEmbedding) and self.config.scale_embedding:
            # Scaled by sqrt(d_model) in the forward pass, token vectors start at unit variance (fairseq's init).
            init.normal_(module.weight, mean=0.0, std=self.config.d_model**-0.5)
            if module.padding_idx is not None:
                init.zeros_(module.weight[module.padding_idx])


class _TransformerMTStack(TransformerMTPreTrainedModel):
    """What encoder and decoder share: the embedding block, N layers, and pre-LN's final LayerNorm."""

    def __init__(self, config: TransformerMTConfig, embed_tokens: nn.Embedding | None, vocab_size: int,
                 layers: list[nn.Module]):
        super().__init__(config)
        if embed_tokens is None:
            embed_tokens = TokenEmbedding(vocab_size, config.d_model, config.pad_token_id)
        self.embeddings = TransformerMTEmbeddings(config, embed_tokens)
        self.layers = nn.ModuleList(layers)
        self.layer_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps) if config.normalize_before else None
        self.gradient_checkpointing = False
        self.post_init()

    def get_input_embeddings(self):
        return self.embeddings.embed_tokens

    def set_input_embeddings(self, value):
        self.embeddings.embed_tokens = value

    def final_norm(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.layer_norm(hidden_states) if self.layer_norm is not None else hidden_states


class TransformerMTEncoder(_TransformerMTStack):
    """`config.encoder_layers` bidirectional self-attention layers over the embedded source."""

    _can_record_outputs = {
        "hidden_states": TransformerMTEncoderLayer,
        "attentions": TransformerMTAttention,
    }

    def __init__(self, config: TransformerMTConfig, embed_tokens: nn.Embedding | None = None):
        layers = [TransformerMTEncoderLayer(config, layer_idx=i) for i in range(config.encoder_layers)]
        super().__init__(config, embed_tokens, config.vocab_size, layers)

    @merge_with_config_defaults
    @capture_outputs
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.LongTensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> BaseModelOutput:
        r"""
        Args:
            input_ids: (B, S) source token ids.
            attention_mask: (B, S), 1 for tokens, 0 for padding.
            token_type_ids: (B, S) segment ids (0 for the first sentence, 1 for the second); default 0.
            inputs_embeds: (B, S, d_model) token embeddings instead of `input_ids`.
        """
        check_inputs("", self.config.vocab_size, self.config.type_vocab_size, input_ids, inputs_embeds,
                     attention_mask, token_type_ids)
        hidden_states = self.embeddings(input_ids, token_type_ids, inputs_embeds)
        attention_mask = create_bidirectional_mask(
            config=self.config, inputs_embeds=hidden_states, attention_mask=attention_mask
        )
        for layer in self.layers:
            hidden_states = layer(hidden_states, attention_mask, **kwargs)
        return BaseModelOutput(last_hidden_state=self.final_norm(hidden_states))


class TransformerMTDecoder(_TransformerMTStack):
    """`config.decoder_layers` causal layers that also attend to the encoder output."""

    _can_record_outputs = {
        "hidden_states": TransformerMTDecoderLayer,
        "attentions": OutputRecorder(TransformerMTAttention, index=1, layer_name="self_attn"),
        "cross_attentions": OutputRecorder(TransformerMTAttention, index=1, layer_name="encoder_attn"),
    }

    def __init__(self, config: TransformerMTConfig, embed_tokens: nn.Embedding | None = None):
        layers = [TransformerMTDecoderLayer(config, layer_idx=i) for i in range(config.decoder_layers)]
        super().__init__(config, embed_tokens, config.decoder_vocab_size, layers)

    @merge_with_config_defaults
    @capture_outputs
    @deprecate_kwarg("past_key_values", "5.40.0", new_name="cache")
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.LongTensor | None = None,
        encoder_hidden_states: torch.Tensor | None = None,
        encoder_attention_mask: torch.Tensor | None = None,
        cache: Cache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        use_cache: bool | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> BaseModelOutputWithPastAndCrossAttentions:
        r"""
        Args:
            input_ids: (B, T) target token ids (the shifted labels when training, new tokens when decoding).
            attention_mask: (B, past + T), 1 for tokens, 0 for padding; the causal mask is added on top.
            token_type_ids: (B, T) decoder segment ids; default 0.
            encoder_hidden_states: (B, S, d_model) the encoder output.
            encoder_attention_mask: (B, S) the source padding mask.
            cache: an `EncoderDecoderCache`; created when `use_cache` and none is given.
            inputs_embeds: (B, T, d_model) token embeddings instead of `input_ids`.
        """
        if use_cache and cache is None:
            cache = EncoderDecoderCache(DynamicCache(config=self.config), DynamicCache(config=self.config))
        past_length = cache.get_seq_length() if cache is not None else 0
        check_inputs("decoder_", self.config.decoder_vocab_size, self.config.type_vocab_size, input_ids,
                     inputs_embeds, attention_mask, token_type_ids, past_length)

        hidden_states = self.embeddings(input_ids, token_type_ids, inputs_embeds, past_length)
        self_attn_cache = cache.self_attention_cache if isinstance(cache, EncoderDecoderCache) else cache
        causal_mask = create_causal_mask(
            config=self.config, inputs_embeds=hidden_states, attention_mask=attention_mask, cache=self_attn_cache
        )
        encoder_attention_mask = create_bidirectional_mask(
            config=self.config,
            inputs_embeds=hidden_states,
            attention_mask=encoder_attention_mask,
            encoder_hidden_states=encoder_hidden_states,
        )
        for layer in self.layers:
            hidden_states = layer(
                hidden_states,
                causal_mask,
                encoder_hidden_states,  # positional, so gradient checkpointing passes it through
                encoder_attention_mask=encoder_attention_mask,
                cache=cache,
                **kwargs,
            )
        return BaseModelOutputWithPastAndCrossAttentions(last_hidden_state=self.final_norm(hidden_states), cache=cache)


class TransformerMTModel(TransformerMTPreTrainedModel):
    """The bare encoder-decoder, returning the decoder's last hidden states."""

    _tied_weights_keys = {
        "encoder.embeddings.embed_tokens.weight": "shared.weight",
        "decoder.embeddings.embed_tokens.weight": "shared.weight",
    }

    def __init__(self, config: TransformerMTConfig):
        super().__init__(config)
        # One token table for source and target (the paper's shared BPE vocabulary), unless the checkpoint has two.
        self.shared = TokenEmbedding(config.vocab_size, config.d_model, config.pad_token_id)
        self.encoder = TransformerMTEncoder(config, self.shared)
        if config.share_encoder_decoder_embeddings:
            self.decoder = TransformerMTDecoder(config, self.shared)
        else:
            self.decoder = TransformerMTDecoder(config)  # its own table of decoder_vocab_size rows
            self._tied_weights_keys = {"encoder.embeddings.embed_tokens.weight": "shared.weight"}
        self.post_init()

    def get_input_embeddings(self):
        return self.shared

    def set_input_embeddings(self, value):
        self.shared = value
        self.encoder.set_input_embeddings(value)
        if self.config.share_encoder_decoder_embeddings:
            self.decoder.set_input_embeddings(value)

    @can_return_tuple
    @deprecate_kwarg("past_key_values", "5.40.0", new_name="cache")
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.LongTensor | None = None,
        decoder_input_ids: torch.LongTensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        decoder_token_type_ids: torch.LongTensor | None = None,
        encoder_outputs: tuple | BaseModelOutput | None = None,
        cache: Cache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        decoder_inputs_embeds: torch.Tensor | None = None,
        use_cache: bool | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> Seq2SeqModelOutput:
        r"""
        Args:
            input_ids, attention_mask, token_type_ids, inputs_embeds: the source, see [`TransformerMTEncoder`].
            decoder_input_ids, decoder_attention_mask, decoder_token_type_ids, decoder_inputs_embeds: the target
                side, see [`TransformerMTDecoder`].
            encoder_outputs: a precomputed encoder output (generation encodes once); skips the encoder.
            cache: the decoder's `EncoderDecoderCache` (`past_key_values` is the deprecated name).
            use_cache: return the cache for incremental decoding.
        """
        if encoder_outputs is None:
            encoder_outputs = self.encoder(
                input_ids=input_ids,
                attention_mask=attention_mask,
                token_type_ids=token_type_ids,
                inputs_embeds=inputs_embeds,
                **kwargs,
            )
        elif not isinstance(encoder_outputs, BaseModelOutput):
            encoder_outputs = BaseModelOutput(*encoder_outputs)

        decoder_outputs = self.decoder(
            input_ids=decoder_input_ids,
            attention_mask=decoder_attention_mask,
            token_type_ids=decoder_token_type_ids,
            encoder_hidden_states=encoder_outputs.last_hidden_state,
            encoder_attention_mask=attention_mask,
            cache=cache,
            inputs_embeds=decoder_inputs_embeds,
            use_cache=use_cache,
            **kwargs,
        )
        return Seq2SeqModelOutput(
            last_hidden_state=decoder_outputs.last_hidden_state,
            cache=decoder_outputs.cache,
            decoder_hidden_states=decoder_outputs.hidden_states,
            decoder_attentions=decoder_outputs.attentions,
            cross_attentions=decoder_outputs.cross_attentions,
            encoder_last_hidden_state=encoder_outputs.last_hidden_state,
            encoder_hidden_states=encoder_outputs.hidden_states,
            encoder_attentions=encoder_outputs.attentions,
        )


class TransformerMTForConditionalGeneration(TransformerMTPreTrainedModel, GenerationMixin):
    """The encoder-decoder with a language-model head (tied to the shared embedding): translation."""

    _tied_weights_keys = {"lm_head.weight": "model.shared.weight"}

    def __init__(self, config: TransformerMTConfig):
        super().__init__(config)
        self.model = TransformerMTModel(config)
        if not config.share_encoder_decoder_embeddings:
            self._tied_weights_keys = {"lm_head.weight": "model.decoder.embeddings.embed_tokens.weight"}
        self.lm_head = nn.Linear(config.d_model, config.decoder_vocab_size, bias=False)
        if config.use_final_logits_bias:
            self.register_buffer("final_logits_bias", torch.zeros(1, config.decoder_vocab_size))
        self.post_init()

    @can_return_tuple
    @deprecate_kwarg("past_key_values", "5.40.0", new_name="cache")
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.LongTensor | None = None,
        decoder_input_ids: torch.LongTensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        decoder_token_type_ids: torch.LongTensor | None = None,
        encoder_outputs: tuple | BaseModelOutput | None = None,
        cache: Cache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        decoder_inputs_embeds: torch.Tensor | None = None,
        labels: torch.LongTensor | None = None,
        use_cache: bool | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> Seq2SeqLMOutput:
        r"""
        Args:
            labels: (B, T) target ids; -100 is ignored by the loss. When `decoder_input_ids` are not given they
                are `labels` shifted right behind `decoder_start_token_id`. Logits are not shifted again.
            Everything else: see [`TransformerMTModel.forward`].
        """
        if labels is not None:
            use_cache = False
            if decoder_input_ids is None and decoder_inputs_embeds is None:
                decoder_input_ids = shift_tokens_right(
                    labels, self.config.pad_token_id, self.config.decoder_start_token_id
                )
        outputs: Seq2SeqModelOutput = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            decoder_input_ids=decoder_input_ids,
            decoder_attention_mask=decoder_attention_mask,
            decoder_token_type_ids=decoder_token_type_ids,
            encoder_outputs=encoder_outputs,
            cache=cache,
            inputs_embeds=inputs_embeds,
            decoder_inputs_embeds=decoder_inputs_embeds,
            use_cache=use_cache,
            **kwargs,
        )
        logits = self.lm_head(outputs.last_hidden_state)
        if self.config.use_final_logits_bias:
            logits = logits + self.final_logits_bias
        loss = None
        if labels is not None:
            loss = nn.functional.cross_entropy(
                logits.float().view(-1, logits.size(-1)), labels.to(logits.device).view(-1), ignore_index=-100
            )
        return Seq2SeqLMOutput(
            loss=loss,
            logits=logits,
            cache=outputs.cache,
            decoder_hidden_states=outputs.decoder_hidden_states,
            decoder_attentions=outputs.decoder_attentions,
            cross_attentions=outputs.cross_attentions,
            encoder_last_hidden_state=outputs.encoder_last_hidden_state,
            encoder_hidden_states=outputs.encoder_hidden_states,
            encoder_attentions=outputs.encoder_attentions,
        )

    def prepare_decoder_input_ids_from_labels(self, labels: torch.Tensor) -> torch.Tensor:
        return shift_tokens_right(labels, self.config.pad_token_id, self.config.decoder_start_token_id)


__all__ = [
    "TransformerMTPreTrainedModel",
    "TransformerMTEncoder",
    "TransformerMTDecoder",
    "TransformerMTModel",
    "TransformerMTForConditionalGeneration",
]
