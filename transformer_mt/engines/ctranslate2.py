"""The fast engine: a CTranslate2 `Translator` over an export of a TransformerMT model, decoding as generate() does
(greedy; beam search with `early_stopping=True`, as the models this package writes save it), several times faster on
a CPU. Given pairs are scored with `score_batch` and aligned with `return_attention`, giving generate()'s numbers
within float tolerance.
"""

import os

import ctranslate2
from transformers import set_seed

from ..bridges.ctranslate2 import (
    exported_max_positions,
    hypothesis_text,
    translate_options,
    translator_input,
)
from ..constraints import bad_words_ids, prefix_token_ids
from ..lengths import length_bound
from ..options import TranslationOptions
from ..tags import target_language_id
from ..tokenization import target_side
from .alignment import Alignment, encode_aligned_pairs, word_alignment
from .inputs import Hypotheses, checked_inputs, cut, length_batches, warn_unended
from .pair_scores import PairScore, encode_scored_pairs, length_penalty_of, pair_score
from .protocol import Engine


class CTranslate2Engine(Engine):
    """A CTranslate2 `Translator` over `export_dir`, with the model's tokenizer, config and generation config
    (`engines.load_engine` makes one, with the measured thread defaults).

    `intra_threads` per translation and `inter_threads` translations at once (the length batches of one call are
    decoded concurrently); `compute_type` as CTranslate2 takes it ("default": as the export stores the weights).

    Seeded sampling decodes on a translator of its own with one worker, made afresh at each `seed()`: CTranslate2
    draws from a generator per worker thread, seeded once when the thread first samples, so the shared workers
    would go on from where their last call left off and take the batches in whichever order they come free.
    """

    name = "ctranslate2"

    def __init__(
        self,
        export_dir: str,
        tokenizer,
        config,
        generation_config,
        compute_type: str = "default",
        intra_threads: int = 1,
        inter_threads: int | None = None,
        reason: str = "asked for",
        device: str = "cpu",
    ):
        self.export_dir, self.tokenizer, self.reason, self.device = export_dir, tokenizer, reason, device
        self.config, self.generation_config = config, generation_config
        inter_threads = inter_threads or max(1, (os.cpu_count() or 1) // intra_threads)
        self.compute_type = compute_type
        self.translator = ctranslate2.Translator(
            export_dir,
            device=device,
            compute_type=compute_type,
            intra_threads=intra_threads,
            inter_threads=inter_threads,
        )
        self.seeded = None  # the one-worker translator of the last seed() (class docstring)
        self.threads = {"intra_threads": intra_threads, "inter_threads": inter_threads}
        self.workers = inter_threads  # batches decoded at once
        self.max_positions = exported_max_positions(config)

    def seed(self, seed: int) -> None:
        set_seed(seed)
        ctranslate2.set_random_seed(seed)
        self.seeded = ctranslate2.Translator(
            self.export_dir,
            device=self.device,
            compute_type=self.compute_type,
            intra_threads=self.threads["intra_threads"],
            inter_threads=1,
        )

    def translate_sentences(
        self,
        sentences: list[str],
        options: TranslationOptions,
        names: list[str] | None = None,
        target_prefix: list[str | None] | None = None,
    ) -> list[Hypotheses]:
        tokenizer, target = self.tokenizer, target_side(self.tokenizer)
        ids, segments, names, limit = checked_inputs(
            tokenizer, self.config, sentences, names, self.max_positions, self.max_positions, options
        )
        ids = [cut(row, limit) for row in ids]  # as the tokenizer truncates: the end token stays
        settings = self.search_settings(options)
        prefixes = (
            [target.convert_ids_to_tokens(ids) if ids else None for ids in prefix_token_ids(tokenizer, target_prefix)]
            if target_prefix
            else None
        )
        language_id = target_language_id(self.config, tokenizer, options.target_lang)
        if language_id is not None:  # the target-language token first (tags.target_language_id)
            language = target.convert_ids_to_tokens(language_id)
            prefixes = [[language, *(prefix or [])] for prefix in (prefixes or [None] * len(sentences))]
        seeded = options.do_sample and options.seed is not None and self.seeded is not None
        translator = self.seeded if seeded else self.translator
        pending = []
        for indices in length_batches([len(row) for row in ids], options.batch_size):
            budget = options.max_new_tokens or length_bound(
                max(len(ids[i]) for i in indices), self.generation_config.max_length, self.max_positions
            )
            batch = [
                translator_input(tokenizer, ids[i], self.config, segments[i] if segments else None) for i in indices
            ]
            batch_prefixes = [prefixes[i] for i in indices] if prefixes else None
            pending.append(
                (
                    indices,
                    budget,
                    translator.translate_batch(
                        batch,
                        batch_prefixes,
                        max_decoding_length=budget,
                        max_batch_size=len(batch),
                        max_input_length=0,
                        asynchronous=True,
                        **settings,
                    ),
                )
            )
        translations = [None] * len(sentences)
        for indices, budget, results in pending:
            for index, result in zip(indices, results):
                result = result.result()
                hypotheses = result.hypotheses[: options.num_return_sequences]
                translations[index] = [
                    (hypothesis_text(tokenizer, tokens).strip(), result.scores[rank] if options.scores else None)
                    for rank, tokens in enumerate(hypotheses)
                ]
                ended = hypotheses[0][-1:] == [tokenizer.eos_token]
                if options.max_new_tokens is None and len(hypotheses[0]) >= budget and not ended:
                    warn_unended(names[index], budget)
        return translations

    def search_settings(self, options: TranslationOptions) -> dict:
        """translate_batch's keywords for `options`: the generation config's settings unless the options give
        others; a control CTranslate2 lacks is a ValueError naming it."""
        config = self.generation_config
        controls = {
            "length_penalty": config.length_penalty,
            "no_repeat_ngram_size": config.no_repeat_ngram_size or None,
            "repetition_penalty": config.repetition_penalty,
            **options.generate_controls(),
        }
        beams = options.beams(config)
        if beams > 1 and config.early_stopping is not True and not options.do_sample:
            raise ValueError(
                f"beam search ({beams} beams) on CTranslate2 stops as generate(early_stopping=True) "
                f"does, and this model's generation config says early_stopping="
                f"{config.early_stopping!r}: set it to true in generation_config.json, or translate "
                "with engine 'transformers'"
            )
        settings = translate_options(beams, num_return_sequences=options.num_return_sequences, **controls)
        settings.pop("max_decoding_length")
        settings["return_scores"] = options.scores
        suppressed = list(config.bad_words_ids or []) + (
            bad_words_ids(self.tokenizer, list(options.bad_words)) if options.bad_words else []
        )
        if suppressed:
            target = target_side(self.tokenizer)
            settings["suppress_sequences"] = [target.convert_ids_to_tokens(ids) for ids in suppressed]
        return settings

    def score_pairs(
        self,
        sources: list[str],
        targets: list[str],
        batch_size: int = 16,
        length_penalty: float | None = None,
        options: TranslationOptions | None = None,
    ) -> list[PairScore]:
        """Given translations' scores through `score_batch`, which adds `</s>` and scores it; each source read, and
        cut, as the generate() engine reads it under `options` (`encode_scored_pairs`: its segments as
        `token￨segment`)."""
        tokenizer, target = self.tokenizer, target_side(self.tokenizer)
        encoded = encode_scored_pairs(tokenizer, self.config, sources, targets, options)
        segments = encoded.get("token_type_ids") or [None] * len(sources)
        penalty = length_penalty_of(self.generation_config, length_penalty)
        sources_tokens = [
            translator_input(tokenizer, ids, self.config, row_segments)
            for ids, row_segments in zip(encoded["input_ids"], segments)
        ]
        target_tokens = [target.convert_ids_to_tokens(ids)[:-1] for ids in encoded["labels"]]  # it adds </s>
        results = self.translator.score_batch(
            sources_tokens, target_tokens, max_batch_size=batch_size, max_input_length=0
        )
        return [pair_score(float(sum(result.log_probs)), len(result.log_probs), penalty) for result in results]

    def align_pairs(self, sources: list[str], targets: list[str], options: TranslationOptions) -> list[Alignment]:
        """Word alignments through `return_attention` of an export made with the model's alignment layer and heads:
        each target forced as the prefix of a greedy translation that ends with it, its source read with its
        segments as translation reads it (`encode_aligned_pairs`)."""
        tokenizer, target_tokenizer = self.tokenizer, target_side(self.tokenizer)
        source, target, source_words, target_words = encode_aligned_pairs(
            tokenizer, self.config, sources, targets, options
        )
        # the target's tokens before </s> (the language token included): CTranslate2 writes </s> itself
        prefixes = [
            target_tokenizer.convert_ids_to_tokens(ids[:-1] if ids[-1:] == [target_tokenizer.eos_token_id] else ids)
            for ids in target["input_ids"]
        ]
        segments = source.get("token_type_ids") or [None] * len(sources)
        attention = [None] * len(sources)
        for indices in length_batches([len(prefix) for prefix in prefixes], options.batch_size):
            batch = [translator_input(tokenizer, source["input_ids"][i], self.config, segments[i]) for i in indices]
            results = self.translator.translate_batch(
                batch,
                [prefixes[i] for i in indices],
                beam_size=1,
                max_decoding_length=max(len(prefixes[i]) for i in indices) + 1,
                return_attention=True,
                max_input_length=0,
            )
            for i, result in zip(indices, results):
                attention[i] = result.attention[0][: len(prefixes[i])]
        return [word_alignment(*parts) for parts in zip(attention, source_words, target_words)]


__all__ = ["CTranslate2Engine"]
