"""transformer-mt: the "Attention Is All You Need" encoder-decoder as a Hugging Face transformers model.

Importing the package registers the config, the models, the tokenizer and the "translation" pipeline with
transformers' Auto classes. The model is `configuration`, `modeling` and `tokenization`; the library around it lives
in modules named after what they do:

- training: `training` (the Seq2SeqTrainer entry point), `presets` (named training defaults), `data` (parallel
  text), `batching` (token batches), `checkpoints` (checkpoint directories), `averaging` (checkpoint averaging),
  `diagnostics` (the alignment probe), `recipes` (the main job), `plots`;
- translating: `translation` (the batch API and the file stream), `sentences` (sentence splitting), `pipelines`
  (`pipeline("translation")`), `generation` (compiled generation), `translate_command` (the translate command);
- scoring: `metrics` (BLEU/chrF as an `evaluate` module), `evaluation` (sacreBLEU scores with their signatures);
- studies and speed: `position_study`, `recipe_search`, `benchmarks` (against MarianMT and CTranslate2, batches,
  positions), `gpu_check` (the device check), `machine` (the machine a number was measured on);
- sharing: `hub` (remote code, model card, push), `bridges` (Marian, BERT, CTranslate2).

`cli` is what the commands in scripts/ share.
"""

from transformers import AutoConfig, AutoModel, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

from .configuration import POSITION_EMBEDDING_TYPES, TransformerMTConfig
from .modeling import (
    TransformerMTForCausalLM,
    TransformerMTForConditionalGeneration,
    TransformerMTModel,
    TransformerMTPreTrainedModel,
)
from .pipelines import TranslationPipeline, register_translation_pipeline
from .tokenization import TransformerMTTokenizerFast, train_tokenizer
from .translation import translate


__version__ = "0.3.0"

AutoConfig.register(TransformerMTConfig.model_type, TransformerMTConfig, exist_ok=True)
AutoModel.register(TransformerMTConfig, TransformerMTModel, exist_ok=True)
AutoModelForSeq2SeqLM.register(TransformerMTConfig, TransformerMTForConditionalGeneration, exist_ok=True)
AutoModelForCausalLM.register(TransformerMTConfig, TransformerMTForCausalLM, exist_ok=True)
AutoTokenizer.register(TransformerMTConfig, fast_tokenizer_class=TransformerMTTokenizerFast, exist_ok=True)
register_translation_pipeline()

__all__ = [
    "POSITION_EMBEDDING_TYPES",
    "TransformerMTConfig",
    "TransformerMTForCausalLM",
    "TransformerMTForConditionalGeneration",
    "TransformerMTModel",
    "TransformerMTPreTrainedModel",
    "TransformerMTTokenizerFast",
    "TranslationPipeline",
    "train_tokenizer",
    "translate",
]
