"""transformer-mt: the "Attention Is All You Need" encoder-decoder as a Hugging Face transformers model.

Importing the package registers the config and models with transformers' Auto classes.
"""

from transformers import AutoConfig, AutoModel, AutoModelForSeq2SeqLM, AutoTokenizer

from .configuration import TransformerMTConfig
from .modeling import (
    TransformerMTForConditionalGeneration,
    TransformerMTModel,
    TransformerMTPreTrainedModel,
)
from .pipelines import TranslationPipeline, register_translation_pipeline
from .tokenization import TransformerMTTokenizerFast, train_tokenizer


__version__ = "0.1.0"

AutoConfig.register(TransformerMTConfig.model_type, TransformerMTConfig, exist_ok=True)
AutoModel.register(TransformerMTConfig, TransformerMTModel, exist_ok=True)
AutoModelForSeq2SeqLM.register(TransformerMTConfig, TransformerMTForConditionalGeneration, exist_ok=True)
AutoTokenizer.register(TransformerMTConfig, fast_tokenizer_class=TransformerMTTokenizerFast, exist_ok=True)
register_translation_pipeline()

__all__ = [
    "TransformerMTConfig",
    "TransformerMTForConditionalGeneration",
    "TransformerMTModel",
    "TransformerMTPreTrainedModel",
    "TransformerMTTokenizerFast",
    "TranslationPipeline",
    "train_tokenizer",
]
