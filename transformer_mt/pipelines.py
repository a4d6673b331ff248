"""`pipeline("translation")`: transformers' Pipeline interface over the batch API of `transformer_mt.translation`.

transformers 5 removed the "translation" task (it points users to chat models). A translation model package
needs it, so `import transformer_mt` registers this small pipeline under that name: text in, `generate()`, text out,
with the model's generation config (beam size, length) unless the call overrides it. Each text is split into
sentences as `translate()` splits them, unless `split_sentences=False`.
"""

from collections.abc import Iterable

from transformers import AutoModelForSeq2SeqLM, Pipeline
from transformers.pipelines import PIPELINE_REGISTRY, REMOVED_TASKS

from .checkpoints import check_tokenizer_matches
from .engines import attach_calibration, resolve_engine
from .lengths import length_budget, length_settings
from .options import from_keywords
from .tags import source_language_token, target_language_id
from .translation import translate_texts


class TranslationPipeline(Pipeline):
    """Translate strings with an encoder-decoder model: `[{"translation_text": ...}]` per input, each split into
    sentences as `translate()` splits them unless `split_sentences=False` (at construction or per call)."""

    _load_tokenizer = True
    _load_processor = False
    _load_image_processor = False
    _load_feature_extractor = False
    _pipeline_calls_generate = True

    def __init__(
        self, *args, split_sentences: bool = True, source_lang: str | None = None, engine="transformers", **kwargs
    ):
        super().__init__(*args, **kwargs)
        self.split_sentences, self.source_lang = split_sentences, source_lang
        check_tokenizer_matches(self.model.config, self.tokenizer, "pipeline('translation')")
        # resolved once: "ctranslate2"/"auto" export the model's saved files (transformer_mt.engines.resolve_engine)
        self.engine = resolve_engine(self.model, self.tokenizer, engine)
        if getattr(self.engine, "calibration", None) is None:  # the model directory's calibration, if it fits
            attach_calibration(self.engine, getattr(self.model, "name_or_path", None), self.model)

    def __call__(
        self,
        inputs,
        split_sentences: bool | None = None,
        source_lang: str | None = None,
        tgt_lang: str | None = None,
        **kwargs,
    ):
        """One `{"translation_text": ...}` per string (a list of them with `num_return_sequences` > 1).

        Split into sentences, all the strings' sentences go through `translate_texts` (length-sorted batches of
        `batch_size`, 16 unless given; a string is always cut at the tokenizer's `model_max_length`), with the
        pipeline's generation settings; `source_lang` overrides the config's. With `split_sentences=False` each
        string is one sentence, decoded as `translate()` decodes it (case folding, protected spans); a dataset or a
        generator of strings goes through the Pipeline's own preprocess, generate and decode (with the generate()
        engine). `engine` (at construction): as `translate()`'s.
        `tgt_lang` (transformers' name): the language to write, for a model trained on several
        (`transformer_mt.tags`; `translate()`'s `target_lang`). `confidence=True` adds each string's calibrated
        confidence to its best translation's dict (`"confidence"`); `min_confidence=` and `guards=` as `translate()`
        takes them.
        """
        split = self.split_sentences if split_sentences is None else split_sentences
        language_id = target_language_id(self.model.config, self.tokenizer, tgt_lang)
        streamed = not isinstance(inputs, (str, list, tuple))  # a dataset, a generator: the Pipeline's own loop
        if not split and streamed and self.engine.name == "transformers":
            forced = {"forced_bos_token_id": language_id} if language_id is not None else {}
            # an imported Opus-MT model of several targets reads the language at the start of the source instead
            language = source_language_token(self.model.config, self.tokenizer, tgt_lang)
            results = super().__call__(inputs, **forced, **({"language": language} if language else {}), **kwargs)
        else:
            results = self._translate_by_sentence(
                inputs, source_lang or self.source_lang, split, target_lang=tgt_lang, **kwargs
            )
        if isinstance(inputs, str):
            return results
        return [result[0] if len(result) == 1 else result for result in results]

    def _translate_by_sentence(
        self,
        inputs,
        source_lang: str | None,
        split: bool = True,
        batch_size: int | None = None,
        target_lang: str | None = None,
        **kwargs,
    ):
        """Per string, the list of `{"translation_text": ...}` its sentences' joined hypotheses give."""
        texts = list(inputs) if isinstance(inputs, Iterable) and not isinstance(inputs, str) else [inputs]
        for text in texts:
            _check_text(text)
        _, forward_params, _ = self._sanitize_parameters(**kwargs)
        generate_kwargs = self._prepare_generate_kwargs(
            {**self._forward_params["generate_kwargs"], **forward_params["generate_kwargs"]}
        )
        count = generate_kwargs.pop("num_return_sequences", None) or 1
        options = from_keywords(
            batch_size=batch_size or self._batch_size or 16,
            num_return_sequences=count,
            split_sentences=split,
            source_lang=source_lang if split else None,
            target_lang=target_lang,
            **generate_kwargs,
        )
        nbest = translate_texts(self.engine, texts, options)
        results = [
            [{"translation_text": text} for text, _ in hypotheses] or [{"translation_text": ""}] * count
            for hypotheses in nbest
        ]
        if options.confidence:  # the best translation's calibrated confidence
            for result, hypotheses in zip(results, nbest):
                result[0]["confidence"] = hypotheses.flags.confidence
        return results[0] if isinstance(inputs, str) else results

    def _sanitize_parameters(self, max_length=None, truncation=None, language=None, **generate_kwargs):
        preprocess_params = {} if truncation is None else {"truncation": truncation}
        if language is not None:
            preprocess_params["language"] = language
        if max_length is not None:
            generate_kwargs["max_length"] = max_length
        return preprocess_params, {"generate_kwargs": generate_kwargs}, {}

    def preprocess(self, text, truncation=False, language=None):
        _check_text(text)
        return self.tokenizer(f"{language} {text}" if language else text, return_tensors="pt", truncation=truncation)

    def _forward(self, model_inputs, generate_kwargs=None):
        generate_kwargs = self._prepare_generate_kwargs(generate_kwargs or {})
        if "max_new_tokens" not in generate_kwargs and "max_length" not in generate_kwargs:
            generate_kwargs.update(length_settings(length_budget(self.model, model_inputs["input_ids"].shape[1])))
        return {"output_ids": self.model.generate(**model_inputs, **generate_kwargs)}

    def postprocess(self, model_outputs):
        texts = self.tokenizer.batch_decode(model_outputs["output_ids"], skip_special_tokens=True)
        return [{"translation_text": text.strip()} for text in texts]


def _check_text(text) -> None:
    if not isinstance(text, str):
        raise ValueError(f"TranslationPipeline translates strings, got {type(text).__name__}: {text!r}")


def register_translation_pipeline() -> None:
    REMOVED_TASKS.pop("translation", None)
    PIPELINE_REGISTRY.supported_tasks.pop("translation", None)  # re-registering would only log a warning
    PIPELINE_REGISTRY.register_pipeline("translation", TranslationPipeline, pt_model=AutoModelForSeq2SeqLM)


__all__ = ["TranslationPipeline", "register_translation_pipeline"]
