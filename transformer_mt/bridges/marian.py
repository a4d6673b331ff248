"""Convert a MarianMT / Opus-MT checkpoint into a TransformerMT one with the same outputs.

Marian is the same architecture: post-LN layers with the same module names, sinusoidal positions in the
concatenated layout (sines, then cosines), token embeddings scaled by sqrt(d_model), a fixed `final_logits_bias`,
shared or separate vocabularies. The converted directory holds our config and safetensors weights, the checkpoint's
generation config, and a fast tokenizer built from its SentencePiece models and vocab.json that gives
MarianTokenizer's ids with character offsets (`marian_tokenizer`); where its files allow none, it keeps them as they
are, and `AutoTokenizer` gives MarianTokenizer. A vocabulary that lists `>>fra<<`-style tokens is a model of several
targets: its config's `source_language_tokens` makes translation begin each source with the target's token.
"""

import json
import logging
import os
import shutil

import torch
from safetensors.torch import load_file
from transformers import AutoConfig, AutoTokenizer, GenerationConfig, MarianMTModel, MarianTokenizer

from ..checkpoints import check_output_dir, copy_tokenizer_files, read_config
from ..configuration import TransformerMTConfig
from ..modeling import TransformerMTForConditionalGeneration
from ..tags import source_languages
from ..tokenization import tokenizer_fingerprint
from .marian_tokenizer import fast_marian_tokenizer


logger = logging.getLogger(__name__)


# Marian's sinusoid tables are stored as weights; ours are derived from the config.
_POSITION_TABLES = ("model.encoder.embed_positions.weight", "model.decoder.embed_positions.weight")
_RENAMES = {
    "model.encoder.embed_tokens.": "model.encoder.embeddings.embed_tokens.",
    "model.decoder.embed_tokens.": "model.decoder.embeddings.embed_tokens.",
}
_MODEL_FILES = (
    "config.json",
    "model.safetensors",
    "pytorch_model.bin",
    "model.safetensors.index.json",
    "pytorch_model.bin.index.json",
    "tf_model.h5",
    "flax_model.msgpack",
)
# MarianTokenizer's own files, which a converted directory with the fast tokenizer does not keep.
_TOKENIZER_FILES = (
    "source.spm",
    "target.spm",
    "vocab.json",
    "target_vocab.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
)


def marian_to_transformer_mt_config(
    marian, source_lang: str | None = None, target_lang: str | None = None
) -> TransformerMTConfig:
    """The TransformerMTConfig that computes what the given MarianConfig computes, with the languages given (else
    the Marian config's, if it names them)."""
    return TransformerMTConfig(
        vocab_size=marian.vocab_size,
        decoder_vocab_size=marian.decoder_vocab_size,
        share_encoder_decoder_embeddings=marian.share_encoder_decoder_embeddings,
        d_model=marian.d_model,
        encoder_layers=marian.encoder_layers,
        decoder_layers=marian.decoder_layers,
        encoder_attention_heads=marian.encoder_attention_heads,
        decoder_attention_heads=marian.decoder_attention_heads,
        encoder_ffn_dim=marian.encoder_ffn_dim,
        decoder_ffn_dim=marian.decoder_ffn_dim,
        activation_function=marian.activation_function,
        dropout=marian.dropout,
        attention_dropout=marian.attention_dropout,
        activation_dropout=marian.activation_dropout,
        max_position_embeddings=marian.max_position_embeddings,
        position_embedding_type="sinusoidal",
        sinusoidal_layout="concatenated",
        type_vocab_size=0,
        scale_embedding=marian.scale_embedding,
        layernorm_embedding=False,
        normalize_before=False,
        layer_norm_eps=1e-5,  # torch's nn.LayerNorm default, which Marian's layers use
        init_std=marian.init_std,
        tie_word_embeddings=marian.tie_word_embeddings,
        use_final_logits_bias=True,
        pad_token_id=marian.pad_token_id,
        bos_token_id=marian.bos_token_id,
        eos_token_id=marian.eos_token_id,
        decoder_start_token_id=marian.decoder_start_token_id,
        forced_eos_token_id=marian.forced_eos_token_id,
        source_lang=source_lang or getattr(marian, "source_lang", None),
        target_lang=target_lang or getattr(marian, "target_lang", None),
    )


def convert_marian_state_dict(
    marian_config, state_dict: dict, source_lang: str | None = None, target_lang: str | None = None
) -> TransformerMTForConditionalGeneration:
    """A TransformerMTForConditionalGeneration holding a Marian state dict (as saved, or of a live model)."""
    model = TransformerMTForConditionalGeneration(
        marian_to_transformer_mt_config(marian_config, source_lang, target_lang)
    )
    renamed = {_rename(key): tensor for key, tensor in state_dict.items() if key not in _POSITION_TABLES}
    # Marian has `model.shared` only when the vocabularies are shared; ours always holds the source table there.
    source_table = renamed.pop("model.encoder.embeddings.embed_tokens.weight", None)
    if source_table is not None:
        renamed.setdefault("model.shared.weight", source_table)
    tied = model.all_tied_weights_keys  # {alias: source}, e.g. lm_head.weight -> model.shared.weight
    renamed = {key: tensor for key, tensor in renamed.items() if key not in tied}
    expected = {key: tensor for key, tensor in model.state_dict().items() if key not in tied}
    missing, unexpected = sorted(expected.keys() - renamed.keys()), sorted(renamed.keys() - expected.keys())
    if missing or unexpected:
        raise ValueError(
            f"The Marian checkpoint does not match a TransformerMT model: missing weights {missing}, "
            f"unexpected weights {unexpected}."
        )
    for key, tensor in renamed.items():
        if expected[key].shape != tensor.shape:
            raise ValueError(
                f"Weight {key} has shape {tuple(tensor.shape)} but the config implies {tuple(expected[key].shape)} "
                "(vocabulary or width mismatch between config.json and the weights)."
            )
    model.load_state_dict(renamed, strict=False)
    model.tie_weights()
    return model.eval()


def convert_marian_model(
    marian: MarianMTModel, source_lang: str | None = None, target_lang: str | None = None
) -> TransformerMTForConditionalGeneration:
    """A TransformerMTForConditionalGeneration computing what the live `marian` model computes."""
    model = convert_marian_state_dict(marian.config, marian.state_dict(), source_lang, target_lang)
    model.generation_config = GenerationConfig.from_dict(marian.generation_config.to_dict())
    return model


def _rename(key: str) -> str:
    for old, new in _RENAMES.items():
        if key.startswith(old):
            return new + key[len(old) :]
    return key


def _load_weights(marian_dir: str) -> dict:
    safetensors_file = os.path.join(marian_dir, "model.safetensors")
    if os.path.isfile(safetensors_file):
        return load_file(safetensors_file)
    bin_file = os.path.join(marian_dir, "pytorch_model.bin")
    if os.path.isfile(bin_file):
        return torch.load(bin_file, map_location="cpu", weights_only=True)
    raise FileNotFoundError(f"No weights in {marian_dir!r}: expected model.safetensors or pytorch_model.bin.")


def convert_marian(
    marian_dir: str,
    output_dir: str,
    overwrite: bool = False,
    source_lang: str | None = None,
    target_lang: str | None = None,
) -> TransformerMTForConditionalGeneration:
    """Convert the Marian checkpoint in `marian_dir` and save it, with its tokenizer files, to `output_dir`.

    The config records `source_lang` and `target_lang` (translation splits its input into sentences by the first):
    those given, else those of the Marian config, else of its tokenizer config (MarianTokenizer keeps them there).
    """
    read_config(marian_dir, "marian", "Marian")
    config = AutoConfig.from_pretrained(marian_dir)
    _check_vocabulary(marian_dir, config)
    check_output_dir(output_dir, overwrite)

    tokenizer_config = {}
    if os.path.isfile(os.path.join(marian_dir, "tokenizer_config.json")):
        with open(os.path.join(marian_dir, "tokenizer_config.json"), encoding="utf-8") as f:
            tokenizer_config = json.load(f)
    languages = [
        given or getattr(config, name, None) or tokenizer_config.get(name)
        for name, given in (("source_lang", source_lang), ("target_lang", target_lang))
    ]
    model = convert_marian_state_dict(config, _load_weights(marian_dir), *languages)
    if os.path.isfile(os.path.join(marian_dir, "generation_config.json")):
        model.generation_config = GenerationConfig.from_pretrained(marian_dir)
    else:
        model.generation_config = GenerationConfig.from_model_config(config)
    tokenizer = save_tokenizer(marian_dir, output_dir)
    model.config.tokenizer_fingerprint = tokenizer_fingerprint(tokenizer)
    model.config.source_language_tokens = bool(source_languages(tokenizer))
    model.save_pretrained(output_dir)
    return model


def save_tokenizer(marian_dir: str, output_dir: str):
    """Write the tokenizer of the converted model, with every file of `marian_dir` but the model's own (its
    generation config, README, ...), and return it: the fast tokenizer with MarianTokenizer's ids
    (`marian_tokenizer`), else, where the files allow none (named in a warning), MarianTokenizer's files as they
    are."""
    others = [name for name in os.listdir(marian_dir) if name not in _MODEL_FILES]
    slow = AutoTokenizer.from_pretrained(marian_dir)
    try:
        if not isinstance(slow, MarianTokenizer):
            raise ValueError(f"its tokenizer is a {type(slow).__name__}, not a MarianTokenizer")
        tokenizer = fast_marian_tokenizer(slow)
    except ValueError as error:
        logger.warning(
            f"{marian_dir}: {error}. The converted model keeps MarianTokenizer, which gives no character offsets "
            "(no word alignments, span repair or inline markup placement)."
        )
        copy_tokenizer_files(marian_dir, output_dir, others, "MarianTokenizer")
        return AutoTokenizer.from_pretrained(output_dir)
    os.makedirs(output_dir, exist_ok=True)
    for name in others:
        if name not in _TOKENIZER_FILES and os.path.isfile(os.path.join(marian_dir, name)):
            shutil.copy2(os.path.join(marian_dir, name), os.path.join(output_dir, name))
    tokenizer.save_pretrained(output_dir)
    return tokenizer


CONVERTED_FOR_RUN = "converted-from-marian"  # where a run converts a MarianMT starting point, in its output_dir


def converted_for_run(model_name_or_path: str | None, training_args, source_lang: str, target_lang: str):
    """Fine-tuning an Opus-MT (MarianMT) checkpoint in one step: a `--model_name_or_path` naming a MarianMT
    directory is converted (weights, tokenizer and generation config kept; the data's languages recorded) into
    output_dir/converted-from-marian, and that path is returned for the run to start from, as from any TransformerMT
    model. The main process converts; the others wait and read it. Anything else is returned as it is."""
    config_file = os.path.join(model_name_or_path, "config.json") if model_name_or_path else ""
    if not os.path.isfile(config_file) or AutoConfig.from_pretrained(model_name_or_path).model_type != "marian":
        return model_name_or_path
    converted = os.path.join(training_args.output_dir, CONVERTED_FOR_RUN)
    with training_args.main_process_first(desc="MarianMT conversion"):
        if training_args.process_index == 0 and not os.path.isfile(os.path.join(converted, "config.json")):
            convert_marian(model_name_or_path, converted, source_lang=source_lang, target_lang=target_lang)
            logger.warning(
                f"{model_name_or_path} is a MarianMT checkpoint: converted to TransformerMT in "
                f"{converted} (the same logits), which this run fine-tunes."
            )
    return converted


def _check_vocabulary(marian_dir: str, config) -> None:
    """The tokenizer's vocabulary must fit the model's embedding tables."""
    for file_name, size, field in (
        ("vocab.json", config.vocab_size, "vocab_size"),
        ("target_vocab.json", config.decoder_vocab_size, "decoder_vocab_size"),
    ):
        path = os.path.join(marian_dir, file_name)
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                n_tokens = len(json.load(f))
            if n_tokens > size:
                raise ValueError(f"{file_name} has {n_tokens} tokens but config.json's {field} is {size}.")
