"""Word alignments of source/target pairs from the model's cross-attention, as Pharaoh `i-j` pairs.

fairseq's `--print-alignment`, Marian's `--alignment` and OpenNMT's `report_align` do the same: each target word is
aligned to the source word that the decoder attends to most while it writes the word's tokens. The attention is
that of decoder layer `config.alignment_layer`, averaged over its first `config.alignment_heads` heads (all by
default), read under teacher forcing of the given target; a CTranslate2 export is given the same layer and heads,
so that its `return_attention` (with the target forced as a prefix) gives the same alignments.

The engines (`transformer_mt.engines`) read the attention, each with `align_pairs`; this module maps it to words.
Tokens map to words through the tokenizers' character offsets; words are the texts' whitespace-separated pieces,
numbered from 0 (Pharaoh's convention: `i` the source word, `j` the target word). Special tokens (`</s>`) align to
nothing. Alignments are made for the pairs given, tokenized as the tokenizer writes them: a translation's own
tokens, when the model wrote it, unless it segmented a word otherwise than the tokenizer would. A source is read as
translation reads it (`inputs.source_rows`), so that the attention is that of the forward pass that translated it;
its context, the register's tag and the `source_prefix` belong to no word: the encoder sees them, but each target
word is aligned to the sentence's own words only.
"""

import bisect
import re

import torch

from ..lengths import input_limit
from ..options import TranslationOptions
from ..tags import target_language_id
from ..tokenization import target_side
from .inputs import cut, default_names, shown_sources, source_encoding, tagged
from .pair_scores import check_pairs


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
    return [
        [bisect.bisect_right(starts, offset + match.start()) - 1 for match in re.finditer(r"\S+", piece)]
        for piece, offset in zip(pieces, offsets)
    ]


def join_alignments(
    alignments: list[Alignment], sources: list[str], targets: list[str], separators: list[str]
) -> Alignment:
    """One line's alignment from its sentences' (in order): each sentence's word numbers turned into the line's,
    on each side (the translations are joined with the source's `separators`)."""
    source_words, target_words = line_words(sources, separators), line_words(targets, separators)
    return sorted(
        {(source_words[k][i], target_words[k][j]) for k, alignment in enumerate(alignments) for i, j in alignment}
    )


def check_tokenizer(tokenizer) -> None:
    """Alignments map tokens to words through character offsets, which only fast (Rust) tokenizers give."""
    for side in (tokenizer, target_side(tokenizer)):
        if not getattr(side, "is_fast", False):
            raise ValueError(
                f"word alignments need a fast tokenizer's character offsets; this model's is "
                f"{type(side).__name__} (a converted Opus-MT model whose files allow no fast one keeps "
                "MarianTokenizer)"
            )


def sentence_words(shown: str, sentence: str, offsets: list, segments: list[int] | None) -> list[int | None]:
    """The word of `sentence` (`token_words`) each token of its row holds, the row read from `shown` (the sentence
    after its `source_prefix` and register tag) with its `segments`: None for the prefix, the tag, the separator and
    every token of the context (segment 1), which no target word may be aligned to."""
    before = len(re.findall(r"\S+", shown)) - len(re.findall(r"\S+", sentence))  # the prefix's and the tag's words
    sentence_offsets = [(0, 0) if segment else span for span, segment in zip(offsets, segments or [0] * len(offsets))]
    return [None if word is None or word < before else word - before for word in token_words(shown, sentence_offsets)]


def encode_aligned_pairs(
    tokenizer, config, sources: list[str], targets: list[str], options: TranslationOptions
) -> tuple[dict, dict, list[list], list[list]]:
    """What every engine aligns given pairs from, once they are checked (`check_pairs`, `check_tokenizer`): the
    sources as translation reads them (`inputs.source_encoding`: begun with `options.source_prefix` and the
    register's tag, the context as segment 1, `token_type_ids`, where the model reads one; cut as translation cuts
    them) and the targets (begun with the token of `options.target_lang`, `tags.target_language_id`) as the model
    reads them, and the word of each of their tokens: the prefix, the tag, the language token and the context
    belong to no word of the given texts (`sentence_words`), so the encoder reads the context and nothing is
    aligned to it."""
    check_pairs(sources, targets)
    check_tokenizer(tokenizer)
    language_id = target_language_id(config, tokenizer, options.target_lang)
    limit = input_limit(tokenizer)
    read = tagged(sources, options.source_prefix)
    rows = source_encoding(tokenizer, config, read, options, default_names(len(sources)), limit, offsets=True)
    segments = rows.get("token_type_ids") or [None] * len(sources)
    source_words = [
        cut(sentence_words(shown, sentence, offsets, row_segments), limit)
        for shown, sentence, offsets, row_segments in zip(
            shown_sources(tokenizer, config, read, options), sources, rows["offset_mapping"], segments
        )
    ]
    source = {key: [cut(row, limit) for row in rows[key]] for key in ("input_ids", "token_type_ids") if key in rows}
    target = target_side(tokenizer)(targets, return_offsets_mapping=True)
    target_words = [token_words(text, offsets) for text, offsets in zip(targets, target["offset_mapping"])]
    if language_id is not None:
        target["input_ids"] = [[language_id, *ids] for ids in target["input_ids"]]
        target_words = [[None, *words] for words in target_words]
    return source, target, source_words, target_words


__all__ = [
    "Alignment",
    "check_tokenizer",
    "encode_aligned_pairs",
    "join_alignments",
    "line_words",
    "pharaoh",
    "sentence_words",
    "token_words",
    "word_alignment",
]
