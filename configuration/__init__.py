from .configuration_transformer_mt import TransformerMTConfig


__all__ = ["TransformerMTConfig"]
