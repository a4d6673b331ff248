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
        if "max_new_tokens" not in generate_kwargs and "max_length" not in generate_kwargs:
            generate_kwargs["max_length"] = length_budget(self.model, model_inputs["input_ids"].shape[1]) + 1
        return {"output_ids": self.model.generate(**model_inputs, **generate_kwargs)}

    def postprocess(self, model_outputs):
        texts = self.tokenizer.batch_decode(model_outputs["output_ids"], skip_special_tokens=True)
        return [{"translation_text": text.strip()} for text in texts]


def register_translation_pipeline() -> None:
    REMOVED_TASKS.pop("translation", None)
    PIPELINE_REGISTRY.supported_tasks.pop("translation", None)  # re-registering would only log a warning
    PIPELINE_REGISTRY.register_pipeline("translation", TranslationPipeline, pt_model=AutoModelForSeq2SeqLM)


# Unless told otherwise, a translation may run to twice its input plus ten tokens: German is rarely more than 1.3x
# English in these tokens, so only a looping model reaches it (and translate() then names it in a warning).
LENGTH_FACTOR, LENGTH_MARGIN = 2, 10


def length_budget(model, input_length: int) -> int:
    """New tokens a translation of an `input_length`-token input may take: relative to the input, within the
    generation config's `max_length` and within a learned position table (the decoder start token takes one)."""
    bounds = [LENGTH_FACTOR * input_length + LENGTH_MARGIN, model.generation_config.max_length - 1]
    encoder = model.get_encoder()
    positions = getattr(getattr(getattr(encoder, "embeddings", None), "embed_positions", None), "max_positions", None)
    if positions is not None:
        bounds.append(positions - 1)
    return max(1, min(bounds))


def translate(model, tokenizer, texts: list[str], num_beams: int | None = None, batch_size: int = 16,
              max_new_tokens: int | None = None) -> list[str]:
    """Translate `texts`, in batches of similar length (the order of `texts` is kept).

    The beam size defaults to the model's generation config. The length of each translation is bounded relative to
    its batch's longest input (`length_budget`) unless `max_new_tokens` is given; one that reaches the bound without
    ending is named in a warning. A text longer than
    the tokenizer's `model_max_length` (training sets it to `max_position_embeddings`) is cut there, with a warning.
    """
    limit = tokenizer.model_max_length if tokenizer.model_max_length < 1_000_000 else None  # else: "no limit"
    lengths = [len(ids) for ids in tokenizer(texts)["input_ids"]] if texts else []
    for index, length in enumerate(lengths):
        if limit is not None and length > limit:
            logger.warning(f"Text {index + 1} has {length} tokens; only its first {limit} are translated (the "
                           "model's limit, tokenizer.model_max_length).")
    order = sorted(range(len(texts)), key=lambda i: lengths[i])
    translations = [None] * len(texts)
    model.eval()
    for start in range(0, len(order), batch_size):
        indices = order[start : start + batch_size]
        budget = max_new_tokens or length_budget(model, min(max(lengths[i] for i in indices), limit or 10**9))
        batch = tokenizer([texts[i] for i in indices], return_tensors="pt", padding=True,
                          truncation=limit is not None, max_length=limit).to(model.device)
        # max_length (the decoder start token + new tokens), not max_new_tokens: that one, next to the saved
        # max_length, makes transformers warn on every call
        settings = {"max_length": budget + 1, **({"num_beams": num_beams} if num_beams is not None else {})}
        with torch.inference_mode():
            ids = model.generate(**batch, **settings)
        eos = model.generation_config.eos_token_id
        eos = torch.tensor(eos if isinstance(eos, list) else [eos] if eos is not None else [], device=ids.device)
        for index, row, text in zip(indices, ids, tokenizer.batch_decode(ids, skip_special_tokens=True)):
            translations[index] = text.strip()
            if max_new_tokens is None and row.numel() > budget and len(eos) and not torch.isin(row, eos).any():
                logger.warning(f"Text {index + 1}: the translation reached the length bound ({budget} tokens) "
                               "without ending; it may be cut (pass max_new_tokens to allow more).")
    return translations


def read_lines(stream: Iterable[bytes], name: str) -> Iterator[str]:
    """The lines of a UTF-8 byte stream, without line ends; a line that is not UTF-8 is an error naming it."""
    for number, raw in enumerate(stream, 1):
        try:
            line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as error:
            raise ValueError(f"{name}, line {number}: not valid UTF-8 ({error.reason} at byte {error.start})") from None
        yield line.rstrip("\r\n")
