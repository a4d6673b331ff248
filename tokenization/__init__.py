"""Joint English-German byte-level BPE tokenizer of TransformerMT."""

from .tokenization_transformer_mt import TransformerMTTokenizerFast, train_tokenizer


__all__ = ["TransformerMTTokenizerFast", "train_tokenizer"]
