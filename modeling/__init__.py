from .modeling_transformer_mt import (
    TransformerMTDecoder,
    TransformerMTEncoder,
    TransformerMTForConditionalGeneration,
    TransformerMTModel,
    TransformerMTPreTrainedModel,
)


__all__ = [
    "TransformerMTDecoder",
    "TransformerMTEncoder",
    "TransformerMTForConditionalGeneration",
    "TransformerMTModel",
    "TransformerMTPreTrainedModel",
]
