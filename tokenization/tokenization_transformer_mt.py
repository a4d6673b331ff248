"""Joint English-German subword tokenizer for the TransformerMT encoder-decoder.

The tokenizer is a byte-level BPE, as in GPT-2/RoBERTa, trained with the `tokenizers` library on the source and
target texts together, so that encoder, decoder and the (shared) output projection use one vocabulary:

* normalization: Unicode NFC, so that "ü" typed as one code point and as "u" + combining diaeresis get the same ids;
* pre-tokenization: GPT-2's byte-level split; every UTF-8 byte has a token of its own, so no input is ever mapped
  to `<unk>` (Chinese, emoji, any character never seen in training) and `decode(encode(x)) == x` for NFC text `x`;
* post-processing: `</s>` ends every sequence; a pair `A </s> B </s>` gets `token_type_ids` 0 for `A </s>` and
  1 for `B </s>`, the segments of the model's BERT-style embeddings.

This file imports only `transformers`, `tokenizers` and the standard library because it is shipped verbatim as
remote code next to the checkpoints.

Example:

```python
>>> tokenizer = train_tokenizer(english_lines + german_lines, vocab_size=8000)
>>> batch = tokenizer(["Good morning!"], text_target=["Guten Morgen!"], padding=True, return_tensors="pt")
>>> tokenizer.save_pretrained("checkpoint")
```
"""

import hashlib
import json
import os
from collections.abc import Iterable

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast


PAD_TOKEN, BOS_TOKEN, EOS_TOKEN, UNK_TOKEN = "<pad>", "<s>", "</s>", "<unk>"
# Training puts the special tokens first, in this order, so their ids are the model config's defaults:
# pad_token_id=0, bos_token_id=decoder_start_token_id=1, eos_token_id=2 (and unk 3).
SPECIAL_TOKENS = [PAD_TOKEN, BOS_TOKEN, EOS_TOKEN, UNK_TOKEN]
BYTE_ALPHABET_SIZE = len(pre_tokenizers.ByteLevel.alphabet())  # 256
MIN_VOCAB_SIZE = len(SPECIAL_TOKENS) + BYTE_ALPHABET_SIZE + 1  # at least one merge


class TransformerMTTokenizerFast(PreTrainedTokenizerFast):
    """Fast byte-level BPE tokenizer of TransformerMT; build one with `train_tokenizer`."""

    vocab_files_names = {"tokenizer_file": "tokenizer.json"}
    model_input_names = ["input_ids", "token_type_ids", "attention_mask"]
    padding_side = "right"

    def __init__(
        self,
        *args,
        pad_token=PAD_TOKEN,
        bos_token=BOS_TOKEN,
        eos_token=EOS_TOKEN,
        unk_token=UNK_TOKEN,
        **kwargs,
    ):
        # Byte-level decoding already restores the exact spacing; the English-centric clean-up ("a ." -> "a.")
        # would break round trips (transformers 5 ignores it for BPE anyway, with a warning).
        kwargs.setdefault("clean_up_tokenization_spaces", False)
        super().__init__(
            *args, pad_token=pad_token, bos_token=bos_token, eos_token=eos_token, unk_token=unk_token, **kwargs
        )

    @classmethod
    def convert_to_native_format(cls, trust_remote_code=False, **kwargs):
        # For subclasses that define `__init__`, transformers rebuilds a bare BPE from tokenizer.json's vocab and
        # merges, dropping the NFC normalizer and the byte-level pre-tokenizer and decoder. The whole pipeline is in
        # tokenizer.json, so let `__init__` load that file as it is.
        tokenizer_file = kwargs.get("tokenizer_file")
        if tokenizer_file is not None and os.path.isfile(tokenizer_file):
            return kwargs
        return super().convert_to_native_format(trust_remote_code=trust_remote_code, **kwargs)


def _check_int(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"`{name}` must be an integer >= {minimum}, got {value!r}.")


def build_backend_tokenizer() -> Tokenizer:
    """Return the untrained `tokenizers` pipeline: NFC, byte-level BPE, `</s>` template."""
    tokenizer = Tokenizer(models.BPE(unk_token=UNK_TOKEN))
    tokenizer.normalizer = normalizers.NFC()
    # No prefix space: it would come back as a leading space in `decode`. The price is that a sentence's first
    # word is segmented without the "Ġ" (space) marker, as in GPT-2.
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = decoders.ByteLevel()
    eos_id = SPECIAL_TOKENS.index(EOS_TOKEN)
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"$A:0 {EOS_TOKEN}:0",
        pair=f"$A:0 {EOS_TOKEN}:0 $B:1 {EOS_TOKEN}:1",
        special_tokens=[(EOS_TOKEN, eos_id)],
    )
    return tokenizer


def train_tokenizer(
    texts: Iterable[str],
    vocab_size: int = 8000,
    min_frequency: int = 2,
    model_max_length: int = 512,
    show_progress: bool = False,
) -> TransformerMTTokenizerFast:
    """
    Train one joint byte-level BPE vocabulary on source and target texts together.

    Algorithm: BPE over UTF-8 bytes (GPT-2's byte-level pre-tokenizer and decoder) after Unicode NFC normalization.
    Unknown characters: none exist; all 256 bytes are in the vocabulary, so a character never seen in training is
    encoded as its UTF-8 bytes and decoded back exactly; `<unk>` is kept only for the model config's id 3.
    Round trip: `tokenizer.decode(tokenizer.encode(x), skip_special_tokens=True) == x` for every NFC string `x`.

    Args:
        texts: Any iterable of strings, e.g. the English and the German side of a parallel corpus chained together.
            It is consumed once.
        vocab_size: Size of the vocabulary including the 4 special tokens and the 256 byte tokens; must be an
            integer >= 261. A small corpus may yield fewer tokens.
        min_frequency: Minimum count of a pair to be merged; an integer >= 1.
        model_max_length: Longest sequence the model accepts, used by `truncation=True`
            (the config's `max_position_embeddings`).
        show_progress: Show the `tokenizers` progress bar.

    Returns:
        A `TransformerMTTokenizerFast` with `<pad>`=0, `<s>`=1, `</s>`=2, `<unk>`=3.
    """
    _check_int("vocab_size", vocab_size, MIN_VOCAB_SIZE)
    _check_int("min_frequency", min_frequency, 1)
    _check_int("model_max_length", model_max_length, 1)
    # A lone string is iterable too; BPE would then silently learn from its characters as separate texts.
    if isinstance(texts, (str, bytes)) or not isinstance(texts, Iterable):
        raise TypeError(f"`texts` must be an iterable of strings, got {type(texts).__name__}.")

    words = 0

    def counted(texts):
        nonlocal words
        for text in texts:
            words += bool(text and text.strip())
            yield text

    tokenizer = build_backend_tokenizer()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=SPECIAL_TOKENS,
        # All bytes, seen or not, so nothing is ever unknown.
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=show_progress,
    )
    tokenizer.train_from_iterator(counted(texts), trainer=trainer)
    if not words:
        raise ValueError("`texts` holds no non-empty text: a tokenizer trained on nothing knows only single bytes. "
                         "Pass the training sentences (both languages).")
    return TransformerMTTokenizerFast(tokenizer_object=tokenizer, model_max_length=model_max_length)


def tokenizer_fingerprint(tokenizer) -> str:
    """A short hash of a tokenizer's vocabulary (every token string with its id), any tokenizer class.

    Saved in a model's config, it tells whether a tokenizer found next to the model is the one it was trained with:
    two tokenizers of the same size but different vocabularies give different fingerprints.
    """
    vocabulary = sorted(tokenizer.get_vocab().items(), key=lambda item: (item[1], item[0]))
    return hashlib.sha256(json.dumps(vocabulary, ensure_ascii=False).encode("utf-8")).hexdigest()[:16]


__all__ = ["TransformerMTTokenizerFast", "tokenizer_fingerprint", "train_tokenizer"]
