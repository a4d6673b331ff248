"""Word alignments of source/target pairs from the model's cross-attention, as Pharaoh `i-j` pairs.

fairseq's `--print-alignment`, Marian's `--alignment` and OpenNMT's `report_align` do the same: each target word is
aligned to the source word that the decoder attends to most while it writes the word's tokens. The attention is
that of decoder layer `config.alignment_layer`, averaged over its first `config.alignment_heads` heads (all by
default), read under teacher forcing of the given target; a CTranslate2 export is given the same layer and heads,
so that its `return_attention` (with the target forced as a prefix) gives the same alignments.

Tokens map to words through the tokenizers' character offsets; words are the texts' whitespace-separated pieces,
numbered from 0 (Pharaoh's convention: `i` the source word, `j` the target word). Special tokens (`</s>`) align to
nothing. Alignments are made for the pairs given, tokenized as the tokenizer writes them: a translation's own
tokens, when the model wrote it, unless it segmented a word otherwise than the tokenizer would.
"""

import bisect
import re

import torch

from .pair_scoring import check_pairs, teacher_forcing_batch
from .translation import input_limit, length_batches


Alignment = list[tuple[int, int]]  # (source word, target word) pairs, sorted


def pharaoh(alignment: Alignment) -> str:
    """`0-0 1-2 2-1`: the alignment as fast_align, Moses and Marian write it."""
    return " ".join(f"{i}-{j}" for i, j in alignment)


def token_words(text: str, offsets: list[tuple[int, int]]) -> list[int | None]:
    """The word (whitespace-separated piece of `text`, numbered from 0) of each token, from its character
    `offsets`; None for a token without characters of its own (special tokens)."""
    starts = [match.start() for match in re.finditer(r"\S+", text)]
    words = []
    for start, end in offsets:
        while start < end and text[start].isspace():  # byte-level BPE's offsets may include the space before a word
            start += 1
        words.append(bisect.bisect_right(starts, start) - 1 if start < end else None)
    return words


def word_alignment(attention, source_words: list[int | None], target_words: list[int | None]) -> Alignment:
    """Each target token's word aligned to the word of the source token it attends to most (`attention`: a row per
    target token, a column per source token), over the source tokens that belong to a word."""
    columns = [s for s, word in enumerate(source_words) if word is not None]
    if not columns:
        return []
    attention = torch.as_tensor(attention, dtype=torch.float32)[:, columns]
    pairs = set()
    for t, word in enumerate(target_words):
        if word is not None and t < attention.shape[0]:
            pairs.add((source_words[columns[int(attention[t].argmax())]], word))
    return sorted(pairs)


def line_words(pieces: list[str], separators: list[str]) -> list[list[int]]:
    """For each of a line's sentences (`pieces`, joined by `separators` as `sentences.join` joins them), the line's
    word number of each of its words: sentences joined without whitespace share a word."""
    line, offsets = pieces[0] if pieces else "", [0]
    for separator, piece in zip(separators, pieces[1:], strict=True):
        offsets.append(len(line) + len(separator))
        line += separator + piece
    starts = [match.start() for match in re.finditer(r"\S+", line)]
    return [[bisect.bisect_right(starts, offset + match.start()) - 1 for match in re.finditer(r"\S+", piece)]
            for piece, offset in zip(pieces, offsets)]


def join_alignments(alignments: list[Alignment], sources: list[str], targets: list[str],
                    separators: list[str]) -> Alignment:
    """One line's alignment from its sentences' (in order): each sentence's word numbers turned into the line's,
    on each side (the translations are joined with the source's `separators`)."""
    source_words, target_words = line_words(sources, separators), line_words(targets, separators)
    return sorted({(source_words[k][i], target_words[k][j])
                   for k, alignment in enumerate(alignments) for i, j in alignment})


def check_tokenizer(tokenizer) -> None:
    """Alignments map tokens to words through character offsets, which only fast (Rust) tokenizers give."""
    from .tokenization import target_side

    for side in (tokenizer, target_side(tokenizer)):
        if not getattr(side, "is_fast", False):
            raise ValueError(f"word alignments need a fast tokenizer's character offsets; this model's is "
                             f"{type(side).__name__} (a converted Opus-MT model keeps its SentencePiece one)")


def _encode(tokenizer, sources: list[str], targets: list[str], source_prefix: str | None = None,
            target_language_id: int | None = None) -> tuple[dict, dict, list[list], list[list]]:
    """The sources (begun with `source_prefix`, cut as translation cuts them) and targets (begun with the
    `target_language_id` token) as the model reads them, and the word of each of their tokens: the tag and the
    language token belong to no word of the given texts."""
    from .tokenization import target_side

    limit = input_limit(tokenizer)
    prefixed = [f"{source_prefix} {text}" for text in sources] if source_prefix else sources
    source = tokenizer(prefixed, return_offsets_mapping=True, truncation=limit is not None, max_length=limit)
    target = target_side(tokenizer)(targets, return_offsets_mapping=True)
    shift = 1 if source_prefix else 0  # the tag is the prefixed text's word 0
    source_words = [[None if word is None or word < shift else word - shift for word in token_words(text, offsets)]
                    for text, offsets in zip(prefixed, source["offset_mapping"])]
    target_words = [token_words(text, offsets) for text, offsets in zip(targets, target["offset_mapping"])]
    if target_language_id is not None:
        target["input_ids"] = [[target_language_id, *ids] for ids in target["input_ids"]]
        target_words = [[None, *words] for words in target_words]
    return source, target, source_words, target_words


def alignment_heads(config) -> tuple[int, int]:
    """The decoder layer (an index from 0) and the number of its first heads that alignments average."""
    return config.alignment_layer % config.decoder_layers, config.alignment_heads or config.decoder_attention_heads


def align_pairs(model, tokenizer, sources: list[str], targets: list[str], batch_size: int = 16,
                source_prefix: str | None = None, target_language_id: int | None = None) -> list[Alignment]:
    """Word alignments of given pairs under `model` (teacher forcing; the eager attention kernel, the one that
    returns weights, for these forward passes only). `source_prefix` and `target_language_id`: the tag and the
    target-language token the translations were made with (`transformer_mt.tags`); they align to nothing."""
    from .diagnostics import eager_attention

    check_pairs(sources, targets)
    check_tokenizer(tokenizer)
    source, target, source_words, target_words = _encode(tokenizer, sources, targets, source_prefix,
                                                         target_language_id)
    layer, heads = alignment_heads(model.config)
    attention = [None] * len(sources)
    model.eval()
    for indices in length_batches([len(ids) for ids in target["input_ids"]], batch_size):
        batch, labels = teacher_forcing_batch(tokenizer, [source["input_ids"][i] for i in indices],
                                              [target["input_ids"][i] for i in indices])
        with eager_attention(model), torch.inference_mode():
            outputs = model(**batch.to(model.device), labels=labels.to(model.device), output_attentions=True)
        weights = outputs.cross_attentions[layer][:, :heads].float().mean(1).cpu()  # (batch, target, source)
        for row, i in enumerate(indices):
            attention[i] = weights[row, : len(target["input_ids"][i]), : len(source["input_ids"][i])]
    return [word_alignment(*parts) for parts in zip(attention, source_words, target_words)]


def align_pairs_ctranslate2(translator, tokenizer, sources: list[str], targets: list[str], batch_size: int = 16,
                            source_prefix: str | None = None,
                            target_language_id: int | None = None) -> list[Alignment]:
    """`align_pairs` through a CTranslate2 `Translator` exported with the model's alignment layer and heads: each
    target forced as the prefix of a greedy translation that ends with it, its `return_attention`."""
    from .tokenization import target_side

    check_pairs(sources, targets)
    check_tokenizer(tokenizer)
    source, target, source_words, target_words = _encode(tokenizer, sources, targets, source_prefix,
                                                         target_language_id)
    target_tokenizer = target_side(tokenizer)
    # the target's tokens before </s> (the language token included): CTranslate2 writes </s> itself
    prefixes = [target_tokenizer.convert_ids_to_tokens(ids[:-1] if ids[-1:] == [target_tokenizer.eos_token_id]
                                                       else ids) for ids in target["input_ids"]]
    attention = [None] * len(sources)
    for indices in length_batches([len(prefix) for prefix in prefixes], batch_size):
        batch = [tokenizer.convert_ids_to_tokens(source["input_ids"][i]) for i in indices]
        results = translator.translate_batch(
            batch, [prefixes[i] for i in indices], beam_size=1, max_decoding_length=max(
                len(prefixes[i]) for i in indices) + 1, return_attention=True, max_input_length=0)
        for i, result in zip(indices, results):
            attention[i] = result.attention[0][: len(prefixes[i])]
    return [word_alignment(*parts) for parts in zip(attention, source_words, target_words)]


__all__ = ["Alignment", "align_pairs", "align_pairs_ctranslate2", "alignment_heads", "check_tokenizer",
           "join_alignments", "line_words", "pharaoh", "token_words", "word_alignment"]
