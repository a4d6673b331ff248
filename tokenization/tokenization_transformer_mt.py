"""English-German subword tokenizer for the TransformerMT encoder-decoder.

By default a byte-level BPE, as in GPT-2/RoBERTa, trained with the `tokenizers` library on the source and target
texts together, so that encoder, decoder and the (shared) output projection use one vocabulary:

* normalization: Unicode NFC, so that "ü" typed as one code point and as "u" + combining diaeresis get the same ids;
* pre-tokenization: GPT-2's byte-level split; every UTF-8 byte has a token of its own, so no input is ever mapped
  to `<unk>` (Chinese, emoji, any character never seen in training) and `decode(encode(x)) == x` for NFC text `x`;
* post-processing: `</s>` ends every sequence; a pair `A </s> B </s>` gets `token_type_ids` 0 for `A </s>` and
  1 for `B </s>`, the segments of the model's BERT-style embeddings.

`tokenizer_type="unigram"` trains a SentencePiece-style Unigram model instead (Kudo 2018; `tokenizers`'
UnigramTrainer, Metaspace pre-tokenizer: words keep a leading "▁"); characters never seen in training become
`<unk>`, as in SentencePiece without byte fallback.

Separate source and target vocabularies (Marian's `separate_vocabs`): `train_tokenizer(..., target_texts=...)`
trains a second vocabulary on the target side, saved beside the first as `target_tokenizer.json`. Source text
(`tokenizer(text)`) is encoded with the source vocabulary, target text (`tokenizer(text_target=...)`) and
`decode`/`batch_decode` (what `generate()` returns is target ids) with the target one; `target_tokenizer` is the
target side as a tokenizer of its own.

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
TOKENIZER_TYPES = ("bpe", "unigram")
TARGET_TOKENIZER_FILE = "target_tokenizer.json"  # the target vocabulary, when source and target have their own


class TransformerMTTokenizerFast(PreTrainedTokenizerFast):
    """Fast tokenizer of TransformerMT (byte-level BPE or Unigram, one vocabulary or two); build one with
    `train_tokenizer`."""

    vocab_files_names = {"tokenizer_file": "tokenizer.json", "target_tokenizer_file": TARGET_TOKENIZER_FILE}
    model_input_names = ["input_ids", "token_type_ids", "attention_mask"]
    padding_side = "right"

    def __init__(
        self,
        *args,
        pad_token=PAD_TOKEN,
        bos_token=BOS_TOKEN,
        eos_token=EOS_TOKEN,
        unk_token=UNK_TOKEN,
        target_tokenizer_file=None,
        target_tokenizer_object=None,
        separate_vocabs=False,
        **kwargs,
    ):
        # Byte-level decoding already restores the exact spacing; the English-centric clean-up ("a ." -> "a.")
        # would break round trips (transformers 5 ignores it for BPE anyway, with a warning).
        kwargs.setdefault("clean_up_tokenization_spaces", False)
        if target_tokenizer_object is None and target_tokenizer_file is not None:
            target_tokenizer_object = Tokenizer.from_file(target_tokenizer_file)
        if separate_vocabs and target_tokenizer_object is None:
            raise ValueError(
                f"This tokenizer has separate source and target vocabularies, but its target vocabulary "
                f"({TARGET_TOKENIZER_FILE}) is missing: copy it beside tokenizer.json. Without it, "
                "target text would be read with the source vocabulary."
            )
        self.target_tokenizer = None
        # Saved in tokenizer_config.json, so that a missing target_tokenizer.json is an error, not a silent fallback.
        kwargs["separate_vocabs"] = target_tokenizer_object is not None
        super().__init__(
            *args, pad_token=pad_token, bos_token=bos_token, eos_token=eos_token, unk_token=unk_token, **kwargs
        )
        if target_tokenizer_object is not None:
            self.target_tokenizer = TransformerMTTokenizerFast(
                tokenizer_object=target_tokenizer_object,
                model_max_length=self.model_max_length,
                clean_up_tokenization_spaces=self.clean_up_tokenization_spaces,
                pad_token=pad_token,  # the same special tokens on both sides (an imported Marian model has no bos)
                bos_token=bos_token,
                eos_token=eos_token,
                unk_token=unk_token,
            )
            for name in ("pad_token", "bos_token", "eos_token", "unk_token"):
                source_id, target_id = getattr(self, name + "_id"), getattr(self.target_tokenizer, name + "_id")
                if source_id != target_id:
                    raise ValueError(
                        f"The target vocabulary gives {name} id {target_id}, the source vocabulary "
                        f"{source_id}: both must give the special tokens the ids the model uses."
                    )
        self._source_backend = self._tokenizer

    @property
    def separate_vocabs(self) -> bool:
        """Whether source and target have vocabularies of their own (`target_tokenizer`)."""
        return self.target_tokenizer is not None

    @property
    def model_max_length(self) -> int:
        return self._model_max_length

    @model_max_length.setter
    def model_max_length(self, value: int) -> None:  # one limit for both sides
        self._model_max_length = value
        if getattr(self, "target_tokenizer", None) is not None:
            self.target_tokenizer.model_max_length = value

    def __call__(self, *args, **kwargs):
        try:
            return super().__call__(*args, **kwargs)
        finally:  # transformers switches back only when encoding succeeds: never stay in target mode
            self._switch_to_input_mode()

    # transformers' __call__ switches to "target mode" around `text_target`: encode it with the target vocabulary.
    def _switch_to_target_mode(self):
        if self.target_tokenizer is not None:
            self._tokenizer = self.target_tokenizer.backend_tokenizer

    def _switch_to_input_mode(self):
        self._tokenizer = self._source_backend

    def _decode(
        self,
        token_ids,
        skip_special_tokens=False,
        clean_up_tokenization_spaces=None,
        use_source_tokenizer=False,
        **kwargs,
    ):
        # What is decoded is what the decoder produced: target ids (source ids with use_source_tokenizer=True).
        if self.target_tokenizer is not None and not use_source_tokenizer:
            return self.target_tokenizer._decode(
                token_ids,
                skip_special_tokens=skip_special_tokens,
                clean_up_tokenization_spaces=clean_up_tokenization_spaces,
                **kwargs,
            )
        return super()._decode(
            token_ids,
            skip_special_tokens=skip_special_tokens,
            clean_up_tokenization_spaces=clean_up_tokenization_spaces,
            **kwargs,
        )

    def _save_pretrained(self, save_directory, file_names, legacy_format=None, filename_prefix=None):
        file_names = super()._save_pretrained(
            save_directory, file_names, legacy_format=legacy_format, filename_prefix=filename_prefix
        )
        if self.target_tokenizer is None:
            return file_names
        target_file = os.path.join(
            save_directory, (filename_prefix + "-" if filename_prefix else "") + TARGET_TOKENIZER_FILE
        )
        self.target_tokenizer.backend_tokenizer.save(target_file)
        return file_names + (target_file,)

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


def build_backend_tokenizer(tokenizer_type: str = "bpe") -> Tokenizer:
    """Return the untrained `tokenizers` pipeline: NFC, byte-level BPE (or Metaspace Unigram), `</s>` template."""
    if tokenizer_type == "bpe":
        tokenizer = Tokenizer(models.BPE(unk_token=UNK_TOKEN))
        # No prefix space: it would come back as a leading space in `decode`. The price is that a sentence's first
        # word is segmented without the "Ġ" (space) marker, as in GPT-2.
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        tokenizer.decoder = decoders.ByteLevel()
    elif tokenizer_type == "unigram":
        tokenizer = Tokenizer(models.Unigram())
        tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()  # "▁" marks a space, one is prepended (SentencePiece)
        tokenizer.decoder = decoders.Metaspace()
    else:
        raise ValueError(f"`tokenizer_type` must be one of {TOKENIZER_TYPES}, got {tokenizer_type!r}.")
    tokenizer.normalizer = normalizers.NFC()
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
    tokenizer_type: str = "bpe",
    target_texts: Iterable[str] | None = None,
    target_vocab_size: int | None = None,
) -> TransformerMTTokenizerFast:
    """
    Train one joint vocabulary on source and target texts together (or, given `target_texts`, one per side).

    Algorithm: `tokenizer_type="bpe"` (default): BPE over UTF-8 bytes (GPT-2's byte-level pre-tokenizer and decoder)
    after Unicode NFC normalization. Unknown characters: none exist; all 256 bytes are in the vocabulary, so a
    character never seen in training is encoded as its UTF-8 bytes and decoded back exactly; `<unk>` is kept only
    for the model config's id 3. Round trip: `tokenizer.decode(tokenizer.encode(x), skip_special_tokens=True) == x`
    for every NFC string `x`. `tokenizer_type="unigram"`: a SentencePiece-style Unigram model over NFC text with the
    Metaspace pre-tokenizer; a character never seen in training is `<unk>`, and runs of whitespace decode as one
    space.

    Args:
        texts: Any iterable of strings, e.g. the English and the German side of a parallel corpus chained together;
            only the source side when `target_texts` is given. It is consumed once.
        vocab_size: Size of the vocabulary including the 4 special tokens (and, for BPE, the 256 byte tokens); must
            be an integer >= 261. A small corpus may yield fewer tokens.
        min_frequency: BPE: minimum count of a pair to be merged; an integer >= 1 (Unigram has no such threshold).
        model_max_length: Longest sequence the model accepts, used by `truncation=True`
            (the config's `max_position_embeddings`).
        show_progress: Show the `tokenizers` progress bar.
        tokenizer_type: "bpe" or "unigram".
        target_texts: The target side, for separate source and target vocabularies (`separate_vocabs`).
        target_vocab_size: Size of the target vocabulary (default `vocab_size`); only with `target_texts`.

    Returns:
        A `TransformerMTTokenizerFast` with `<pad>`=0, `<s>`=1, `</s>`=2, `<unk>`=3 (in both vocabularies).
    """
    _check_int("vocab_size", vocab_size, MIN_VOCAB_SIZE)
    _check_int("min_frequency", min_frequency, 1)
    _check_int("model_max_length", model_max_length, 1)
    if tokenizer_type not in TOKENIZER_TYPES:
        raise ValueError(f"`tokenizer_type` must be one of {TOKENIZER_TYPES}, got {tokenizer_type!r}.")
    if target_texts is None and target_vocab_size is not None:
        raise ValueError("`target_vocab_size` sizes the target vocabulary trained on `target_texts`; pass both.")
    source = _train_backend(texts, "texts", vocab_size, min_frequency, tokenizer_type, show_progress)
    target = None
    if target_texts is not None:
        target_vocab_size = vocab_size if target_vocab_size is None else target_vocab_size
        _check_int("target_vocab_size", target_vocab_size, MIN_VOCAB_SIZE)
        target = _train_backend(
            target_texts, "target_texts", target_vocab_size, min_frequency, tokenizer_type, show_progress
        )
    return TransformerMTTokenizerFast(
        tokenizer_object=source, target_tokenizer_object=target, model_max_length=model_max_length
    )


def _train_backend(
    texts, name: str, vocab_size: int, min_frequency: int, tokenizer_type: str, show_progress: bool
) -> Tokenizer:
    # A lone string is iterable too; the trainer would then silently learn from its characters as separate texts.
    if isinstance(texts, (str, bytes)) or not isinstance(texts, Iterable):
        raise TypeError(f"`{name}` must be an iterable of strings, got {type(texts).__name__}.")

    words = 0

    def counted(texts):
        nonlocal words
        for text in texts:
            words += bool(text and text.strip())
            yield text

    tokenizer = build_backend_tokenizer(tokenizer_type)
    if tokenizer_type == "bpe":
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size,
            min_frequency=min_frequency,
            special_tokens=SPECIAL_TOKENS,
            # All bytes, seen or not, so nothing is ever unknown.
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=show_progress,
        )
    else:
        trainer = trainers.UnigramTrainer(
            vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, unk_token=UNK_TOKEN, show_progress=show_progress
        )
    tokenizer.train_from_iterator(counted(texts), trainer=trainer)
    if not words:
        raise ValueError(
            f"`{name}` holds no non-empty text: a tokenizer trained on nothing knows no words. "
            "Pass the training sentences."
        )
    return tokenizer


def target_side(tokenizer):
    """The tokenizer of the target vocabulary: `target_tokenizer` when source and target have their own, else the
    tokenizer itself (any tokenizer class)."""
    return getattr(tokenizer, "target_tokenizer", None) or tokenizer


def tokenizer_type_of(tokenizer) -> str:
    """ "bpe" or "unigram" (TOKENIZER_TYPES) for a fast tokenizer of those models, else the name of its model (or of
    its class, for a Python tokenizer such as Marian's SentencePiece one)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return type(tokenizer).__name__
    name = type(backend.model).__name__
    return name.lower() if name.lower() in TOKENIZER_TYPES else name


def tokenizer_fingerprint(tokenizer) -> str:
    """A short hash of a tokenizer's vocabulary (every token string with its id), any tokenizer class.

    Saved in a model's config, it tells whether a tokenizer found next to the model is the one it was trained with:
    two tokenizers of the same size but different vocabularies give different fingerprints. With separate
    vocabularies (`target_tokenizer`) it covers both.
    """
    vocabulary = sorted(tokenizer.get_vocab().items(), key=lambda item: (item[1], item[0]))
    target = getattr(tokenizer, "target_tokenizer", None)
    if target is not None:  # separate vocabularies: both; a shared vocabulary's fingerprint is unchanged
        vocabulary = {
            "source": vocabulary,
            "target": sorted(target.get_vocab().items(), key=lambda item: (item[1], item[0])),
        }
    return hashlib.sha256(json.dumps(vocabulary, ensure_ascii=False).encode("utf-8")).hexdigest()[:16]


__all__ = [
    "TOKENIZER_TYPES",
    "TransformerMTTokenizerFast",
    "target_side",
    "tokenizer_fingerprint",
    "tokenizer_type_of",
    "train_tokenizer",
]
