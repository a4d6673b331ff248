from .configuration_transformer_mt import POSITION_EMBEDDING_TYPES, SINUSOIDAL_LAYOUTS, TransformerMTConfig


__all__ = ["POSITION_EMBEDDING_TYPES", "SINUSOIDAL_LAYOUTS", "TransformerMTConfig"]
