"""The reference engine: generate() of a loaded model, in batches of similar length.

Beam search, greedy search and sampling are transformers' own; this engine maps the options onto generate()'s
keywords (the generation config supplies the rest), forces target prefixes and the target-language token, forbids
words, and reads each hypothesis' score as beam search ranks it. Given pairs are scored and aligned under teacher
forcing with the same model.
"""

import torch
from transformers import set_seed

from ..constraints import bad_words_ids, prefix_constraint, prefix_token_ids
from ..diagnostics import alignment_heads, eager_attention
from ..lengths import length_bound, length_settings, stack_max_positions
from ..options import TranslationOptions
from ..tags import target_language_id
from .alignment import Alignment, encode_aligned_pairs, word_alignment
from .inputs import Hypotheses, checked_inputs, cut, length_batches, padded, warn_unended
from .pair_scores import PairScore, encode_scored_pairs, length_penalty_of, pair_score, teacher_forcing_batch
from .protocol import Engine


class GenerateEngine(Engine):
    """generate() of a loaded encoder-decoder `model` with its `tokenizer`."""

    name = "transformers"
    workers = 1  # one call at a time: generate() already uses every core

    def __init__(self, model, tokenizer, reason: str = "asked for"):
        self.model, self.tokenizer, self.reason = model, tokenizer, reason
        self.config, self.generation_config = model.config, model.generation_config
        self.max_positions = stack_max_positions(model.get_decoder())  # what translations are written with
        self.max_input_positions = stack_max_positions(model.get_encoder())

    @property
    def device(self) -> str:
        return str(self.model.device)

    def seed(self, seed: int) -> None:
        set_seed(seed)

    def translate_sentences(
        self,
        sentences: list[str],
        options: TranslationOptions,
        names: list[str] | None = None,
        target_prefix: list[str | None] | None = None,
    ) -> list[Hypotheses]:
        model, tokenizer = self.model, self.tokenizer
        settings = self.search_settings(options)
        language_id = target_language_id(model.config, tokenizer, options.target_lang)
        prefixes = prefix_token_ids(tokenizer, target_prefix) if target_prefix else None
        if language_id is not None and prefixes:
            prefixes = [[language_id, *(prefix or [])] for prefix in prefixes]
        elif language_id is not None:
            settings["forced_bos_token_id"] = language_id
        encoded, segments, names, limit = checked_inputs(
            tokenizer, model.config, sentences, names, self.max_input_positions, self.max_positions, options
        )
        lengths = [len(row) for row in encoded]
        translations = [None] * len(sentences)
        model.eval()
        eos = model.generation_config.eos_token_id
        count = options.num_return_sequences
        for indices in length_batches(lengths, options.batch_size):
            budget = options.max_new_tokens or length_bound(
                min(max(lengths[i] for i in indices), limit or 10**9),
                model.generation_config.max_length,
                self.max_positions,
            )
            batch = padded(
                tokenizer,
                [cut(encoded[i], limit) for i in indices],
                [segments[i] for i in indices] if segments else None,
            ).to(model.device)
            call = {**length_settings(budget), **settings}
            if prefixes and any(prefixes[i] for i in indices):
                vocab_size = model.get_output_embeddings().weight.shape[0]
                call["prefix_allowed_tokens_fn"] = prefix_constraint([prefixes[i] for i in indices], vocab_size)
            with torch.inference_mode():
                output = model.generate(**batch, **call)
            ids = output.sequences if options.scores else output
            eos_ids = torch.tensor(
                eos if isinstance(eos, list) else [eos] if eos is not None else [], device=ids.device
            )
            row_scores = (
                hypothesis_scores(model, output, eos_ids, call.get("length_penalty")) if options.scores else None
            )
            decoded = tokenizer.batch_decode(ids, skip_special_tokens=True)
            for position, index in enumerate(indices):
                rows = range(position * count, (position + 1) * count)
                translations[index] = [
                    (decoded[row].strip(), row_scores[row] if options.scores else None) for row in rows
                ]
                first = ids[rows[0]]
                if (
                    options.max_new_tokens is None
                    and first.numel() > budget
                    and len(eos_ids)
                    and not torch.isin(first, eos_ids).any()
                ):
                    warn_unended(names[index], budget)
        return translations

    def search_settings(self, options: TranslationOptions) -> dict:
        """generate()'s keywords for `options` (the generation config gives the rest): the beams if given, the
        decoding controls, forbidden words added to the config's own, and what scores need."""
        options.beams(self.generation_config)  # more hypotheses than beams is refused by name
        settings = {
            **({"num_beams": options.num_beams} if options.num_beams is not None else {}),
            **options.generate_controls(),
            "num_return_sequences": options.num_return_sequences,
        }
        if options.bad_words:  # added to the generation config's own (an Opus-MT model's [[pad]], say)
            settings["bad_words_ids"] = [
                *(settings.get("bad_words_ids") or self.generation_config.bad_words_ids or []),
                *bad_words_ids(self.tokenizer, list(options.bad_words)),
            ]
        if options.scores:  # the raw logits too: a forced prefix token's score is its real log-probability, not 0
            settings.update(output_scores=True, output_logits=True, return_dict_in_generate=True)
        return settings

    def score_pairs(
        self,
        sources: list[str],
        targets: list[str],
        batch_size: int = 16,
        length_penalty: float | None = None,
        options: TranslationOptions | None = None,
    ) -> list[PairScore]:
        """Each target's log-probability given its source under the model (teacher forcing, `</s>` included), in
        the order given; each source read as translation reads it under `options` (`encode_scored_pairs`)."""
        model, tokenizer = self.model, self.tokenizer
        encoded = encode_scored_pairs(tokenizer, model.config, sources, targets, options)
        segments = encoded.get("token_type_ids")
        penalty = length_penalty_of(model.generation_config, length_penalty)
        results = [None] * len(sources)
        model.eval()
        for indices in length_batches([len(encoded["labels"][i]) for i in range(len(sources))], batch_size):
            batch, labels = teacher_forcing_batch(
                tokenizer,
                [encoded["input_ids"][i] for i in indices],
                [encoded["labels"][i] for i in indices],
                [segments[i] for i in indices] if segments else None,
            )
            with torch.inference_mode():
                logits = model(**batch.to(model.device), labels=labels.to(model.device)).logits
            log_probs = logits.float().log_softmax(-1)
            picked = log_probs.gather(-1, labels.clamp(min=0).to(log_probs.device)[..., None])[..., 0]
            picked = picked.masked_fill(labels.to(picked.device) == -100, 0.0)
            for row, i in enumerate(indices):
                results[i] = pair_score(float(picked[row].sum()), len(encoded["labels"][i]), penalty)
        return results

    def align_pairs(self, sources: list[str], targets: list[str], options: TranslationOptions) -> list[Alignment]:
        """Word alignments of given pairs under the model (teacher forcing; the eager attention kernel, the one
        that returns weights, for these forward passes only), the sources read as translation reads them: the
        context in the encoder, never aligned to (`encode_aligned_pairs`)."""
        model, tokenizer = self.model, self.tokenizer
        source, target, source_words, target_words = encode_aligned_pairs(
            tokenizer, model.config, sources, targets, options
        )
        segments = source.get("token_type_ids")
        layer, heads = alignment_heads(model.config)
        attention = [None] * len(sources)
        model.eval()
        for indices in length_batches([len(ids) for ids in target["input_ids"]], options.batch_size):
            batch, labels = teacher_forcing_batch(
                tokenizer,
                [source["input_ids"][i] for i in indices],
                [target["input_ids"][i] for i in indices],
                [segments[i] for i in indices] if segments else None,
            )
            with eager_attention(model), torch.inference_mode():
                outputs = model(**batch.to(model.device), labels=labels.to(model.device), output_attentions=True)
            weights = outputs.cross_attentions[layer][:, :heads].float().mean(1).cpu()  # (batch, target, source)
            for row, i in enumerate(indices):
                attention[i] = weights[row, : len(target["input_ids"][i]), : len(source["input_ids"][i])]
        return [word_alignment(*parts) for parts in zip(attention, source_words, target_words)]


def hypothesis_scores(model, output, eos_ids: torch.Tensor, length_penalty: float | None) -> list[float]:
    """Each generated row's score as beam search ranks hypotheses: sum of token log-probabilities divided by the
    length (tokens up to and including </s>) to the power `length_penalty` (the generation config's default)."""
    if getattr(output, "sequences_scores", None) is not None:  # beam search computed them itself
        return output.sequences_scores.tolist()
    penalty = length_penalty_of(model.generation_config, length_penalty)
    steps = output.logits if getattr(output, "logits", None) is not None else output.scores  # before any mask
    log_probs = model.compute_transition_scores(output.sequences, steps, normalize_logits=True)  # (N, new)
    generated = output.sequences[:, -log_probs.shape[1] :]
    ended = torch.isin(generated, eos_ids).long()
    counted = (ended.cumsum(-1) - ended) == 0  # up to and including the first </s>
    total = log_probs.masked_fill(~counted, 0.0).sum(-1)
    return (total / counted.sum(-1).clamp(min=1).float() ** penalty).tolist()


__all__ = ["GenerateEngine", "hypothesis_scores"]
