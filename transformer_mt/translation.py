"""Translating texts with an encoder-decoder model: the batch API (`translate`, `translate_nbest`), n-best scores,
and the stream that translates a file of any size on one or many processes (`translate_stream`, its lines read
from bytes by `read_lines`).

Every entry splits each text into sentences (`transformer_mt.sentences`), translates all the sentences in
length-sorted batches (`translate_sentences`, the one function that runs the model), and joins each text's
translations back with the source's separators; `split_sentences=False` translates each text as one sequence.
`pipeline("translation")` (`transformer_mt.pipelines`) and the translate command (`transformer_mt.translate_command`)
are built on these functions.
"""

import logging
from collections.abc import Callable, Iterable, Iterator

import torch

from . import sentences
from .checkpoints import check_tokenizer_matches


logger = logging.getLogger(__name__)


# Unless told otherwise, a translation may run to twice its input plus ten tokens: German is rarely more than 1.3x
# English in these tokens, so only a looping model reaches it (and translate() then names it in a warning).
LENGTH_FACTOR, LENGTH_MARGIN = 2, 10


def length_budget(model, input_length: int) -> int:
    """New tokens a translation of an `input_length`-token input may take (`length_bound`), for a loaded model."""
    decoder = model.get_decoder()  # the translation's positions are the decoder's
    positions = getattr(getattr(getattr(decoder, "embeddings", None), "embed_positions", None), "max_positions", None)
    return length_bound(input_length, model.generation_config.max_length, positions)


def length_bound(input_length: int, max_length: int | None, max_positions: int | None) -> int:
    """New tokens a translation of an `input_length`-token input may take: relative to the input, within the
    generation config's `max_length` and within the decoder's position table if it has one (the decoder start
    token takes one)."""
    bounds = [LENGTH_FACTOR * input_length + LENGTH_MARGIN]
    bounds += [limit - 1 for limit in (max_length, max_positions) if limit is not None]
    return max(1, min(bounds))


def length_batches(lengths: list[int], batch_size: int) -> list[list[int]]:
    """Indices into `lengths`, sorted by length and cut into batches of `batch_size`: little padding per batch."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]


def length_settings(new_tokens: int) -> dict:
    """generate() keywords for at most `new_tokens` new tokens of an encoder-decoder model: max_length (the decoder
    start token + new tokens), not max_new_tokens, which next to a saved max_length makes transformers warn on
    every call."""
    return {"max_length": new_tokens + 1}


def input_limit(tokenizer) -> int | None:
    """The tokenizer's `model_max_length` (training sets it to the position table), or None where transformers'
    huge sentinel means "no limit"."""
    return tokenizer.model_max_length if tokenizer.model_max_length < 1_000_000 else None


def warn_long_inputs(lengths: list[int], names: list[str], limit: int | None) -> None:
    """Name every sentence longer than `limit` tokens: it is cut there (every engine cuts it the same way)."""
    for name, length in zip(names, lengths):
        if limit is not None and length > limit:
            logger.warning(f"Text {name} has {length} tokens; only its first {limit} are translated (the model's "
                           "limit, tokenizer.model_max_length).")


def warn_unended(name: str, budget: int) -> None:
    logger.warning(f"Text {name}: the translation reached the length bound ({budget} tokens) without ending; it may "
                   "be cut (pass max_new_tokens to allow more).")


Hypotheses = list[tuple[str, float | None]]  # one text's or sentence's translations, best first: (text, score)


def translate(model, tokenizer, texts: list[str], num_beams: int | None = None, batch_size: int = 16,
              max_new_tokens: int | None = None, numbers: list[int] | None = None,
              check_tokenizer: bool = True, split_sentences: bool = True, source_lang: str | None = None,
              engine="transformers", target_lang: str | None = None, source_prefix: str | None = None,
              **generate_kwargs) -> list[str]:
    """Translate `texts` (the order of `texts` is kept); a blank text gives "" without a model call.

    Each text is split into sentences, every sentence of every text is translated in batches of similar length,
    and each text's translations are joined with the whitespace that separated its sentences. The segmenter's
    language is `source_lang`, else the model config's `source_lang` (a ValueError names what to pass when neither
    is known); `split_sentences=False` translates each text as one sequence.

    The beam size defaults to the model's generation config; `generate_kwargs` are generate()'s decoding controls
    (`length_penalty`, `no_repeat_ngram_size`, `do_sample`, `top_k`, `top_p`, `temperature`, ...). The length of
    each translation is bounded relative to its batch's longest input (`length_budget`) unless `max_new_tokens`
    is given; one that reaches the bound without ending is named in a warning. A sentence longer than the
    tokenizer's `model_max_length` (training sets it to `max_position_embeddings`) is cut there, with a warning.
    Warnings name texts by `numbers` (default 1, 2, ...) and sentences by place ("Text 3, sentence 2"). A tokenizer
    that is not the model's own is warned about, as the loader and the pipeline do (`check_tokenizer`: callers that
    translate batch after batch check once themselves).

    `engine`: "transformers" (generate()), "ctranslate2" (a CTranslate2 export of the model's saved files, made once
    into a cache; the model must hold exactly those weights), "auto" (CTranslate2 where it can, else generate()),
    or an engine from `transformer_mt.engines.load_engine`, which is the fast way to translate call after call.

    Tags (`transformer_mt.tags`): `target_lang` picks the language of a model trained on several (its token is
    forced first; required for such a model), `source_prefix` begins every sentence with a tag the model was
    trained with (`--source_prefix`, e.g. `<BT>`).
    """
    return [hypotheses[0][0] if hypotheses else "" for hypotheses in translate_nbest(
        model, tokenizer, texts, num_beams=num_beams, batch_size=batch_size, max_new_tokens=max_new_tokens,
        numbers=numbers, check_tokenizer=check_tokenizer, split_sentences=split_sentences, source_lang=source_lang,
        engine=engine, target_lang=target_lang, source_prefix=source_prefix, **generate_kwargs)]


def translate_nbest(model, tokenizer, texts: list[str], num_beams: int | None = None, batch_size: int = 16,
                    max_new_tokens: int | None = None, numbers: list[int] | None = None,
                    check_tokenizer: bool = True, num_return_sequences: int = 1, scores: bool = False,
                    split_sentences: bool = True, source_lang: str | None = None, engine="transformers",
                    target_prefix: list[str | None] | None = None, bad_words: list[str] | None = None,
                    target_lang: str | None = None, source_prefix: str | None = None,
                    **generate_kwargs) -> list[Hypotheses]:
    """`translate`, with `num_return_sequences` hypotheses per text, best first, each `(text, score)` (none for a
    blank text). Hypothesis k of a text joins the k-th hypothesis of each of its sentences, and its score (with
    `scores`) is the sum of theirs. A sentence's score is what beam search ranks by: the hypothesis'
    log-probability divided by its length to the power `length_penalty` (for greedy search and sampling: under
    the decoding distribution). `target_prefix` (one per text, None for none: a text's translation begins with it;
    with splitting, its first sentence's) and `bad_words` (never written): `transformer_mt.constraints`;
    `target_lang` and `source_prefix` as `translate` says."""
    from .constraints import first_sentence_prefixes
    from .tags import target_language_id

    if check_tokenizer:
        check_tokenizer_matches(model.config, tokenizer, "translate()")
    language = sentences.segmenter_language(model.config, source_lang) if split_sentences else None
    flat, names, layout = split_texts(texts, language, numbers or range(1, len(texts) + 1))
    hypotheses = _engine(model, tokenizer, engine).translate_sentences(
        tagged(flat, source_prefix), names, num_beams=num_beams, batch_size=batch_size,
        max_new_tokens=max_new_tokens, num_return_sequences=num_return_sequences, scores=scores, bad_words=bad_words,
        target_prefix=first_sentence_prefixes(layout, target_prefix, len(flat)),
        target_language_id=target_language_id(model.config, tokenizer, target_lang), **generate_kwargs)
    return [join_hypotheses([hypotheses[i] for i in span], separators) for span, separators in layout]


def tagged(sentences: list[str], source_prefix: str | None) -> list[str]:
    """`sentences`, each begun with the tag `source_prefix` (a run's `--source_prefix`), or as they are."""
    return [f"{source_prefix} {sentence}" for sentence in sentences] if source_prefix else sentences


def split_texts(texts: list[str], language: str | None,
                numbers: Iterable[int]) -> tuple[list[str], list[str], list[tuple[range, list[str]]]]:
    """Every sentence of `texts` in one list, each one's name for warnings ("3, sentence 2"), and per text: where
    its sentences lie in that list and the separators that join their translations. Without a `language`, each
    text is one sentence named by its number alone; a blank text has none either way."""
    flat, names, layout = [], [], []
    for number, text in zip(numbers, texts):
        if language is None:
            pieces, separators = ([text] if text.strip() else []), []
        else:
            pieces, separators = sentences.split(text, language)
        layout.append((range(len(flat), len(flat) + len(pieces)), separators))
        flat += pieces
        names += [f"{number}" if language is None else f"{number}, sentence {j}" for j in range(1, len(pieces) + 1)]
    return flat, names, layout


def join_hypotheses(sentence_hypotheses: list[Hypotheses], separators: list[str]) -> Hypotheses:
    """One text's hypotheses from its sentences' (in order): the k-th joins each sentence's k-th with the source's
    `separators`, and its score is the sum of theirs (None without scores). A text without sentences has none."""
    if not sentence_hypotheses:
        return []
    joined = []
    for k in range(len(sentence_hypotheses[0])):
        texts, scores = zip(*(hypotheses[k] for hypotheses in sentence_hypotheses))
        joined.append((sentences.join(list(texts), separators), None if None in scores else sum(scores)))
    return joined


def translate_sentences(model, tokenizer, texts: list[str], names: list[str] | None = None, *,
                        num_beams: int | None = None, batch_size: int = 16, max_new_tokens: int | None = None,
                        num_return_sequences: int = 1, scores: bool = False,
                        target_prefix: list[str | None] | None = None, bad_words: list[str] | None = None,
                        target_language_id: int | None = None, **generate_kwargs) -> list[Hypotheses]:
    """The sentence-level engine that every entry runs: `num_return_sequences` hypotheses for each of `texts`
    (sentences, each one sequence), best first, from generate() in batches of similar length (`length_batches`).

    Bounds and warnings as `translate` says; `names` label the sentences in warnings (default 1, 2, ...);
    `target_prefix` (one per sentence, None for none) and `bad_words` as `transformer_mt.constraints` applies them;
    `target_language_id`: the target-language token every translation begins with (`tags.target_language_id`),
    forced through `forced_bos_token_id`, or before the prefix where there is one.
    Another engine that takes sentences and gives back hypotheses can stand in for this function.
    """
    from .constraints import bad_words_ids, prefix_constraint, prefix_token_ids

    if bad_words:  # added to the generation config's own (an Opus-MT model's [[pad]], say), never replacing them
        generate_kwargs["bad_words_ids"] = [*(generate_kwargs.get("bad_words_ids")
                                              or model.generation_config.bad_words_ids or []),
                                            *bad_words_ids(tokenizer, bad_words)]
    prefixes = prefix_token_ids(tokenizer, target_prefix) if target_prefix else None
    if target_language_id is not None and prefixes:
        prefixes = [[target_language_id, *(prefix or [])] for prefix in prefixes]
    elif target_language_id is not None:
        generate_kwargs["forced_bos_token_id"] = target_language_id
    names = names or [str(number) for number in range(1, len(texts) + 1)]
    limit = input_limit(tokenizer)
    lengths = [len(ids) for ids in tokenizer(texts)["input_ids"]] if texts else []
    warn_long_inputs(lengths, names, limit)
    translations = [None] * len(texts)
    model.eval()
    eos = model.generation_config.eos_token_id
    for indices in length_batches(lengths, batch_size):
        budget = max_new_tokens or length_budget(model, min(max(lengths[i] for i in indices), limit or 10**9))
        batch = tokenizer([texts[i] for i in indices], return_tensors="pt", padding=True,
                          truncation=limit is not None, max_length=limit).to(model.device)
        settings = {**length_settings(budget), **({"num_beams": num_beams} if num_beams is not None else {}),
                    **generate_kwargs, "num_return_sequences": num_return_sequences}
        if prefixes and any(prefixes[i] for i in indices):
            vocab_size = model.get_output_embeddings().weight.shape[0]
            settings["prefix_allowed_tokens_fn"] = prefix_constraint([prefixes[i] for i in indices], vocab_size)
        if scores:  # the raw logits too: a forced prefix token's score is its real log-probability, not 0
            settings.update(output_scores=True, output_logits=True, return_dict_in_generate=True)
        with torch.inference_mode():
            output = model.generate(**batch, **settings)
        ids = output.sequences if scores else output
        eos_ids = torch.tensor(eos if isinstance(eos, list) else [eos] if eos is not None else [], device=ids.device)
        row_scores = hypothesis_scores(model, output, eos_ids, settings.get("length_penalty")) if scores else None
        decoded = tokenizer.batch_decode(ids, skip_special_tokens=True)
        for position, index in enumerate(indices):
            rows = range(position * num_return_sequences, (position + 1) * num_return_sequences)
            translations[index] = [(decoded[row].strip(), row_scores[row] if scores else None) for row in rows]
            first = ids[rows[0]]
            if max_new_tokens is None and first.numel() > budget and len(eos_ids) and not torch.isin(first,
                                                                                                  eos_ids).any():
                warn_unended(names[index], budget)
    return translations


def hypothesis_scores(model, output, eos_ids: torch.Tensor, length_penalty: float | None) -> list[float]:
    """Each generated row's score as beam search ranks hypotheses: sum of token log-probabilities divided by the
    length (tokens up to and including </s>) to the power `length_penalty` (the generation config's default)."""
    if getattr(output, "sequences_scores", None) is not None:  # beam search computed them itself
        return output.sequences_scores.tolist()
    penalty = model.generation_config.length_penalty if length_penalty is None else length_penalty
    penalty = 1.0 if penalty is None else penalty  # generate()'s default when the config leaves it unset
    steps = output.logits if getattr(output, "logits", None) is not None else output.scores  # before any mask
    log_probs = model.compute_transition_scores(output.sequences, steps, normalize_logits=True)  # (N, new)
    generated = output.sequences[:, -log_probs.shape[1]:]
    ended = torch.isin(generated, eos_ids).long()
    counted = (ended.cumsum(-1) - ended) == 0  # up to and including the first </s>
    total = log_probs.masked_fill(~counted, 0.0).sum(-1)
    return (total / counted.sum(-1).clamp(min=1).float() ** penalty).tolist()


def translate_stream(model, tokenizer, lines: Iterable[str], write: Callable[[str], object], *,
                     num_beams: int | None = None, batch_size: int = 16, max_new_tokens: int | None = None,
                     chunk_size: int = 4096, progress: Callable[[int], object] | None = None,
                     num_return_sequences: int = 1, scores: bool = False, split_sentences: bool = True,
                     source_lang: str | None = None, engine="transformers",
                     target_prefix: Iterable[str | None] | None = None, bad_words: list[str] | None = None,
                     alignments: bool = False, target_lang: str | None = None, source_prefix: str | None = None,
                     **generate_kwargs) -> int:
    """Translate a stream of lines into `write` (one call per line, in input order); returns the line count.

    `write` gets the translation, or with `num_return_sequences` > 1 or `scores` the list of `(text, score)`
    hypotheses (`translate_nbest`; a blank line gets an empty list). `split_sentences`, `source_lang`, `engine`,
    `bad_words` and `generate_kwargs`: as for `translate`; `target_prefix`: an iterable of prefixes beside `lines`
    (None for none), read along with them. `alignments`: `write` gets a second argument, the word alignment of the
    line and its (best) translation (`transformer_mt.alignment`): each sentence aligned with its translation by
    the engine, the sentences' word pairs numbered within the line. `target_lang` and `source_prefix`: as for
    `translate`.

    Reads `chunk_size` lines at a time, so memory does not grow with the input. Within a chunk, the lines'
    sentences are batched by length (`length_batches`) and each line's translations joined; a blank line gives an
    empty line. Under a distributed launch (`accelerate launch`, torchrun) every process reads the stream,
    translates every num_processes-th batch of each chunk, and the main process joins and writes all of them: the
    batches, so the output, are the same for any number of processes. `progress(n)` is called on the main process
    after each chunk with its line count.
    """
    from accelerate.utils import gather_object

    from .alignment import join_alignments
    from .constraints import first_sentence_prefixes
    from .tags import target_language_id

    state = process_state()
    check_tokenizer_matches(model.config, tokenizer, "translate_stream()")
    language = sentences.segmenter_language(model.config, source_lang) if split_sentences else None
    nbest = num_return_sequences > 1 or scores
    engine = _engine(model, tokenizer, engine)
    language_id = target_language_id(model.config, tokenizer, target_lang)
    total = 0
    prefixes = iter(target_prefix) if target_prefix is not None else None
    for chunk in _chunks(lines, chunk_size):
        flat, names, layout = split_texts(chunk, language, range(total + 1, total + len(chunk) + 1))
        chunk_prefixes = first_sentence_prefixes(layout, _take(prefixes, len(chunk)), len(flat)) if prefixes \
            else None
        lengths = [len(ids) for ids in tokenizer(flat)["input_ids"]] if flat else []
        # this process's batches, handed to the engine in one call: it cuts the same length batches again (they
        # are consecutive runs of one length order), and an engine with several workers decodes them at once
        indices = [i for batch in length_batches(lengths, batch_size)[state.process_index :: state.num_processes]
                   for i in batch]
        outputs = engine.translate_sentences(tagged([flat[i] for i in indices], source_prefix),
                                             [names[i] for i in indices], num_beams=num_beams, batch_size=batch_size,
                                             max_new_tokens=max_new_tokens, num_return_sequences=num_return_sequences,
                                             scores=scores, bad_words=bad_words, target_prefix=[
                                                 chunk_prefixes[i] for i in indices] if chunk_prefixes else None,
                                             target_language_id=language_id, **generate_kwargs)
        mine = dict(zip(indices, outputs))
        if alignments:  # each process aligns its own sentences with their best translations
            aligned = [i for i in indices if mine[i] and mine[i][0][0]]
            found = dict(zip(aligned, engine.align_pairs(
                [flat[i] for i in aligned], [mine[i][0][0] for i in aligned], batch_size, source_prefix=source_prefix,
                target_language_id=language_id))) if aligned else {}
            mine = {i: (hypotheses, found.get(i, [])) for i, hypotheses in mine.items()}
        if state.num_processes > 1:
            mine = {index: hypotheses for part in gather_object([mine]) for index, hypotheses in part.items()}
        if state.is_main_process:
            for span, separators in layout:
                if alignments:
                    alignment = join_alignments([mine[i][1] for i in span], [flat[i] for i in span],
                                                [mine[i][0][0][0] if mine[i][0] else "" for i in span], separators)
                    hypotheses = join_hypotheses([mine[i][0] for i in span], separators)
                    write(hypotheses if nbest else hypotheses[0][0] if hypotheses else "", alignment)
                    continue
                hypotheses = join_hypotheses([mine[i] for i in span], separators)
                write(hypotheses if nbest else hypotheses[0][0] if hypotheses else "")
            if progress is not None:
                progress(len(chunk))
        total += len(chunk)
    return total


def _engine(model, tokenizer, engine):
    from .engines import resolve_engine

    return resolve_engine(model, tokenizer, engine)


def process_state():
    """accelerate's view of the processes started together (one, without a launcher). Without an accelerator they
    form one gloo group on the CPU; accelerate would otherwise let each run alone."""
    from accelerate import PartialState

    return PartialState(cpu=not torch.accelerator.is_available())


def _take(prefixes: Iterator, count: int) -> list:
    """The next `count` prefixes; an error when the prefixes end before the lines do."""
    taken = [next(prefixes, StopIteration) for _ in range(count)]
    if StopIteration in taken:
        raise ValueError("target_prefix ended before the lines did: give one prefix per line (empty for none)")
    return taken


def _chunks(lines: Iterable[str], size: int) -> Iterator[list[str]]:
    chunk = []
    for line in lines:
        chunk.append(line)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def read_lines(stream: Iterable[bytes], name: str, problems: list[str] | None = None) -> Iterator[str]:
    """The lines of a UTF-8 byte stream, without line ends. A line that is not UTF-8 is an error naming it; with a
    `problems` list, the error message goes there instead and the line reads as empty (so line numbers hold)."""
    for number, raw in enumerate(stream, 1):
        try:
            line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as error:
            message = f"{name}, line {number}: not valid UTF-8 ({error.reason} at byte {error.start})"
            if problems is None:
                raise ValueError(message) from None
            problems.append(message)
            line = ""
        yield line.rstrip("\r\n")


def __getattr__(name: str):
    """The command's parser and options lived here before `transformer_mt.translate_command`: still importable."""
    if name in ("decoding_options", "parse_args"):
        from . import translate_command

        return getattr(translate_command, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "LENGTH_FACTOR", "LENGTH_MARGIN", "Hypotheses", "hypothesis_scores", "input_limit", "join_hypotheses",
    "length_batches",
    "length_bound", "length_budget", "length_settings", "process_state", "read_lines", "split_texts", "translate",
    "translate_nbest", "translate_sentences", "translate_stream", "warn_long_inputs", "warn_unended",
]
