"""Warm-start a TransformerMT encoder-decoder from a BERT checkpoint, as EncoderDecoderModel's bert2bert does.

BERT is the encoder of this model under other names: post-LN layers, learned positions, segment embeddings and a
LayerNorm over token + segment + position, unscaled token embeddings. The converted encoder computes exactly what
`BertModel` computes (its `last_hidden_state`). With bert2bert's decoder initialisation (the default) every
decoder layer's self-attention, feed-forward network and LayerNorms, and the decoder's embedding block, start
from the BERT layer of the same index; only the cross-attention (`encoder_attn`, `encoder_attn_layer_norm`) has
no BERT counterpart and starts fresh. One token table is shared by encoder, decoder and the output projection
(bert2bert keeps two copies of BERT's table; here they would start equal anyway). The report returned with the
model, and printed by the command line, names every parameter that was initialised fresh.

Special tokens follow bert2bert: decoding starts with [CLS] (`decoder_start_token_id = bos_token_id`) and ends
with [SEP] (`eos_token_id`), padding is BERT's `pad_token_id`. The ids come, in this order, from explicit
arguments, the tokenizer (the checkpoint directory's own, or one passed in), the BERT config's `bos_token_id` /
`eos_token_id`, and for a vocabulary of 30522 tokens, Google's uncased English WordPiece vocabulary (BERT base and
large uncased, DistilBERT, MiniLM, all-MiniLM), [CLS] = 101 and [SEP] = 102; otherwise a ValueError asks for them.
The output directory holds our config, safetensors weights and generation config next to the checkpoint's own
tokenizer files, so `AutoTokenizer` gives BERT's tokenizer and `AutoModelForSeq2SeqLM` the warm-started model.
"""

import os
from dataclasses import dataclass

import torch
from transformers import AutoTokenizer, BertModel, PreTrainedModel
from transformers.utils import logging as hf_logging

from ..checkpoints import check_output_dir, copy_tokenizer_files, read_config
from ..configuration import TransformerMTConfig
from ..modeling import TransformerMTForConditionalGeneration
from ..tokenization import tokenizer_fingerprint


# The vocabulary size of Google's uncased English WordPiece vocab.txt, where [CLS] is 101 and [SEP] is 102.
_STANDARD_VOCAB_SIZE = 30522
_STANDARD_CLS_SEP = (101, 102)
_TOKENIZER_FILES = (
    "vocab.txt",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
)
_SAFETENSORS_FILES = ("model.safetensors", "model.safetensors.index.json")

# Our embedding block (under `model.encoder.embeddings.` / `model.decoder.embeddings.`) <- BertModel.
_EMBEDDINGS = {
    "embed_positions.weight": "embeddings.position_embeddings.weight",
    "token_type_embeddings.weight": "embeddings.token_type_embeddings.weight",
    "layernorm_embedding.weight": "embeddings.LayerNorm.weight",
    "layernorm_embedding.bias": "embeddings.LayerNorm.bias",
}
# Our layer modules (under `layers.{i}.`) <- BertModel's (under `encoder.layer.{i}.`); each has weight and bias.
_LAYER = {
    "self_attn.q_proj": "attention.self.query",
    "self_attn.k_proj": "attention.self.key",
    "self_attn.v_proj": "attention.self.value",
    "self_attn.out_proj": "attention.output.dense",
    "self_attn_layer_norm": "attention.output.LayerNorm",
    "fc1": "intermediate.dense",
    "fc2": "output.dense",
    "final_layer_norm": "output.LayerNorm",
}
_WORD_EMBEDDINGS = "embeddings.word_embeddings.weight"


@dataclass
class WarmStartReport:
    """Where every weight of the warm-started model came from."""

    copied: dict[str, str]  # our state-dict name (tied aliases included) -> the BertModel weight copied into it
    fresh: list[str]  # our state-dict names initialised at random: no BERT counterpart
    unused: list[str]  # BertModel weights copied nowhere (the pooler, layers beyond the requested depth)

    def __str__(self) -> str:
        def listing(names):
            return "".join(f"\n  {name}" for name in names) if names else " none"

        return (
            f"Copied from BERT: {len(self.copied)} weights.\n"
            f"Initialised fresh ({len(self.fresh)}):{listing(self.fresh)}\n"
            f"BERT weights not used ({len(self.unused)}):{listing(self.unused)}"
        )


def bert_to_transformer_mt_config(
    bert_config, decoder_layers: int | None = None, tokenizer=None, **overrides
) -> TransformerMTConfig:
    """The TransformerMTConfig whose encoder computes what `BertModel(bert_config)` computes; decoder as deep
    as `decoder_layers` (default: BERT's depth); special ids as in the module docstring; `overrides` win."""
    if getattr(bert_config, "model_type", None) != "bert":
        model_type = getattr(bert_config, "model_type", None)
        raise ValueError(f"Expected a BERT ('bert') config, got model type {model_type!r}.")
    bos_token_id, eos_token_id = _cls_sep_ids(bert_config, tokenizer, overrides)
    pad_token_id = bert_config.pad_token_id
    if pad_token_id is None and tokenizer is not None:
        pad_token_id = tokenizer.pad_token_id
    kwargs = dict(
        vocab_size=bert_config.vocab_size,
        d_model=bert_config.hidden_size,
        encoder_layers=bert_config.num_hidden_layers,
        decoder_layers=bert_config.num_hidden_layers if decoder_layers is None else decoder_layers,
        encoder_attention_heads=bert_config.num_attention_heads,
        decoder_attention_heads=bert_config.num_attention_heads,
        encoder_ffn_dim=bert_config.intermediate_size,
        decoder_ffn_dim=bert_config.intermediate_size,
        activation_function=bert_config.hidden_act,
        dropout=bert_config.hidden_dropout_prob,
        attention_dropout=bert_config.attention_probs_dropout_prob,
        activation_dropout=0.0,  # BERT has no dropout inside the feed-forward network
        max_position_embeddings=bert_config.max_position_embeddings,
        position_embedding_type="learned",
        type_vocab_size=bert_config.type_vocab_size,
        scale_embedding=False,
        layernorm_embedding=True,
        normalize_before=False,
        layer_norm_eps=bert_config.layer_norm_eps,
        init_std=bert_config.initializer_range,  # the fresh cross-attention starts as BERT's own layers did
        tie_word_embeddings=True,  # as BERT's masked-LM head: the output projection is the token table
        pad_token_id=pad_token_id,
        bos_token_id=bos_token_id,
        eos_token_id=eos_token_id,
        decoder_start_token_id=bos_token_id,
    )
    kwargs.update(overrides)
    return TransformerMTConfig(**kwargs)


def _cls_sep_ids(bert_config, tokenizer, overrides: dict) -> tuple[int, int]:
    """bert2bert's (bos = [CLS], eos = [SEP]): from overrides, tokenizer, config, or the standard vocabulary."""
    if tokenizer is not None and len(tokenizer) > bert_config.vocab_size:
        raise ValueError(
            f"The tokenizer has {len(tokenizer)} tokens but the BERT config's vocab_size is {bert_config.vocab_size}."
        )
    if tokenizer is not None:
        cls_sep = (tokenizer.cls_token_id, tokenizer.sep_token_id)
    elif bert_config.bos_token_id is not None and bert_config.eos_token_id is not None:
        cls_sep = (bert_config.bos_token_id, bert_config.eos_token_id)
    elif bert_config.vocab_size == _STANDARD_VOCAB_SIZE:
        cls_sep = _STANDARD_CLS_SEP
    else:
        cls_sep = (None, None)
    bos_token_id = overrides.pop("bos_token_id", cls_sep[0])
    eos_token_id = overrides.pop("eos_token_id", cls_sep[1])
    if bos_token_id is None or eos_token_id is None:
        source = "its tokenizer has no [CLS]/[SEP] token" if tokenizer is not None else "no tokenizer was given"
        raise ValueError(
            f"Cannot tell the [CLS]/[SEP] ids of this BERT vocabulary ({bert_config.vocab_size} tokens; {source}): "
            "pass tokenizer=..., or bos_token_id=... and eos_token_id=... ."
        )
    return bos_token_id, eos_token_id


def bert_weight_map(config: TransformerMTConfig, num_bert_layers: int, init_decoder: bool = True) -> dict[str, str]:
    """Our state-dict name -> the BertModel weight it starts from; decoder layer i from BERT layer i (bert2bert)."""
    mapping = {"model.shared.weight": _WORD_EMBEDDINGS}
    stacks = [("encoder", config.encoder_layers)] + ([("decoder", config.decoder_layers)] if init_decoder else [])
    for stack, num_layers in stacks:
        for ours, theirs in _EMBEDDINGS.items():
            mapping[f"model.{stack}.embeddings.{ours}"] = theirs
        for i in range(min(num_layers, num_bert_layers)):  # deeper stacks: the extra layers start fresh
            for ours, theirs in _LAYER.items():
                for kind in ("weight", "bias"):
                    mapping[f"model.{stack}.layers.{i}.{ours}.{kind}"] = f"encoder.layer.{i}.{theirs}.{kind}"
    if init_decoder and not config.share_encoder_decoder_embeddings:
        mapping["model.decoder.embeddings.embed_tokens.weight"] = _WORD_EMBEDDINGS  # bert2bert's second copy
    return mapping


def load_bert(bert_dir: str) -> tuple[BertModel, object]:
    """The BertModel (safetensors only) and tokenizer (None if it has none) in `bert_dir`, every weight present."""
    read_config(bert_dir, "bert", "BERT")
    if not any(os.path.isfile(os.path.join(bert_dir, name)) for name in _SAFETENSORS_FILES):
        raise FileNotFoundError(
            f"No safetensors weights in {bert_dir!r} (pickled pytorch_model.bin files are not "
            "loaded): expected model.safetensors."
        )
    # Mismatched shapes come back in the loading info (a RuntimeError pointing at a log table otherwise). The
    # logged load report is muted: it calls missing weights "newly initialized", which we refuse below instead.
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        bert, info = BertModel.from_pretrained(
            bert_dir, use_safetensors=True, output_loading_info=True, ignore_mismatched_sizes=True
        )
    finally:
        hf_logging.set_verbosity(verbosity)
    # from_pretrained initialises absent weights at random and only logs it; a warm start from them would be a
    # silent cold start. The pooler is the one BertModel part this conversion does not use.
    missing = sorted(key for key in info["missing_keys"] if not key.startswith("pooler."))
    if missing:
        raise ValueError(f"The BERT checkpoint in {bert_dir!r} lacks weights {missing}.")
    mismatched = [
        f"{key} {tuple(stored)} vs {tuple(expected)}" for key, stored, expected in sorted(info["mismatched_keys"])
    ]
    if mismatched:
        raise ValueError(
            f"The BERT checkpoint in {bert_dir!r} has weights whose shapes (stored vs implied by "
            f"config.json) differ: {mismatched}."
        )
    has_tokenizer = any(os.path.isfile(os.path.join(bert_dir, name)) for name in ("vocab.txt", "tokenizer.json"))
    return bert.eval(), AutoTokenizer.from_pretrained(bert_dir) if has_tokenizer else None


def warm_start_from_bert(
    bert: PreTrainedModel | str | os.PathLike,
    init_decoder: bool = True,
    decoder_layers: int | None = None,
    tokenizer=None,
    **config_overrides,
) -> tuple[TransformerMTForConditionalGeneration, WarmStartReport]:
    """A TransformerMT model (eval mode) whose encoder is `bert` (a BERT model or checkpoint directory) and whose
    decoder starts from it too when `init_decoder` (bert2bert); the report names what was initialised fresh."""
    if isinstance(bert, (str, os.PathLike)):
        bert, dir_tokenizer = load_bert(os.fspath(bert))
        tokenizer = tokenizer if tokenizer is not None else dir_tokenizer
    elif getattr(bert.config, "model_type", None) != "bert":
        raise ValueError(f"Expected a BERT ('bert') model, got a {bert.config.model_type!r} one.")
    bert = bert.base_model  # BertModel itself, or the `bert` inside BertForMaskedLM and the other heads
    config = bert_to_transformer_mt_config(bert.config, decoder_layers, tokenizer, **config_overrides)
    if tokenizer is not None:
        config.tokenizer_fingerprint = tokenizer_fingerprint(tokenizer)
    model = TransformerMTForConditionalGeneration(config)

    ours = model.state_dict(keep_vars=True)  # tied aliases (lm_head, embed_tokens) are the same Parameter object
    theirs = bert.state_dict()
    # Overrides may remove a target (sinusoidal positions have no weight); its BERT weight is then reported unused.
    mapping = {
        key: source
        for key, source in bert_weight_map(config, bert.config.num_hidden_layers, init_decoder).items()
        if key in ours
    }
    with torch.no_grad():
        for key, source in mapping.items():
            if source not in theirs:
                raise ValueError(f"The BERT model has no weight {source} (needed for {key}).")
            if ours[key].shape != theirs[source].shape:
                raise ValueError(
                    f"BERT's {source} has shape {tuple(theirs[source].shape)} but {key} has "
                    f"{tuple(ours[key].shape)}; the config overrides changed it."
                )
            ours[key].copy_(theirs[source])
    source_of = {id(ours[key]): source for key, source in mapping.items()}
    copied = {key: source_of[id(tensor)] for key, tensor in ours.items() if id(tensor) in source_of}
    report = WarmStartReport(
        copied=copied,
        fresh=[key for key in ours if key not in copied],
        unused=sorted(theirs.keys() - set(mapping.values())),
    )
    return model.eval(), report


def convert_bert(
    bert_dir: str,
    output_dir: str,
    init_decoder: bool = True,
    decoder_layers: int | None = None,
    overwrite: bool = False,
) -> tuple[TransformerMTForConditionalGeneration, WarmStartReport]:
    """Warm-start from the BERT checkpoint in `bert_dir`; save model and BERT's tokenizer files to `output_dir`."""
    check_output_dir(output_dir, overwrite)
    bert, tokenizer = load_bert(bert_dir)
    if tokenizer is None:
        raise FileNotFoundError(f"{bert_dir!r} has no tokenizer (vocab.txt or tokenizer.json) to copy.")
    model, report = warm_start_from_bert(bert, init_decoder, decoder_layers, tokenizer=tokenizer)

    copy_tokenizer_files(bert_dir, output_dir, _TOKENIZER_FILES, type(tokenizer).__name__)
    model.save_pretrained(output_dir)
    return model, report
