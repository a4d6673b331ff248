from .modeling_transformer_mt import (
    TransformerMTDecoder,
    TransformerMTEncoder,
    TransformerMTForCausalLM,
    TransformerMTForConditionalGeneration,
    TransformerMTModel,
    TransformerMTPreTrainedModel,
)


__all__ = [
    "TransformerMTDecoder",
    "TransformerMTEncoder",
    "TransformerMTForCausalLM",
    "TransformerMTForConditionalGeneration",
    "TransformerMTModel",
    "TransformerMTPreTrainedModel",
]
