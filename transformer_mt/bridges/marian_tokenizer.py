"""A fast tokenizer for an imported Marian / Opus-MT model: its SentencePiece models and vocab.json as `tokenizers`
pipelines, which give the character offsets that span repair, inline markup, word alignments and the glossary's word
swap read, and the ids transformers' slow `MarianTokenizer` gives.

Opus-MT's ids are not the SentencePiece models' own. vocab.json numbers the pieces of both models (`</s>` 0, `<unk>`
1, ..., `<pad>` last; target_vocab.json beside it when each side has its own), and `MarianTokenizer` segments source
text with source.spm, target text with target.spm, and looks each piece up there. So each side here is a Unigram
model over vocab.json's ids, its normalizer and dummy prefix those of its SentencePiece model (as transformers'
`SpmConverter` builds them), and each token of vocab.json is, to that side:

- a piece of its SentencePiece model: that piece, with its score;
- `</s>`, `<unk>`, `<pad>`: special tokens; `>>fra<<`-style language tokens: added tokens, kept whole;
- one character its model does not know (SentencePiece writes it as an unknown piece, which MarianTokenizer looks up
  in vocab.json): that token, scored as SentencePiece scores an unknown character (the lowest piece's score less
  10; no piece of the model holds the character, so every segmentation passes through it alike);
- any other token (a piece only the other side's model writes): its name behind `OTHER_SIDE`, which no text holds,
  so that the Unigram model never matches it; the decoder drops the mark.

Where it differs from MarianTokenizer (in none of the two test files' 2,102 lines, either side): MarianTokenizer
cuts a language token only from the start of a text, and gives an unlisted `>>xx<<` there `<unk>`; here a listed
one is kept whole anywhere and an unlisted one is text. A run of several characters the model does not know is one
unknown piece to SentencePiece (`<unk>`, unless vocab.json lists the run); here each character the other side knows
is its own token. Decoded with the special tokens shown, a text has no space after them.
"""

import re

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

from ..tags import LANGUAGE_TOKEN
from ..tokenization import TransformerMTTokenizerFast


OTHER_SIDE = "\uffff"  # a noncharacter: the mark before a token this side's SentencePiece model never writes
_UNKNOWN_PENALTY = 10.0  # SentencePiece scores an unknown character as its lowest piece less this
_NORMAL, _USER_DEFINED = 1, 4  # SentencePiece's piece types that text is segmented into
_STRIP = 1 << 16  # MarianTokenizer strips the decoded text: every space at either end


def read_spm(serialized: bytes):
    """The ModelProto of a serialized SentencePiece model (`SentencePieceProcessor.serialized_model_proto()`)."""
    from sentencepiece import sentencepiece_model_pb2  # the bridges extra; needs protobuf

    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(serialized)
    return proto


def spm_problem(proto, vocab: dict[str, int]) -> str | None:
    """Why a side cannot be given MarianTokenizer's ids here, or None."""
    if proto.trainer_spec.model_type != 1:
        return "its SentencePiece model is not a Unigram one"
    if proto.trainer_spec.byte_fallback or proto.trainer_spec.treat_whitespace_as_suffix:
        return "its SentencePiece model falls back to bytes or marks spaces at the end of words"
    if sorted(vocab.values()) != list(range(len(vocab))):
        return "its vocabulary's ids are not 0, 1, 2, ... without gaps"
    missing = [piece.piece for piece in proto.pieces if piece.type == _NORMAL and piece.piece not in vocab]
    if missing:  # MarianTokenizer gives them <unk>; a Unigram model over vocab.json's ids cannot write them at all
        return f"{len(missing)} pieces of its SentencePiece model are not in its vocabulary, e.g. {missing[:3]}"
    return None


def side_backend(proto, vocab: dict[str, int], special_tokens: list[str], unk_token: str, eos_token: str):
    """One side's `tokenizers` pipeline: `proto`'s segmentation over `vocab`'s ids, `</s>` after every text."""
    scores = {piece.piece: piece.score for piece in proto.pieces if piece.type in (_NORMAL, _USER_DEFINED)}
    lowest = min(piece.score for piece in proto.pieces if piece.type == _NORMAL)
    languages = [token for token in vocab if LANGUAGE_TOKEN.fullmatch(token) and token not in scores]
    kept = set(special_tokens) | set(languages)
    entries = [("", 0.0)] * len(vocab)
    for token, token_id in vocab.items():
        if token in scores:
            entries[token_id] = (token, scores[token])
        elif token in kept:
            entries[token_id] = (token, lowest)
        elif len(token) == 1:  # an unknown character to this side: MarianTokenizer looks it up in vocab.json
            entries[token_id] = (token, lowest - _UNKNOWN_PENALTY)
        else:
            entries[token_id] = (OTHER_SIDE + token, lowest)
    backend = Tokenizer(models.Unigram(entries, unk_id=vocab[unk_token], byte_fallback=False))
    backend.normalizer = _normalizer(proto.normalizer_spec)
    # The dummy prefix on every stretch between added tokens: MarianTokenizer hands each to SentencePiece alone.
    prefix = "always" if proto.normalizer_spec.add_dummy_prefix else "never"
    steps = [pre_tokenizers.Metaspace(replacement="▁", prepend_scheme=prefix, split=False)]
    user_defined = sorted((p.piece for p in proto.pieces if p.type == _USER_DEFINED), key=len, reverse=True)
    if user_defined:  # SentencePiece writes them whole, always
        steps.append(pre_tokenizers.Split(Regex("|".join(map(re.escape, user_defined))), behavior="isolated"))
    backend.pre_tokenizer = pre_tokenizers.Sequence(steps)
    backend.decoder = decoders.Sequence(
        [
            decoders.Replace(OTHER_SIDE, ""),
            decoders.Replace("▁", " "),
            decoders.Fuse(),
            decoders.Strip(content=" ", left=_STRIP, right=_STRIP),
        ]
    )
    # MarianTokenizer ends a text, and a pair of texts, with </s> alone.
    backend.post_processor = processors.TemplateProcessing(
        single=f"$A:0 {eos_token}:0", pair=f"$A:0 $B:0 {eos_token}:0", special_tokens=[(eos_token, vocab[eos_token])]
    )
    backend.add_special_tokens([AddedToken(token, special=True, normalized=False) for token in special_tokens])
    backend.add_tokens([AddedToken(token, special=False, normalized=False) for token in languages])
    return backend


def _normalizer(spec):
    """SentencePiece's normalization, in its order: the character map, extra spaces, spaces as "▁"."""
    steps = [normalizers.Precompiled(spec.precompiled_charsmap)] if spec.precompiled_charsmap else []
    if spec.remove_extra_whitespaces:  # only spaces: SentencePiece leaves other whitespace alone
        steps += [normalizers.Replace(Regex(r"\A +| +\z"), ""), normalizers.Replace(Regex(" {2,}"), " ")]
    if spec.escape_whitespaces:
        steps.append(normalizers.Replace(" ", "▁"))
    if spec.add_dummy_prefix:  # Metaspace adds no prefix to a text that starts with "▁"; SentencePiece does
        steps.append(normalizers.Replace(Regex(r"\A▁"), "▁▁"))
    return normalizers.Sequence(steps)


def fast_marian_tokenizer(slow) -> TransformerMTTokenizerFast:
    """The fast tokenizer that gives a `MarianTokenizer`'s ids, source and target side, with character offsets; a
    ValueError says why when its files do not allow one (BPE or byte-fallback SentencePiece models, pieces missing
    from vocab.json, special tokens at other ids on the two sides)."""
    special_tokens = [str(token) for token in slow.all_special_tokens]
    sides = []
    for spm, vocab, name in (
        (slow.spm_source, slow.encoder, "source"),
        (slow.spm_target, slow.target_encoder if slow.separate_vocabs else slow.encoder, "target"),
    ):
        proto = read_spm(spm.serialized_model_proto())
        problem = spm_problem(proto, vocab)
        if problem is not None:
            raise ValueError(f"the {name} side has no fast tokenizer with MarianTokenizer's ids: {problem}")
        tokens = [token for token in special_tokens if token in vocab]
        sides.append(side_backend(proto, vocab, tokens, str(slow.unk_token), str(slow.eos_token)))
    return TransformerMTTokenizerFast(
        tokenizer_object=sides[0],
        target_tokenizer_object=sides[1],
        pad_token=str(slow.pad_token),
        eos_token=str(slow.eos_token),
        unk_token=str(slow.unk_token),
        bos_token=None,  # Marian decoding starts from <pad>, the config's decoder_start_token_id
        model_max_length=slow.model_max_length,
        model_input_names=slow.model_input_names,  # no token_type_ids: Marian has no segments
    )


__all__ = ["OTHER_SIDE", "fast_marian_tokenizer", "read_spm", "side_backend", "spm_problem"]
