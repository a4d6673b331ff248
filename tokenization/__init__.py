"""Joint English-German byte-level BPE tokenizer of TransformerMT."""

from .tokenization_transformer_mt import TransformerMTTokenizerFast, tokenizer_fingerprint, train_tokenizer


__all__ = ["TransformerMTTokenizerFast", "tokenizer_fingerprint", "train_tokenizer"]
