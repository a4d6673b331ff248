"""transformer-mt: the "Attention Is All You Need" encoder-decoder as a Hugging Face transformers model.

Importing the package registers the config, the models, the tokenizer and the "translation" pipeline with
transformers' Auto classes. The model is `configuration`, `modeling` and `tokenization`; the library around it lives
in modules named after what they do, each on a floor of docs/development.md's table (it imports only from below):

1. leaf helpers: `version`, `machine` (the matmul figure beside wall times), `presets`, `metrics` (BLEU/chrF as an
   `evaluate` module), `data`, `checkpoints`, `constraints` (prefixes, forbidden words), `tags` (language tags),
   `generation` (compiled generation), `diagnostics` (the alignment probe), `lengths` (length bounds), `text` (the
   pure text transforms: sentences, case folding, protected spans, glossary terms, HTML runs and inline markup,
   formal and informal address, each language's rules as one table: `text.languages`);
2. `hub` (remote code, model card, push), `plots` (a training run's plots), `quality` (confidence, guards, a
   sentence's flags), `options` (`TranslationOptions`, how to translate);
3. `bridges` (Marian, BERT, CTranslate2); 4. `training` (the Seq2SeqTrainer entry point, token batches, averaging),
   `installer` (models installed from the package's index, verified file by file; Opus-MT through the bridge);
5. `engines` (the `Engine` protocol, generate() and CTranslate2, the loader, what every engine shares, word
   alignments, pair scores); 6. `trust` (the trust step: confidence, guards and their re-decode, abstaining, a
   glossary's terms followed; a subpackage by concern);
7. `steps` (the steps around the engine: case, spans, markup alignments, then the trust step; a subpackage:
   the record and the steps, the pipeline and the `Decoder`, two models' decode through English);
8. `translation` (the batch API and the stream);
9. `evaluation` (scores of saved models), `calibration` (a model's confidence fitted), `documents` (files in
   their formats: .po, XLIFF, HTML, Markdown, subtitles, string files, office documents), `pipelines`
   (`pipeline("translation")`), `recipes` (the main job);
10. `serving` (the server, a folder of models loaded on demand, pairs served through English, a fine-tuned
    model's promotion and the switch of what a server serves, DeepL's API beside LibreTranslate's, keys with
    quotas, the server behind a reverse proxy);
11. `commands` (the translate, score, serve and models commands and what every command shares).

Research lives apart in `experiments` (studies, the recipe search, benchmarks, the GPU check), which the library
never imports.
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
from .version import __version__ as __version__


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
