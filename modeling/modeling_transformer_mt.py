"""The encoder-decoder Transformer of "Attention Is All You Need" with BERT-style embeddings.

Reads top-down: attention, the residual layers, encoder, decoder, the base model, the translation head.
Module names follow transformers' seq2seq models (`self_attn`, `encoder_attn`, `fc1`, `fc2`, `layers`,
`embed_tokens`, `embed_positions`, `lm_head`) so that PEFT, quantizers and checkpoint converters find them.
"""

import copy
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
    CausalLMOutputWithCrossAttentions,
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
from .embeddings import TokenEmbedding, TransformerMTEmbeddings, token_init_std
from .input_checks import IGNORE_INDEX, check_inputs, check_labels, positions_needed
from .positional_embeddings import PositionStrategy, rotate


def shift_tokens_right(labels: torch.Tensor, pad_token_id: int, decoder_start_token_id: int) -> torch.Tensor:
    """Teacher-forcing decoder inputs: `decoder_start_token_id` then labels[:-1], with -100 replaced by pad."""
    shifted = labels.new_full(labels.shape, pad_token_id)
    shifted[:, 0] = decoder_start_token_id
    shifted[:, 1:] = labels[:, :-1]
    return shifted.masked_fill(shifted == IGNORE_INDEX, pad_token_id)


def seq2seq_loss(
    logits: torch.Tensor, labels: torch.Tensor, num_items_in_batch=None, label_smoothing: float = 0.0
) -> torch.Tensor:
    """Cross-entropy of aligned logits and labels (no second shift), -100 ignored, optionally label-smoothed.

    The mean over this batch's targets, or, when the Trainer passes `num_items_in_batch` (the targets of every
    micro-batch of an optimizer step, across processes), the sum divided by it: gradient accumulation and data
    parallelism then give the loss and gradients of one big batch. Label smoothing is torch's fused one, equal to
    transformers' LabelSmoother: (1 - eps) * NLL + eps * the mean NLL over the vocabulary.
    """
    logits, labels = logits.float().view(-1, logits.size(-1)), labels.to(logits.device).view(-1)
    if num_items_in_batch is None:
        return nn.functional.cross_entropy(logits, labels, ignore_index=IGNORE_INDEX, label_smoothing=label_smoothing)
    total = nn.functional.cross_entropy(
        logits, labels, ignore_index=IGNORE_INDEX, reduction="sum", label_smoothing=label_smoothing
    )
    if isinstance(num_items_in_batch, torch.Tensor):
        num_items_in_batch = num_items_in_batch.to(total.device)
    return total / num_items_in_batch


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

    def __init__(self, config: TransformerMTConfig, num_heads: int, *, is_causal: bool, layer_idx: int):
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
        rotary: tuple[torch.Tensor, torch.Tensor] | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """
        Args:
            hidden_states: (B, T, d_model) the queries' side.
            key_value_states: (B, S, d_model) the encoder output for cross-attention; None for self-attention.
            attention_mask: (B, 1, T, S) from masking_utils (bool or additive), position bias included.
            cache: the decoder's cache; new keys and values are appended, cross-attention's computed once.
            rotary: (cos, sin) of the new tokens' positions, each (B or 1, 1, T, D): rotary positions rotate the
                queries and the new keys (self-attention only).
        Returns (B, T, d_model) outputs and (B, H, T, S) attention weights (eager) or None.
        """
        is_cross_attention = key_value_states is not None
        input_shape = hidden_states.shape[:-1]  # (B, T)
        query = self.q_proj(hidden_states).view(*input_shape, -1, self.head_dim).transpose(1, 2)  # (B, H, T, D)
        if rotary is not None:
            query = rotate(query, *rotary)

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
            if rotary is not None:
                key = rotate(key, *rotary)  # cached rotated: each key keeps the position it was written at
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


class TransformerMTEncoderLayer(GradientCheckpointingLayer):
    """Bidirectional self-attention, then the feed-forward network, each in a residual block."""

    def __init__(self, config: TransformerMTConfig, layer_idx: int = 0):
        super().__init__()
        self.normalize_before = config.normalize_before
        self.dropout = config.dropout
        self.activation_fn = ACT2FN[config.activation_function]
        self.activation_dropout = config.activation_dropout
        self.self_attn = TransformerMTAttention(
            config, config.encoder_attention_heads, is_causal=False, layer_idx=layer_idx
        )
        self.self_attn_layer_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.fc1 = nn.Linear(config.d_model, config.encoder_ffn_dim)
        self.fc2 = nn.Linear(config.encoder_ffn_dim, config.d_model)
        self.final_layer_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None,
        rotary: tuple[torch.Tensor, torch.Tensor] | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> torch.Tensor:
        # Each block: x + dropout(sublayer(x)), normalised after the sum (post-LN, the paper) or before the sublayer.
        residual = hidden_states
        if self.normalize_before:
            hidden_states = self.self_attn_layer_norm(hidden_states)
        hidden_states, _ = self.self_attn(hidden_states, attention_mask=attention_mask, rotary=rotary, **kwargs)
        hidden_states = residual + nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)
        if not self.normalize_before:
            hidden_states = self.self_attn_layer_norm(hidden_states)

        residual = hidden_states
        if self.normalize_before:
            hidden_states = self.final_layer_norm(hidden_states)
        hidden_states = self.activation_fn(self.fc1(hidden_states))
        hidden_states = nn.functional.dropout(hidden_states, p=self.activation_dropout, training=self.training)
        hidden_states = self.fc2(hidden_states)
        hidden_states = residual + nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)
        if not self.normalize_before:
            hidden_states = self.final_layer_norm(hidden_states)
        return hidden_states


class TransformerMTDecoderLayer(GradientCheckpointingLayer):
    """Causal self-attention, cross-attention over the encoder output, then the feed-forward network."""

    def __init__(self, config: TransformerMTConfig, layer_idx: int = 0):
        super().__init__()
        self.normalize_before = config.normalize_before
        self.dropout = config.dropout
        self.activation_fn = ACT2FN[config.activation_function]
        self.activation_dropout = config.activation_dropout
        self.self_attn = TransformerMTAttention(
            config, config.decoder_attention_heads, is_causal=True, layer_idx=layer_idx
        )
        self.self_attn_layer_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.encoder_attn = TransformerMTAttention(
            config, config.decoder_attention_heads, is_causal=False, layer_idx=layer_idx
        )
        self.encoder_attn_layer_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.fc1 = nn.Linear(config.d_model, config.decoder_ffn_dim)
        self.fc2 = nn.Linear(config.decoder_ffn_dim, config.d_model)
        self.final_layer_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)

    @deprecate_kwarg("past_key_values", "5.40.0", new_name="cache")
    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        encoder_hidden_states: torch.Tensor | None = None,
        encoder_attention_mask: torch.Tensor | None = None,
        cache: Cache | None = None,
        rotary: tuple[torch.Tensor, torch.Tensor] | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> torch.Tensor:
        residual = hidden_states
        if self.normalize_before:
            hidden_states = self.self_attn_layer_norm(hidden_states)
        hidden_states, _ = self.self_attn(
            hidden_states, attention_mask=attention_mask, cache=cache, rotary=rotary, **kwargs
        )
        hidden_states = residual + nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)
        if not self.normalize_before:
            hidden_states = self.self_attn_layer_norm(hidden_states)

        if encoder_hidden_states is not None:  # absent when the decoder serves alone, as a language model
            residual = hidden_states
            if self.normalize_before:
                hidden_states = self.encoder_attn_layer_norm(hidden_states)
            hidden_states, _ = self.encoder_attn(
                hidden_states,
                key_value_states=encoder_hidden_states,
                attention_mask=encoder_attention_mask,
                cache=cache,
                **kwargs,
            )
            hidden_states = residual + nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)
            if not self.normalize_before:
                hidden_states = self.encoder_attn_layer_norm(hidden_states)

        residual = hidden_states
        if self.normalize_before:
            hidden_states = self.final_layer_norm(hidden_states)
        hidden_states = self.activation_fn(self.fc1(hidden_states))
        hidden_states = nn.functional.dropout(hidden_states, p=self.activation_dropout, training=self.training)
        hidden_states = self.fc2(hidden_states)
        hidden_states = residual + nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)
        if not self.normalize_before:
            hidden_states = self.final_layer_norm(hidden_states)
        return hidden_states


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
    # Input checks and the growth of the sinusoid table run eagerly only (see check_inputs, positions_needed).
    _can_compile_fullgraph = True

    def _init_weights(self, module):
        super()._init_weights(module)
        if isinstance(module, PositionStrategy):  # each strategy refills the buffers it derives from the config
            module.reset_buffers()
        elif isinstance(module, TransformerMTForConditionalGeneration) and module.config.use_final_logits_bias:
            init.zeros_(module.final_logits_bias)
        elif isinstance(module, TokenEmbedding) and self.config.scale_embedding:
            # Scaled by sqrt(d_model) in the forward pass, token vectors start at unit variance (fairseq's init).
            init.normal_(module.weight, mean=0.0, std=token_init_std(self.config))
            if module.padding_idx is not None:
                init.zeros_(module.weight[module.padding_idx])

    def get_compiled_call(self, compile_config):
        """generate()'s compiled decoding step, without guards on module attributes (for a config with no `mode`).

        Nothing about the modules changes between decoding steps, and checking every attribute of every module
        before each step costs a small model more than its step (~0.4 ms of ~1.6 ms on 2 CPU cores). After
        switching train/eval or replacing modules, call `torch._dynamo.reset()` to compile again.
        """
        # torch.compile takes either a mode or options; a config with a mode keeps transformers' behaviour.
        if (
            compile_config is not None
            and compile_config.mode is None
            and "guard_filter_fn" not in (compile_config.options or {})
        ):
            compile_config = copy.copy(compile_config)
            compile_config.options = {
                **(compile_config.options or {}),
                "guard_filter_fn": torch.compiler.skip_guard_on_all_nn_modules_unsafe,
            }
        return super().get_compiled_call(compile_config)

    def get_expanded_tied_weights_keys(self, all_submodels: bool = False) -> dict:
        """The tied pairs; `tie_word_embeddings` governs only the output projection.

        transformers drops every pair when `tie_word_embeddings` is False, which would also cut the encoder's and
        decoder's tables loose from `shared`; whether those are one table is `share_encoder_decoder_embeddings`.
        """
        if all_submodels or self.config.tie_word_embeddings:
            return super().get_expanded_tied_weights_keys(all_submodels=all_submodels)
        return {
            target: source
            for target, source in (self._tied_weights_keys or {}).items()
            if not target.startswith("lm_head.")
        }

    def resize_token_embeddings(
        self, new_num_tokens=None, pad_to_multiple_of=None, mean_resizing=True
    ) -> nn.Embedding:
        """Resize the source vocabulary. A shared vocabulary (the default) is every token table, the output
        projection and `final_logits_bias`; a separate target vocabulary is resized by
        `resize_decoder_token_embeddings`. The config's vocabulary sizes follow."""
        embeddings = super().resize_token_embeddings(new_num_tokens, pad_to_multiple_of, mean_resizing)
        if self.config.share_encoder_decoder_embeddings:
            self._target_vocabulary_resized(embeddings.num_embeddings)
        return embeddings

    def _resize_token_embeddings(self, new_num_tokens, pad_to_multiple_of=None, mean_resizing=True):
        if self.config.share_encoder_decoder_embeddings:
            return super()._resize_token_embeddings(new_num_tokens, pad_to_multiple_of, mean_resizing)
        # Separate vocabularies: the output projection belongs to the target side, which keeps its size.
        embeddings = self._get_resized_embeddings(
            self.get_input_embeddings(), new_num_tokens, pad_to_multiple_of, mean_resizing
        )
        self.set_input_embeddings(embeddings)
        return self.get_input_embeddings()

    def resize_decoder_token_embeddings(
        self, new_num_tokens: int, pad_to_multiple_of=None, mean_resizing=True
    ) -> nn.Embedding:
        """Resize a separate target vocabulary: the decoder's table, the output projection, `final_logits_bias`."""
        if self.config.share_encoder_decoder_embeddings:
            raise ValueError(
                "`resize_decoder_token_embeddings` resizes a separate target vocabulary "
                "(share_encoder_decoder_embeddings=False); this model shares one, so call `resize_token_embeddings`."
            )
        decoder = self.get_decoder()
        embeddings = self._get_resized_embeddings(
            decoder.get_input_embeddings(), new_num_tokens, pad_to_multiple_of, mean_resizing
        )
        decoder.set_input_embeddings(embeddings)
        lm_head = self.get_output_embeddings()
        if lm_head is not None and not self.config.tie_word_embeddings:
            self.set_output_embeddings(
                self._get_resized_lm_head(lm_head, embeddings.num_embeddings, mean_resizing=mean_resizing)
            )
        self.tie_weights()
        self._target_vocabulary_resized(embeddings.num_embeddings)
        return embeddings

    def _target_vocabulary_resized(self, size: int) -> None:
        self.config.decoder_vocab_size = size


class _TransformerMTStack(TransformerMTPreTrainedModel):
    """What encoder and decoder share: the embedding block, N layers, and pre-LN's final LayerNorm."""

    input_prefix: str  # how the stack's arguments are named at the model's entry: "" or "decoder_"
    shape_fields: tuple[str, ...]  # the config fields the stack's modules were built from

    def __init__(self, config: TransformerMTConfig, vocab_size: int, num_heads: int, layers: list[nn.Module]):
        super().__init__(config)
        self.built_with = {name: getattr(config, name) for name in self.shape_fields}
        self.embeddings = TransformerMTEmbeddings(config, vocab_size, num_heads)
        self.layers = nn.ModuleList(layers)
        self.layer_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps) if config.normalize_before else None
        self.gradient_checkpointing = False
        self.post_init()

    def get_input_embeddings(self):
        return self.embeddings.embed_tokens

    def set_input_embeddings(self, value):
        self.embeddings.embed_tokens = value

    def check_and_reserve(
        self,
        *,
        input_ids: torch.Tensor | None,
        inputs_embeds: torch.Tensor | None,
        attention_mask: torch.Tensor | None,
        token_type_ids: torch.Tensor | None,
        position_ids: torch.Tensor | None,
        past_length: int | torch.Tensor = 0,
        cache: Cache | None = None,
    ) -> None:
        """The stack's input checks (`check_inputs`), then the position rows this call reads reserved. Nothing
        runs while compiling: a compiled graph holds no host read."""
        if torch.compiler.is_compiling():
            return
        changed = {name: value for name, value in self.built_with.items() if getattr(self.config, name) != value}
        if changed:
            name, value = next(iter(changed.items()))
            raise ValueError(
                f"config.{name} is {getattr(self.config, name)!r} but the model was built with "
                f"{value!r}: a built model keeps its shape; build a new model from the edited config."
            )
        # Token ids are checked when a sequence starts; those generation appends come from the model's logits.
        starts = isinstance(past_length, int) and past_length == 0
        check_inputs(
            prefix=self.input_prefix,
            vocab_size=self.embeddings.embed_tokens.num_embeddings,
            type_vocab_size=self.config.type_vocab_size,
            d_model=self.config.d_model,
            input_ids=input_ids,
            inputs_embeds=inputs_embeds,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            position_ids=position_ids,
            past_length=past_length,
            check_values=starts,
        )
        seq_length = (input_ids if input_ids is not None else inputs_embeds).shape[1]
        self.embeddings.embed_positions.reserve(positions_needed(seq_length, position_ids, cache))

    def self_attention_positions(
        self,
        position_ids: torch.Tensor,
        mask: torch.Tensor | None,
        key_length: int,
        past_length,
        causal: bool,
        dtype: torch.dtype,
    ) -> tuple[torch.Tensor | None, tuple[torch.Tensor, torch.Tensor] | None]:
        """The self-attention mask with the strategy's position bias added (ALiBi), and the rotation of the new
        tokens (rotary); the mask unchanged and None for absolute strategies. Computed once per forward.

        Key positions are the queries' own when the keys are this call's tokens; keys in a cache are placed by
        their index (the positions they were written at, for contiguous positions, left padding included).
        """
        positions = self.embeddings.embed_positions
        if positions.absolute:  # added to the embeddings already: nothing to build here, on every decoding step
            return mask, None
        query_length = position_ids.shape[-1]
        if isinstance(past_length, int) and past_length == 0 and key_length == query_length:
            key_positions = position_ids
        else:
            offset = position_ids[..., :1] - past_length  # (B, 1) or (1,)
            key_positions = torch.arange(key_length, device=position_ids.device) + offset
        mask = positions.self_attention_mask(mask, position_ids, key_positions, causal=causal, dtype=dtype)
        return mask, positions.rotation(position_ids)

    def final_norm(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.layer_norm(hidden_states) if self.layer_norm is not None else hidden_states


class TransformerMTEncoder(_TransformerMTStack):
    """`config.encoder_layers` bidirectional self-attention layers over the embedded source."""

    input_prefix = ""
    shape_fields = (
        "d_model",
        "encoder_layers",
        "encoder_attention_heads",
        "encoder_ffn_dim",
        "position_embedding_type",
        "normalize_before",
    )
    _can_record_outputs = {
        "hidden_states": TransformerMTEncoderLayer,
        "attentions": TransformerMTAttention,
    }

    def __init__(self, config: TransformerMTConfig):
        layers = [TransformerMTEncoderLayer(config, layer_idx=i) for i in range(config.encoder_layers)]
        super().__init__(config, config.vocab_size, config.encoder_attention_heads, layers)

    @merge_with_config_defaults
    @capture_outputs
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.LongTensor | None = None,
        position_ids: torch.LongTensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> BaseModelOutput:
        r"""
        Args:
            input_ids: (B, S) source token ids.
            attention_mask: (B, S), 1 for tokens, 0 for padding.
            token_type_ids: (B, S) segment ids (0 for the first sentence, 1 for the second); default 0.
            position_ids: (B, S) or (S,) positions; default 0..S-1 (give cumsum(mask) - 1 to position a left-padded
                row as if it were not padded).
            inputs_embeds: (B, S, d_model) token embeddings instead of `input_ids`.
        """
        self.check_and_reserve(
            input_ids=input_ids,
            inputs_embeds=inputs_embeds,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            position_ids=position_ids,
        )
        seq_length = (input_ids if input_ids is not None else inputs_embeds).shape[1]
        if position_ids is None:
            position_ids = torch.arange(seq_length, device=self.device)
        hidden_states = self.embeddings(input_ids, token_type_ids, inputs_embeds, position_ids)
        attention_mask = create_bidirectional_mask(
            config=self.config, inputs_embeds=hidden_states, attention_mask=attention_mask
        )
        attention_mask, rotary = self.self_attention_positions(
            position_ids, attention_mask, seq_length, 0, causal=False, dtype=hidden_states.dtype
        )
        for layer in self.layers:
            hidden_states = layer(hidden_states, attention_mask, rotary, **kwargs)
        return BaseModelOutput(last_hidden_state=self.final_norm(hidden_states))


class TransformerMTDecoder(_TransformerMTStack):
    """`config.decoder_layers` causal layers that also attend to the encoder output when there is one."""

    input_prefix = "decoder_"
    shape_fields = (
        "d_model",
        "decoder_layers",
        "decoder_attention_heads",
        "decoder_ffn_dim",
        "position_embedding_type",
        "normalize_before",
    )
    _can_record_outputs = {
        "hidden_states": TransformerMTDecoderLayer,
        "attentions": OutputRecorder(TransformerMTAttention, index=1, layer_name="self_attn"),
        "cross_attentions": OutputRecorder(TransformerMTAttention, index=1, layer_name="encoder_attn"),
    }

    def __init__(self, config: TransformerMTConfig):
        layers = [TransformerMTDecoderLayer(config, layer_idx=i) for i in range(config.decoder_layers)]
        super().__init__(config, config.decoder_vocab_size, config.decoder_attention_heads, layers)

    @merge_with_config_defaults
    @capture_outputs
    @deprecate_kwarg("past_key_values", "5.40.0", new_name="cache")
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.LongTensor | None = None,
        position_ids: torch.LongTensor | None = None,
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
            position_ids: (B, T) or (T,) positions; default past, past + 1, ... (past = tokens in the cache).
            encoder_hidden_states: (B, S, d_model) the encoder output; None uses the decoder alone (a language
                model: no cross-attention).
            encoder_attention_mask: (B, S) the source padding mask.
            cache: an `EncoderDecoderCache` (a `DynamicCache` when used alone); created when `use_cache` and none
                is given.
            inputs_embeds: (B, T, d_model) token embeddings instead of `input_ids`.
        """
        if use_cache and cache is None:
            if encoder_hidden_states is not None or self.config.is_encoder_decoder:
                cache = EncoderDecoderCache(DynamicCache(config=self.config), DynamicCache(config=self.config))
            else:
                cache = DynamicCache(config=self.config)
        self_attn_cache = cache.self_attention_cache if isinstance(cache, EncoderDecoderCache) else cache
        past_length = self_attn_cache.get_seq_length() if self_attn_cache is not None else 0
        self.check_and_reserve(
            input_ids=input_ids,
            inputs_embeds=inputs_embeds,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            position_ids=position_ids,
            past_length=past_length,
            cache=self_attn_cache,
        )

        seq_length = (input_ids if input_ids is not None else inputs_embeds).shape[1]
        if position_ids is None:
            position_ids = torch.arange(seq_length, device=self.device) + past_length
        hidden_states = self.embeddings(input_ids, token_type_ids, inputs_embeds, position_ids)
        causal_mask = create_causal_mask(
            config=self.config, inputs_embeds=hidden_states, attention_mask=attention_mask, cache=self_attn_cache
        )
        key_length = self_attn_cache.get_mask_sizes(seq_length, 0)[0] if self_attn_cache is not None else seq_length
        causal_mask, rotary = self.self_attention_positions(
            position_ids, causal_mask, key_length, past_length, causal=True, dtype=hidden_states.dtype
        )
        if encoder_hidden_states is not None:
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
                rotary=rotary,
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
        # One token table for source and target (the paper's shared BPE vocabulary), unless the checkpoint has two;
        # each stack owns a table of its own that the loader ties to this one.
        self.shared = TokenEmbedding(config.vocab_size, config.d_model, config.pad_token_id)
        self.encoder = TransformerMTEncoder(config)
        self.decoder = TransformerMTDecoder(config)  # decoder_vocab_size rows
        if not config.share_encoder_decoder_embeddings:
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
        position_ids: torch.LongTensor | None = None,
        decoder_input_ids: torch.LongTensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        decoder_token_type_ids: torch.LongTensor | None = None,
        decoder_position_ids: torch.LongTensor | None = None,
        encoder_outputs: tuple | BaseModelOutput | None = None,
        cache: Cache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        decoder_inputs_embeds: torch.Tensor | None = None,
        use_cache: bool | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> Seq2SeqModelOutput:
        r"""
        Args:
            input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds: the source, see
                [`TransformerMTEncoder`].
            decoder_input_ids, decoder_attention_mask, decoder_token_type_ids, decoder_position_ids,
                decoder_inputs_embeds: the target side, see [`TransformerMTDecoder`].
            encoder_outputs: a precomputed encoder output (generation encodes once); skips the encoder.
            cache: the decoder's `EncoderDecoderCache` (`past_key_values` is the deprecated name).
            use_cache: return the cache for incremental decoding.
        """
        if encoder_outputs is None:
            encoder_outputs = self.encoder(
                input_ids=input_ids,
                attention_mask=attention_mask,
                token_type_ids=token_type_ids,
                position_ids=position_ids,
                inputs_embeds=inputs_embeds,
                **kwargs,
            )
        elif not isinstance(encoder_outputs, BaseModelOutput):
            encoder_outputs = BaseModelOutput(*encoder_outputs)

        decoder_outputs = self.decoder(
            input_ids=decoder_input_ids,
            attention_mask=decoder_attention_mask,
            token_type_ids=decoder_token_type_ids,
            position_ids=decoder_position_ids,
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

    def _target_vocabulary_resized(self, size: int) -> None:
        super()._target_vocabulary_resized(size)
        if self.config.use_final_logits_bias:
            old = self.final_logits_bias
            bias = old.new_zeros(1, size)
            bias[:, : min(size, old.size(1))] = old[:, :size]
            self.final_logits_bias = bias

    @can_return_tuple
    @deprecate_kwarg("past_key_values", "5.40.0", new_name="cache")
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.LongTensor | None = None,
        position_ids: torch.LongTensor | None = None,
        decoder_input_ids: torch.LongTensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        decoder_token_type_ids: torch.LongTensor | None = None,
        decoder_position_ids: torch.LongTensor | None = None,
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
        num_items_in_batch = kwargs.pop("num_items_in_batch", None)  # the loss's, not the layers'
        if labels is not None:
            use_cache = False
            shift = decoder_input_ids is None and decoder_inputs_embeds is None
            needs = {
                "decoder_start_token_id": self.config.decoder_start_token_id,
                "pad_token_id": self.config.pad_token_id,
            }
            check_labels(labels, self.config.decoder_vocab_size, needs if shift else {})
            if shift:
                decoder_input_ids = shift_tokens_right(
                    labels, self.config.pad_token_id, self.config.decoder_start_token_id
                )
        outputs: Seq2SeqModelOutput = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            position_ids=position_ids,
            decoder_input_ids=decoder_input_ids,
            decoder_attention_mask=decoder_attention_mask,
            decoder_token_type_ids=decoder_token_type_ids,
            decoder_position_ids=decoder_position_ids,
            encoder_outputs=encoder_outputs,
            cache=cache,
            inputs_embeds=inputs_embeds,
            decoder_inputs_embeds=decoder_inputs_embeds,
            use_cache=use_cache,
            **kwargs,
        )
        logits = self.lm_head(outputs.last_hidden_state)
        if self.config.use_final_logits_bias:
            logits.add_(self.final_logits_bias)  # in place: the largest tensor of a step need not be copied
        loss = None
        if labels is not None:
            loss = seq2seq_loss(logits, labels, num_items_in_batch)
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

    def prepare_inputs_for_generation(self, input_ids: torch.LongTensor, **kwargs):
        """GenerationMixin's (same signature: `input_ids` are the decoder's ids so far), plus this step's decoder
        segment ids."""
        inputs = super().prepare_inputs_for_generation(input_ids, **kwargs)
        segments = inputs.get("decoder_token_type_ids")
        if segments is not None:  # one segment id per decoder token of this step
            inputs["decoder_token_type_ids"] = segments[:, -inputs["decoder_input_ids"].shape[1] :]
        return inputs

    def _update_model_kwargs_for_generation(self, outputs, model_kwargs, *args, num_new_tokens: int = 1, **kwargs):
        model_kwargs = super()._update_model_kwargs_for_generation(
            outputs, model_kwargs, *args, num_new_tokens=num_new_tokens, **kwargs
        )
        segments = model_kwargs.get("decoder_token_type_ids")
        if segments is not None:  # generated tokens continue the segment of the last decoder token
            model_kwargs["decoder_token_type_ids"] = torch.cat(
                [segments, segments[:, -1:].expand(-1, num_new_tokens)], dim=-1
            )
        return model_kwargs


class TransformerMTDecoderWrapper(TransformerMTPreTrainedModel):
    """Holds the decoder alone under the name `decoder`, so a language model's weights read `model.decoder.*`."""

    def __init__(self, config: TransformerMTConfig):
        super().__init__(config)
        self.decoder = TransformerMTDecoder(config)
        self.post_init()

    def forward(self, *args, **kwargs):
        return self.decoder(*args, **kwargs)


class TransformerMTForCausalLM(TransformerMTPreTrainedModel, GenerationMixin):
    """The decoder alone with the language-model head: a causal LM, or the decoder of an `EncoderDecoderModel`
    (cross-attention runs when `encoder_hidden_states` are given)."""

    _tied_weights_keys = {"lm_head.weight": "model.decoder.embeddings.embed_tokens.weight"}

    def __init__(self, config: TransformerMTConfig):
        config = copy.deepcopy(config)  # the caller's config stays an encoder-decoder one
        config.is_decoder = True
        config.is_encoder_decoder = False
        super().__init__(config)
        self.model = TransformerMTDecoderWrapper(config)
        self.lm_head = nn.Linear(config.d_model, config.decoder_vocab_size, bias=False)
        self.post_init()

    def get_input_embeddings(self):
        return self.model.decoder.get_input_embeddings()

    def set_input_embeddings(self, value):
        self.model.decoder.set_input_embeddings(value)

    def resize_token_embeddings(
        self, new_num_tokens=None, pad_to_multiple_of=None, mean_resizing=True
    ) -> nn.Embedding:
        """Resize the decoder's vocabulary (its table and the output projection); the config follows."""
        vocab_size = self.config.vocab_size
        embeddings = PreTrainedModel.resize_token_embeddings(self, new_num_tokens, pad_to_multiple_of, mean_resizing)
        self.config.decoder_vocab_size = embeddings.num_embeddings
        if not self.config.share_encoder_decoder_embeddings:
            self.config.vocab_size = vocab_size  # the encoder's, which this model does not have
        return embeddings

    def _resize_token_embeddings(self, new_num_tokens, pad_to_multiple_of=None, mean_resizing=True):
        # Input table and output projection are both the decoder's: resized together, whatever the sharing.
        return PreTrainedModel._resize_token_embeddings(self, new_num_tokens, pad_to_multiple_of, mean_resizing)

    @can_return_tuple
    @deprecate_kwarg("past_key_values", "5.40.0", new_name="cache")
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.LongTensor | None = None,
        position_ids: torch.LongTensor | None = None,
        encoder_hidden_states: torch.Tensor | None = None,
        encoder_attention_mask: torch.Tensor | None = None,
        cache: Cache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        labels: torch.LongTensor | None = None,
        use_cache: bool | None = None,
        logits_to_keep: int | torch.Tensor = 0,
        **kwargs: Unpack[TransformersKwargs],
    ) -> CausalLMOutputWithCrossAttentions:
        r"""
        Args:
            labels: (B, T) ids; the loss predicts token t + 1 from tokens <= t (the labels are shifted inside, as
                in transformers' causal LMs), -100 is ignored.
            logits_to_keep: compute logits for the last this many positions only (0: all).
            Everything else: see [`TransformerMTDecoder.forward`].
        """
        if labels is not None:
            check_labels(labels, self.config.decoder_vocab_size, {}, shifted=True)
        outputs = self.model.decoder(
            input_ids=input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            position_ids=position_ids,
            encoder_hidden_states=encoder_hidden_states,
            encoder_attention_mask=encoder_attention_mask,
            cache=cache,
            inputs_embeds=inputs_embeds,
            use_cache=use_cache,
            **kwargs,
        )
        hidden_states = outputs.last_hidden_state
        keep = slice(-logits_to_keep, None) if isinstance(logits_to_keep, int) else logits_to_keep
        logits = self.lm_head(hidden_states[:, keep, :])
        loss = None
        if labels is not None:
            loss = self.loss_function(logits, labels, vocab_size=self.config.decoder_vocab_size, **kwargs)
        return CausalLMOutputWithCrossAttentions(
            loss=loss,
            logits=logits,
            cache=outputs.cache,
            hidden_states=outputs.hidden_states,
            attentions=outputs.attentions,
            cross_attentions=outputs.cross_attentions,
        )


__all__ = [
    "TransformerMTPreTrainedModel",
    "TransformerMTEncoder",
    "TransformerMTDecoder",
    "TransformerMTModel",
    "TransformerMTForConditionalGeneration",
    "TransformerMTForCausalLM",
]
