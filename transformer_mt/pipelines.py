"""Translating text: `pipeline("translation")` for seq2seq models, and `translate()` for lists of sentences.

transformers 5 removed the "translation" task (it points users to chat models). A translation model package
needs it, so `import transformer_mt` registers this small pipeline under that name: text in, `generate()`, text out,
with the model's generation config (beam size, length) unless the call overrides it.
"""

import logging
from collections.abc import Iterable, Iterator

import torch
from transformers import AutoModelForSeq2SeqLM, Pipeline
from transformers.pipelines import PIPELINE_REGISTRY, REMOVED_TASKS

from .checkpoints import check_tokenizer_matches


logger = logging.getLogger(__name__)


class TranslationPipeline(Pipeline):
    """Translate strings with an encoder-decoder model: `[{"translation_text": ...}]` per input."""

    _load_tokenizer = True
    _load_processor = False
    _load_image_processor = False
    _load_feature_extractor = False
    _pipeline_calls_generate = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        check_tokenizer_matches(self.model.config, self.tokenizer, "pipeline('translation')")

    def __call__(self, inputs, **kwargs):
        """One `{"translation_text": ...}` per string (a list of them with `num_return_sequences` > 1)."""
        results = super().__call__(inputs, **kwargs)
        if isinstance(inputs, str):
            return results
        return [result[0] if len(result) == 1 else result for result in results]

    def _sanitize_parameters(self, max_length=None, truncation=None, **generate_kwargs):
        preprocess_params = {} if truncation is None else {"truncation": truncation}
        if max_length is not None:
            generate_kwargs["max_length"] = max_length
        return preprocess_params, {"generate_kwargs": generate_kwargs}, {}

    def preprocess(self, text, truncation=False):
        if not isinstance(text, str):
            raise ValueError(f"TranslationPipeline translates strings, got {type(text).__name__}: {text!r}")
        return self.tokenizer(text, return_tensors="pt", truncation=truncation)

    def _forward(self, model_inputs, generate_kwargs=None):
        generate_kwargs = self._prepare_generate_kwargs(generate_kwargs or {})
        return {"output_ids": self.model.generate(**model_inputs, **generate_kwargs)}

    def postprocess(self, model_outputs):
        texts = self.tokenizer.batch_decode(model_outputs["output_ids"], skip_special_tokens=True)
        return [{"translation_text": text.strip()} for text in texts]


def register_translation_pipeline() -> None:
    REMOVED_TASKS.pop("translation", None)
    PIPELINE_REGISTRY.supported_tasks.pop("translation", None)  # re-registering would only log a warning
    PIPELINE_REGISTRY.register_pipeline("translation", TranslationPipeline, pt_model=AutoModelForSeq2SeqLM)


def translate(model, tokenizer, texts: list[str], num_beams: int | None = None, batch_size: int = 16,
              max_new_tokens: int | None = None) -> list[str]:
    """Translate `texts` in batches; beam size and length default to the model's generation config.

    A text longer than the tokenizer's `model_max_length` (which training sets to the model's
    `max_position_embeddings`) is cut there, with a warning naming it.
    """
    settings = {k: v for k, v in {"num_beams": num_beams, "max_new_tokens": max_new_tokens}.items() if v is not None}
    limit = tokenizer.model_max_length if tokenizer.model_max_length < 1_000_000 else None  # else: "no limit"
    model.eval()
    translations = []
    for start in range(0, len(texts), batch_size):
        batch_texts = texts[start : start + batch_size]
        if limit is not None:
            for offset, ids in enumerate(tokenizer(batch_texts)["input_ids"]):
                if len(ids) > limit:
                    logger.warning(f"Text {start + offset + 1} has {len(ids)} tokens; only its first {limit} are "
                                   "translated (the model's limit, tokenizer.model_max_length).")
        batch = tokenizer(batch_texts, return_tensors="pt", padding=True, truncation=limit is not None,
                          max_length=limit).to(model.device)
        with torch.inference_mode():
            ids = model.generate(**batch, **settings)
        translations.extend(t.strip() for t in tokenizer.batch_decode(ids, skip_special_tokens=True))
    return translations


def read_lines(stream: Iterable[bytes], name: str) -> Iterator[str]:
    """The lines of a UTF-8 byte stream, without line ends; a line that is not UTF-8 is an error naming it."""
    for number, raw in enumerate(stream, 1):
        try:
            line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as error:
            raise ValueError(f"{name}, line {number}: not valid UTF-8 ({error.reason} at byte {error.start})") from None
        yield line.rstrip("\r\n")
