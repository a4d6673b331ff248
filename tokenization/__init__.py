"""English-German subword tokenizer of TransformerMT: byte-level BPE or Unigram, joint or separate vocabularies."""

from .tokenization_transformer_mt import (
    TOKENIZER_TYPES,
    TransformerMTTokenizerFast,
    target_side,
    tokenizer_fingerprint,
    tokenizer_type_of,
    train_tokenizer,
)


__all__ = [
    "TOKENIZER_TYPES",
    "TransformerMTTokenizerFast",
    "target_side",
    "tokenizer_fingerprint",
    "tokenizer_type_of",
    "train_tokenizer",
]
