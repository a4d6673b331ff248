"""Export a TransformerMT checkpoint to CTranslate2, whose `Translator` decodes as `generate()` does.

```python
import ctranslate2
from transformers import AutoTokenizer
import transformer_mt
from transformer_mt.bridges.ctranslate2 import hypothesis_text, source_tokens, translate_options

tokenizer = AutoTokenizer.from_pretrained("runs/main-sinusoidal-ct2")  # the export holds the tokenizer too
translator = ctranslate2.Translator("runs/main-sinusoidal-ct2", compute_type="float32")
results = translator.translate_batch(source_tokens(tokenizer, texts), **translate_options(1, max_new_tokens=64))
translations = [hypothesis_text(tokenizer, result.hypotheses[0]) for result in results]
```

CTranslate2's `TransformerSpec` is this architecture: one `Embeddings` table per stack scaled by `scale_embedding`,
an additive position table, an optional LayerNorm after the embeddings, post-LN or pre-LN layers (pre-LN with a
final LayerNorm per stack), a fused self-attention and a cross-attention per decoder layer, and an output
projection with an optional bias. How the config maps:

* positions: rotary positions become CTranslate2's rotary self-attention (both stacks, `rotary_interleave=False`:
  the half split; cross-attention has none, as here); ALiBi is refused (CTranslate2 has it in decoders only).
  Absolute positions are always written out as a table, never CTranslate2's built-in sinusoid, which differs
  from ours in three ways (it is concatenated, counts positions from 1, and uses the frequencies
  10000^(-i/(d/2-1)) of tensor2tensor instead of 10000^(-2i/d)). Learned positions: the table itself
  (`max_position_embeddings` rows). Sinusoids, either `sinusoidal_layout`: our own table for
  max(`max_position_embeddings`, 1024) positions, 1024 being `translate_batch`'s default `max_input_length`;
  CTranslate2 rejects a longer sequence. Rotary: see `ctranslate2_weights.set_stack`.
* segments (`type_vocab_size` > 0): a model trained with context (`source_context`: a sentence, `</s>`, its
  context as segment 1) gets a second source embedding merged by addition (`num_source_embeddings=2`,
  `EmbeddingsMerge.ADD`), the segment table, and every source token is given as `token￨segment`
  (`segmented_tokens`); CTranslate2 scales the merged sum, so the token rows are written already scaled and the
  scaling is off, giving forward()'s floats ((token * scale + segment) + position). Any other model reads one
  segment: the segment-0 vector is added to every row of the encoder's position table (both are added before the
  optional LayerNorm). The decoder is always segment 0, folded the same way.
* `scale_embedding` -> `scale_embeddings` (sqrt(d_model) or off), `layernorm_embedding` -> `layernorm_embedding`,
  `normalize_before` -> `pre_norm` (+ the stacks' final LayerNorms), `layer_norm_eps` -> `layer_norm_epsilon`,
  `activation_function` -> the activation enum, encoder/decoder layers and heads per stack.
* vocabularies: the tokenizer's token strings for ids 0..vocab_size-1 (source) and 0..decoder_vocab_size-1
  (target: those of `tokenizer.target_tokenizer` when source and target have vocabularies of their own);
  CTranslate2 stores them once when equal. Translator inputs are therefore token strings, e.g.
  `tokenizer.convert_ids_to_tokens(tokenizer(text)["input_ids"])` (which ends with `</s>`, as `generate()` sees it),
  and its hypotheses target token strings (`hypothesis_text` decodes one).
* the decoder's own token table (`share_encoder_decoder_embeddings=False`), the output projection (tied or not)
  and `final_logits_bias` (`use_final_logits_bias`) are copied as they are; the decoder starts from the generation
  config's `decoder_start_token_id` and stops at its `eos_token_id`.

Greedy search equals generate()'s. Beam search equals generate(..., early_stopping=True): CTranslate2 stops once
`num_beams` hypotheses are finished, whereas generate()'s default `early_stopping=False` keeps extending beams
while a running one could still score better, so it can return a different hypothesis.

Not exact without `source_context`: folding the segment vector into the position table changes the order of two
float additions
((token + segment) + position vs token + (segment + position)), a difference of about one float32 ulp that can
flip a greedy choice only between near-tied tokens. int8 and float16 exports are approximations by design.
Generation-config options other than the beam size and length (`bad_words_ids`, `no_repeat_ngram_size`,
`repetition_penalty`, `forced_eos_token_id`, ...) are `translate_batch` arguments, not part of the export.
"""

import os
import shutil
import tempfile

import torch
from ctranslate2.converters import Converter
from ctranslate2.specs import common_spec
from ctranslate2.specs.model_spec import ACCEPTED_MODEL_TYPES
from ctranslate2.specs.transformer_spec import TransformerDecoderSpec, TransformerEncoderSpec, TransformerSpec

from ..checkpoints import check_output_dir, load_translator, read_config
from ..configuration import TransformerMTConfig
from ..diagnostics import alignment_heads as alignment_heads_of
from ..modeling.positional_embeddings import POSITION_STRATEGIES, position_strategy_class
from ..tokenization import target_side
from .ctranslate2_weights import set_attention, set_layer, set_stack


# CTranslate2 rejects positions beyond the table; this many cover translate_batch's default max_input_length.
SINUSOID_POSITIONS = 1024
# raised when the same model files export differently (2: the alignment layer and heads; 3: the model's config and
# generation config carried beside the weights; 4: a model trained with context reads its segments)
EXPORT_FORMAT = 4
SEGMENT_SEPARATOR = "￨"  # CTranslate2's separator of a token's features: `token￨segment`
MODEL_CONFIG = "transformer_mt_config.json"  # the model's config in an export: CTranslate2's own is config.json
_ACTIVATIONS = {
    "relu": common_spec.Activation.RELU,
    "gelu": common_spec.Activation.GELU,
    "gelu_python": common_spec.Activation.GELU,
    "gelu_new": common_spec.Activation.GELUTanh,
    "gelu_fast": common_spec.Activation.GELUTanh,
    "gelu_pytorch_tanh": common_spec.Activation.GELUTanh,
    "quick_gelu": common_spec.Activation.GELUSigmoid,
    "silu": common_spec.Activation.SWISH,
    "swish": common_spec.Activation.SWISH,
    "tanh": common_spec.Activation.Tanh,
    "sigmoid": common_spec.Activation.Sigmoid,
}
# Vocabulary files a CTranslate2 export may hold; which ones depends on shared vs separate vocabularies, so a
# forced re-export removes them all first rather than leaving a stale one that CTranslate2 would read.
_VOCABULARY_FILES = tuple(
    f"{side}_vocabulary.{ext}" for side in ("shared", "source", "target") for ext in ("json", "txt")
)


# generate()'s decoding controls and the translate_batch arguments that do the same.
CTRANSLATE2_OPTIONS = {
    "length_penalty": "length_penalty",
    "no_repeat_ngram_size": "no_repeat_ngram_size",
    "repetition_penalty": "repetition_penalty",
    "num_return_sequences": "num_hypotheses",
    "top_k": "sampling_topk",
    "top_p": "sampling_topp",
    "temperature": "sampling_temperature",
}


def translate_options(num_beams: int = 1, max_new_tokens: int = 256, do_sample: bool = False, **decoding) -> dict:
    """`translate_batch` keyword arguments that decode as `generate(num_beams=..., max_new_tokens=...,
    early_stopping=True, **decoding)` does; hypotheses end with `</s>` when decoding stopped there, as generate()'s
    ids do. generate() controls that CTranslate2 lacks are refused by name."""
    unknown = sorted(set(decoding) - set(CTRANSLATE2_OPTIONS))
    if unknown:
        raise ValueError(
            f"CTranslate2 has no equivalent of {', '.join(unknown)}; it takes "
            f"{', '.join(['num_beams', 'max_new_tokens', 'do_sample', *CTRANSLATE2_OPTIONS])}."
        )
    # min_decoding_length: CTranslate2 forbids </s> as the first token by default; generate() allows it.
    # return_end_token: beam search divides a hypothesis' score by its length, which must count </s> as
    # generate() counts it.
    options = dict(
        beam_size=num_beams, max_decoding_length=max_new_tokens, min_decoding_length=0, return_end_token=True
    )
    options.update({CTRANSLATE2_OPTIONS[name]: value for name, value in decoding.items() if value is not None})
    if do_sample:
        options.setdefault("sampling_topk", 0)  # 0: the whole distribution, as generate()'s sampling without top_k
    elif any(name in decoding for name in ("top_k", "top_p", "temperature")):
        raise ValueError("top_k, top_p and temperature apply to sampling: pass do_sample=True.")
    if options.get("num_hypotheses", 1) > 1:
        options["return_scores"] = True
    return options


def source_tokens(tokenizer, texts: list[str], config=None) -> list[list[str]]:
    """Translator inputs for `texts`: the token strings of the ids generate() gets (ending with </s>), each with
    its segment 0 when the export of `config` reads segments (`reads_segments`)."""
    return [translator_input(tokenizer, ids, config) for ids in tokenizer(texts)["input_ids"]]


def translator_input(tokenizer, ids: list[int], config=None, segments: list[int] | None = None) -> list[str]:
    """A Translator's input for one source's `ids`: its token strings, each with its segment (`segments`, else 0)
    where the export of `config` reads segments."""
    tokens = tokenizer.convert_ids_to_tokens(ids)
    return segmented_tokens(tokens, segments) if config is not None and reads_segments(config) else tokens


def reads_segments(config) -> bool:
    """Whether an export of `config` takes each source token with its segment: a model trained with context."""
    return bool(getattr(config, "source_context", False)) and config.type_vocab_size > 1


def segmented_tokens(tokens: list[str], segments: list[int] | None) -> list[str]:
    """`tokens` as an export that reads segments takes them: `token￨segment` (segment 0 throughout for None)."""
    return [f"{token}{SEGMENT_SEPARATOR}{segment}" for token, segment in zip(tokens, segments or [0] * len(tokens))]


def generated_tokens(tokenizer, sequences, eos_token_id: int) -> list[list[str]]:
    """generate()'s output ids as Translator hypotheses: no start token, no padding, up to and including </s>."""
    target = target_side(tokenizer)
    hypotheses = []
    for row in sequences[:, 1:].tolist():
        hypotheses.append(
            target.convert_ids_to_tokens(row[: row.index(eos_token_id) + 1] if eos_token_id in row else row)
        )
    return hypotheses


def export_problem(config) -> str | None:
    """Why a model of `config` (a TransformerMTConfig) cannot be exported to CTranslate2, or None when it can."""
    positions = position_strategy_class(config)
    if positions.ctranslate2_problem is not None:
        exported = [name for name, strategy in POSITION_STRATEGIES.items() if strategy.ctranslate2_problem is None]
        return (
            f"position_embedding_type={config.position_embedding_type!r} cannot be exported to CTranslate2: "
            f"{positions.ctranslate2_problem}. {_listed(exported).capitalize()} positions can."
        )
    if config.activation_function not in _ACTIVATIONS:
        return (
            f"`activation_function`={config.activation_function!r} has no CTranslate2 equivalent; supported: "
            f"{', '.join(sorted(_ACTIVATIONS))}."
        )
    return None


def exported_max_positions(config) -> int | None:
    """How many positions the decoder of a CTranslate2 export of `config` has (CTranslate2 rejects a longer
    sequence): the rows of its position table, or None when positions act in attention (no table, no limit)."""
    return _table_length(config) if position_strategy_class(config).absolute else None


def _table_length(config) -> int:
    """Rows of the position table an export writes: a learned table's, else enough for translate_batch's inputs."""
    return position_strategy_class(config).position_limit(config) or max(
        config.max_position_embeddings, SINUSOID_POSITIONS
    )


def _listed(names: list[str]) -> str:
    """ "a", "a and b", "a, b and c"."""
    return " and ".join(filter(None, [", ".join(names[:-1]), names[-1]]))


def hypothesis_text(tokenizer, tokens: list[str]) -> str:
    """The text of a Translator hypothesis (target token strings)."""
    target = target_side(tokenizer)
    return target.decode(target.convert_tokens_to_ids(tokens), skip_special_tokens=True)


class TransformerMTConverter(Converter):
    """Builds the CTranslate2 `TransformerSpec` of a loaded TransformerMT model and its tokenizer."""

    def __init__(self, model, tokenizer):
        self._model = model
        self._tokenizer = tokenizer

    def _load(self) -> TransformerSpec:
        config = self._model.config
        problem = export_problem(config)
        if problem is not None:
            raise ValueError(problem)
        activation = _ACTIVATIONS[config.activation_function]
        generation = self._model.generation_config
        decoder_start_token_id = _single_id(
            "decoder_start_token_id", generation.decoder_start_token_id, config.decoder_start_token_id
        )
        eos_token_id = _single_id("eos_token_id", generation.eos_token_id, config.eos_token_id)
        source_vocabulary = _vocabulary(self._tokenizer, config.vocab_size, "vocab_size")
        target_vocabulary = _vocabulary(target_side(self._tokenizer), config.decoder_vocab_size, "decoder_vocab_size")

        stack = dict(
            pre_norm=config.normalize_before, activation=activation, layernorm_embedding=config.layernorm_embedding
        )
        encoder_stack, decoder_stack = dict(stack), dict(stack)
        positions = position_strategy_class(config)
        for stack_options, heads in (
            (encoder_stack, config.encoder_attention_heads),
            (decoder_stack, config.decoder_attention_heads),
        ):
            rotary_dim = positions.rotary_dim(config, heads)
            if rotary_dim is not None:  # self-attention of both stacks; GPT-NeoX's half split
                stack_options.update(rotary_dim=rotary_dim, rotary_interleave=False, rotary_base=positions.rotary_base)
        # the attention its return_attention gives: the layer and heads that word alignments read
        alignment_layer, alignment_heads = alignment_heads_of(config)
        if reads_segments(config):  # token and segment embeddings added, as forward() adds them
            encoder_stack.update(num_source_embeddings=2, embeddings_merge=common_spec.EmbeddingsMerge.ADD)
        spec = TransformerSpec(
            TransformerEncoderSpec(config.encoder_layers, config.encoder_attention_heads, **encoder_stack),
            TransformerDecoderSpec(
                config.decoder_layers,
                config.decoder_attention_heads,
                **decoder_stack,
                alignment_layer=alignment_layer,
                alignment_heads=alignment_heads,
            ),
        )
        encoder, decoder = self._model.model.encoder, self._model.model.decoder
        length = _table_length(config)
        set_stack(spec.encoder, spec.encoder.embeddings[0], encoder, config, length, spec.encoder.embeddings[1:])
        set_stack(spec.decoder, spec.decoder.embeddings, decoder, config, length)
        for layer_spec, layer in zip(spec.encoder.layer, encoder.layers, strict=True):
            set_layer(layer_spec, layer)
        for layer_spec, layer in zip(spec.decoder.layer, decoder.layers, strict=True):
            set_layer(layer_spec, layer)
            set_attention(layer_spec.attention, layer.encoder_attn, layer.encoder_attn_layer_norm, fused=False)
        spec.decoder.projection.weight = self._model.get_output_embeddings().weight
        if config.use_final_logits_bias:
            spec.decoder.projection.bias = self._model.final_logits_bias.squeeze(0)

        spec.config.layer_norm_epsilon = config.layer_norm_eps
        spec.config.decoder_start_token = target_vocabulary[decoder_start_token_id]
        spec.config.eos_token = target_vocabulary[eos_token_id]
        for name in ("bos_token", "unk_token"):  # only read by options this export does not use; keep them real
            token = getattr(self._tokenizer, name)
            if token is not None:
                setattr(spec.config, name, token)
        spec.register_source_vocabulary(source_vocabulary)
        if reads_segments(config):
            spec.register_source_vocabulary([str(segment) for segment in range(config.type_vocab_size)])
        spec.register_target_vocabulary(target_vocabulary)
        return spec


def _single_id(name: str, value, fallback) -> int:
    """The one token id in `value` (the generation config's), else in `fallback` (the model config's)."""
    value = fallback if value is None else value
    if isinstance(value, (list, tuple)):
        if len(value) != 1:
            raise ValueError(f"`{name}`={value!r}: CTranslate2 exports take exactly one {name}.")
        value = value[0]
    if value is None:
        raise ValueError(f"`{name}` is not set in the config or generation config; the export needs it.")
    return value


def _vocabulary(tokenizer, size: int, field: str) -> list[str]:
    """The token string of every id below `size`; the tokenizer must name exactly these ids, each once."""
    if getattr(tokenizer, "separate_vocabs", False) and getattr(tokenizer, "target_tokenizer", None) is None:
        raise ValueError(
            "Tokenizers whose separate source and target vocabularies share one object (Marian's "
            "`separate_vocabs`) are not supported: one id would name two token strings."
        )
    if len(tokenizer) != size:
        raise ValueError(
            f"The tokenizer has {len(tokenizer)} tokens but `{field}` is {size}; CTranslate2 needs "
            "one token string per embedding row."
        )
    tokens = tokenizer.convert_ids_to_tokens(list(range(size)))
    first_id = {}
    for token_id, token in enumerate(tokens):
        if token in first_id:
            raise ValueError(
                f"Token {token!r} has ids {first_id[token]} and {token_id}; CTranslate2 maps token "
                "strings to ids, so each must be unique."
            )
        first_id[token] = token_id
    return tokens


def export_ctranslate2(model_dir: str, output_dir: str, quantization: str | None = None, force: bool = False) -> str:
    """Write the CTranslate2 model and tokenizer of the TransformerMT checkpoint in `model_dir`; return output_dir."""
    problem = export_problem(
        TransformerMTConfig.from_dict(read_config(model_dir, TransformerMTConfig.model_type, "TransformerMT"))
    )
    if problem is not None:
        raise ValueError(problem)
    if quantization is not None and quantization not in ACCEPTED_MODEL_TYPES:
        raise ValueError(f"`quantization` must be one of {', '.join(ACCEPTED_MODEL_TYPES)}; got {quantization!r}.")
    check_output_dir(output_dir, force, flag="--force")

    model, tokenizer = load_translator(model_dir)
    model.eval()
    parent = os.path.dirname(os.path.abspath(output_dir))
    os.makedirs(parent, exist_ok=True)
    # Staged next to the output, then moved in: a failed export leaves nothing half-written, and --force replaces
    # only the export's own files (CTranslate2's own `force` would delete the whole directory).
    with tempfile.TemporaryDirectory(prefix=".ctranslate2-export-", dir=parent) as staging:
        staged = os.path.join(staging, "model")
        with torch.no_grad():
            TransformerMTConverter(model, tokenizer).convert(staged, quantization=quantization)
        tokenizer.save_pretrained(staged)
        model.config.to_json_file(os.path.join(staged, MODEL_CONFIG))
        model.generation_config.save_pretrained(staged)
        os.makedirs(output_dir, exist_ok=True)
        for name in _VOCABULARY_FILES:
            if os.path.isfile(os.path.join(output_dir, name)):
                os.remove(os.path.join(output_dir, name))
        for name in os.listdir(staged):
            shutil.move(os.path.join(staged, name), os.path.join(output_dir, name))
    return output_dir


def read_export_settings(export_dir: str) -> tuple:
    """The model config and generation config an export carries (`export_ctranslate2` writes them), so that an
    export alone decodes as its model does; an export made before they were carried is named with the fix."""
    from transformers import GenerationConfig

    path = os.path.join(export_dir, MODEL_CONFIG)
    if not os.path.isfile(path):
        raise ValueError(
            f"{export_dir} is a CTranslate2 export without its model's settings ({MODEL_CONFIG}, made "
            "by transformer-mt before 0.4.0): export it again with transformer-mt-export-ctranslate2"
        )
    return TransformerMTConfig.from_json_file(path), GenerationConfig.from_pretrained(export_dir)
