"""Configuration of the encoder-decoder Transformer ("Attention Is All You Need") with BERT-style embeddings."""

import copy
import functools
from typing import Literal, get_args

from huggingface_hub.dataclasses import as_validated_field, strict
from huggingface_hub.errors import StrictDataclassClassValidationError, StrictDataclassFieldValidationError
from transformers import PreTrainedConfig
from transformers.utils.type_validators import activation_fn_key, interval, positive_int_field


# Absolute positions add a vector to each token embedding; relative ones act in self-attention only (ALiBi adds a
# per-head linear bias to its scores, rotary rotates its queries and keys); cross-attention has no position term.
PositionEmbeddingType = Literal["sinusoidal", "learned", "alibi", "rotary"]
# "interleaved" is the paper's PE(pos, 2i) = sin, PE(pos, 2i+1) = cos; "concatenated" puts all sines first and
# all cosines second, the layout Marian/Opus-MT checkpoints were trained with.
SinusoidalLayout = Literal["interleaved", "concatenated"]
POSITION_EMBEDDING_TYPES = get_args(PositionEmbeddingType)
# A learned table of this many rows is allocated; past ~1M rows that is gigabytes, never what was meant.
MAX_POSITIONS = 2**20
SINUSOIDAL_LAYOUTS = get_args(SinusoidalLayout)

dropout_rate = interval(min=0.0, max=1.0, exclude_max=True)  # 1 would drop everything
positive_number = interval(min=0.0, exclude_min=True)


@as_validated_field
def language_code(value: str | None):
    if value is not None and not value.strip():
        raise ValueError(f"Value must be a language code (a non-empty string) or None, got {value!r}.")


def _value_errors(cls):
    """A `@strict` config that raises ValueError for a value its checks refuse, at construction and assignment.

    huggingface_hub reports a refused value as a StrictDataclassError, which is no ValueError; callers of a config
    treat ValueError as a bad value (the commands print it as one line). The message stays the check's own: a
    field's names the field, a rule's (`validate_*`) names the fields it relates.
    """
    strict_init, strict_setattr = cls.__init__, cls.__setattr__
    floats = {name for name, annotation in cls.__annotations__.items() if annotation is float}

    def widened(name, value):  # an int where a float is declared (dropout=0, a JSON "0") is that float, as in Python
        return float(value) if name in floats and type(value) is int else value

    @functools.wraps(strict_init)
    def __init__(self, *args, **kwargs):
        try:
            strict_init(self, *args, **{name: widened(name, value) for name, value in kwargs.items()})
        except StrictDataclassClassValidationError as error:
            raise ValueError(str(error.__cause__)) from error

    @functools.wraps(strict_setattr)
    def __setattr__(self, name, value):
        try:
            strict_setattr(self, name, widened(name, value))
        except StrictDataclassFieldValidationError as error:
            raise ValueError(" ".join(str(error).split("\n    "))) from error

    cls.__init__, cls.__setattr__ = __init__, __setattr__
    return cls


@_value_errors
@strict
class TransformerMTConfig(PreTrainedConfig):
    r"""
    Configuration of a [`TransformerMTModel`] / [`TransformerMTForConditionalGeneration`].

    The defaults are the base model of Vaswani et al. (2017): 6+6 layers, d_model 512, 8 heads, FFN 2048, ReLU,
    dropout 0.1, post-LN, sinusoidal positions, token embeddings scaled by sqrt(d_model) and shared between
    encoder, decoder and output projection. Field names follow transformers' seq2seq models (BART, Marian);
    the BERT-style embedding block adds `type_vocab_size` (segments) and `layernorm_embedding`.

    Example:

    ```python
    >>> from transformer_mt import TransformerMTConfig, TransformerMTForConditionalGeneration
    >>> config = TransformerMTConfig(vocab_size=8000, d_model=256, position_embedding_type="learned")
    >>> model = TransformerMTForConditionalGeneration(config)
    ```
    """

    model_type = "transformer_mt"
    keys_to_ignore_at_inference = ["cache"]
    attribute_map = {
        "hidden_size": "d_model",
        "num_attention_heads": "encoder_attention_heads",
        "num_hidden_layers": "encoder_layers",
        "initializer_range": "init_std",
    }

    # Types are checked from the annotations and ranges by the fields' validators (huggingface_hub's @strict, as
    # in transformers' own configs); the rules that relate fields are the validate_* methods below.
    vocab_size: int = positive_int_field(default=37000)  # the paper's shared English-German BPE vocabulary
    # Separate source and target vocabularies (some Marian/Opus-MT checkpoints): the decoder and the output
    # projection then have `decoder_vocab_size` rows. None means the same as `vocab_size`.
    share_encoder_decoder_embeddings: bool = True
    decoder_vocab_size: int | None = positive_int_field(default=None)
    d_model: int = positive_int_field(default=512)
    encoder_layers: int = positive_int_field(default=6)
    decoder_layers: int = positive_int_field(default=6)
    encoder_attention_heads: int = positive_int_field(default=8)
    decoder_attention_heads: int = positive_int_field(default=8)
    encoder_ffn_dim: int = positive_int_field(default=2048)
    decoder_ffn_dim: int = positive_int_field(default=2048)
    activation_function: str = activation_fn_key(default="relu")
    dropout: float = dropout_rate(default=0.1)  # residual and embedding dropout (P_drop in the paper)
    attention_dropout: float = dropout_rate(default=0.0)
    activation_dropout: float = dropout_rate(default=0.0)
    # Learned positions: the table size and a hard limit. Sinusoids: only the size precomputed at start; they
    # extend to any length on demand.
    max_position_embeddings: int = interval(min=1, max=MAX_POSITIONS)(default=512)
    position_embedding_type: PositionEmbeddingType = "sinusoidal"
    sinusoidal_layout: SinusoidalLayout = "interleaved"
    type_vocab_size: int = interval(min=0)(default=2)  # BERT's segments A/B; 0 removes the segment table
    scale_embedding: bool = True  # the paper multiplies token embeddings by sqrt(d_model)
    layernorm_embedding: bool = False  # BERT's LayerNorm after token + segment + position
    normalize_before: bool = False  # pre-LN; the paper (and BERT) normalise after the residual (post-LN)
    layer_norm_eps: float = positive_number(default=1e-5)
    init_std: float = positive_number(default=0.02)
    use_cache: bool = True
    tie_word_embeddings: bool = True
    use_final_logits_bias: bool = False  # a fixed bias on the logits, as Marian/BART checkpoints carry
    is_encoder_decoder: bool = True
    is_decoder: bool = False  # the decoder alone (TransformerMTForCausalLM, EncoderDecoderModel's decoder)
    pad_token_id: int | None = 0
    bos_token_id: int | None = 1
    eos_token_id: int | list[int] | None = 2
    decoder_start_token_id: int | None = 1
    forced_eos_token_id: int | list[int] | None = None
    # The vocabulary the ids mean (tokenization.tokenizer_fingerprint), so that a mismatched tokenizer is noticed.
    tokenizer_fingerprint: str | None = None
    # The languages of the text (codes such as "en", "de"): translation splits its input into sentences by the
    # source language's rules. None means unknown (older checkpoints); translation then needs it passed.
    source_lang: str | None = language_code(default=None)
    target_lang: str | None = language_code(default=None)
    # Word alignments (transformer_mt.engines.alignment) read the cross-attention of decoder layer `alignment_layer`
    # (negative counts from the top: -1 is the last), averaged over its first `alignment_heads` heads (None: all of
    # them); a CTranslate2 export takes both, so that its attention is the same.
    alignment_layer: int = -1
    alignment_heads: int | None = positive_int_field(default=None)
    # Trained with reserved span tokens (training's --span_token_share): translation shows the model each protected
    # span (placeholder, URL, number, ...) as a token `{k}` (transformer_mt.text.spans.mask) and puts the spans back.
    span_tokens: bool = False
    # Trained with term annotations (training's --term_annotation_share): translation follows each glossary term
    # found in a sentence with its target term in annotation marks (transformer_mt.text.glossary.annotate).
    term_annotations: bool = False
    # Trained with a message's context as the source's second segment (training's --context_share): translation
    # passes a context, when given, as `source </s> context </s>` with token_type_ids 1 on the context.
    source_context: bool = False
    # Trained with register tags (training's --formality_share): a translation asked to be formal or informal begins
    # its source with `<formal>` or `<informal>` (transformer_mt.text.formality).
    formality_tags: bool = False
    # Imported from an Opus-MT model of several targets (transformer_mt.bridges.marian): each source begins with the
    # target language's token, `>>fra<<` as its vocabulary lists it, instead of the decoder being forced to write it.
    source_language_tokens: bool = False

    def __post_init__(self, **kwargs):
        if self.decoder_vocab_size is None:
            self.decoder_vocab_size = self.vocab_size
        super().__post_init__(**kwargs)

    def get_text_config(self, decoder=None, encoder=None) -> PreTrainedConfig:
        """transformers' view of the text model; for the decoder used alone, the decoder's sizes.

        generate() sizes its cache from `get_text_config(decoder=True).num_hidden_layers`, which `attribute_map` sends
        to `encoder_layers` unless the config is an encoder-decoder one; a decoder-only model must answer with the
        decoder's layers and heads, as the encoder-decoder view does.
        """
        if decoder and not encoder and self.is_decoder and not self.is_encoder_decoder:
            as_encoder_decoder = copy.deepcopy(self)
            as_encoder_decoder.is_encoder_decoder = True
            return as_encoder_decoder.get_text_config(decoder=True)
        return super().get_text_config(decoder=decoder, encoder=encoder)

    def validate_architecture(self):
        """Part of `@strict` validation: the rules that relate fields. Each ValueError names the fields, their values
        and what is allowed."""
        super().validate_architecture()
        for side in ("encoder", "decoder"):
            heads = getattr(self, f"{side}_attention_heads")
            if self.d_model % heads:
                raise ValueError(
                    f"`d_model` ({self.d_model}) must be divisible by `{side}_attention_heads` ({heads})."
                )
        if self.position_embedding_type == "sinusoidal" and self.d_model % 2:
            raise ValueError(
                f"`d_model` must be even with position_embedding_type='sinusoidal' (sine/cosine pairs), got "
                f"{self.d_model}."
            )
        if self.position_embedding_type == "rotary":
            for side in ("encoder", "decoder"):
                head_dim = self.d_model // getattr(self, f"{side}_attention_heads")
                if head_dim % 2:
                    raise ValueError(
                        f"position_embedding_type='rotary' rotates pairs of dimensions: the head size "
                        f"d_model / {side}_attention_heads must be even, got {head_dim}."
                    )
        if self.sinusoidal_layout != "interleaved" and self.position_embedding_type != "sinusoidal":
            raise ValueError(
                f"`sinusoidal_layout` ({self.sinusoidal_layout!r}) applies to "
                f"position_embedding_type='sinusoidal' only, not {self.position_embedding_type!r}."
            )
        if not -self.decoder_layers <= self.alignment_layer < self.decoder_layers:
            raise ValueError(
                f"`alignment_layer` must name one of the {self.decoder_layers} decoder layers, in "
                f"[{-self.decoder_layers}, {self.decoder_layers - 1}] (-1: the last), got "
                f"{self.alignment_layer}."
            )
        if self.alignment_heads is not None and self.alignment_heads > self.decoder_attention_heads:
            raise ValueError(
                f"`alignment_heads` ({self.alignment_heads}) must be at most `decoder_attention_heads` "
                f"({self.decoder_attention_heads}), or None for all of them."
            )
        if self.share_encoder_decoder_embeddings and self.decoder_vocab_size != self.vocab_size:
            raise ValueError(
                f"`decoder_vocab_size` ({self.decoder_vocab_size}) must equal `vocab_size` ({self.vocab_size}) when "
                "`share_encoder_decoder_embeddings` is True; set it to False for separate vocabularies."
            )

    def validate_token_ids(self):
        """Part of `@strict` validation: special ids must name a row of every table they are looked up in (or
        generation could never stop). transformers only warns; a wrong id here is an error."""
        largest = min(self.vocab_size, self.decoder_vocab_size) - 1
        for name in ("pad_token_id", "bos_token_id", "decoder_start_token_id", "eos_token_id", "forced_eos_token_id"):
            value = getattr(self, name)
            for one in value if isinstance(value, list) else [value]:
                if one is not None and not 0 <= one <= largest:
                    raise ValueError(f"`{name}` must be an integer in [0, {largest}], got {one}.")
        super().validate_token_ids()


__all__ = ["POSITION_EMBEDDING_TYPES", "SINUSOIDAL_LAYOUTS", "TransformerMTConfig"]
