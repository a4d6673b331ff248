"""The fast tokenizer of imported Opus-MT models (transformer_mt.bridges.marian_tokenizer): transformers' slow
MarianTokenizer's ids and decoded texts on every line of two test files, source and target side, with character
offsets, on SentencePiece models trained here on the shipped corpus and an Opus-MT-style vocab.json."""

import csv
import io
import json

import pytest
from transformers import AutoTokenizer, MarianTokenizer

from transformer_mt import TransformerMTTokenizerFast
from transformer_mt.bridges.marian import convert_marian
from transformer_mt.bridges.marian_tokenizer import OTHER_SIDE, fast_marian_tokenizer

from ..utils import DATA, REPO, marian_checkpoint, require


spm = require("sentencepiece", "MarianTokenizer and the SentencePiece models need sentencepiece (in the test extra)")
require("google.protobuf", "reading a SentencePiece model needs protobuf (in the test extra)")

# The help-text corpus's test split (shipped), and the UI messages' where ../shared/data lies beside the checkout (a
# clone elsewhere compares the shipped split only: nothing is skipped, the UI lines are simply not there to compare).
UI_TEST = REPO.parent / "shared" / "data" / "en-de-ui" / "test.tsv"
TEST_FILES = {"en-de": (DATA / "test.tsv", 602), **({"en-de-ui": (UI_TEST, 1500)} if UI_TEST.is_file() else {})}
LANGUAGE_TOKENS = (">>fra<<", ">>de<<", ">>spa<<")


def read_tsv(path) -> list[dict]:
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


def train_spm(lines: list[str], path) -> None:
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=model,
        vocab_size=800,
        character_coverage=1.0,
        num_threads=1,
        minloglevel=2,
    )
    path.write_bytes(model.getvalue())


def opus_vocab(*spm_files, extra=()) -> dict[str, int]:
    """An Opus-MT vocab.json: `</s>` 0, `<unk>` 1, the pieces of the models (each once), `extra`, `<pad>` last; so
    no piece has its SentencePiece id (`<unk>` 0, `<s>` 1, `</s>` 2 there)."""
    vocab = {"</s>": 0, "<unk>": 1}
    for path in spm_files:
        processor = spm.SentencePieceProcessor(model_file=str(path))
        for i in range(processor.get_piece_size()):
            if not (processor.is_control(i) or processor.is_unknown(i)):
                vocab.setdefault(processor.id_to_piece(i), len(vocab))
    for token in (*extra, "<pad>"):
        vocab[token] = len(vocab)
    return vocab


@pytest.fixture(scope="module")
def opus(tmp_path_factory):
    """SentencePiece models trained on 3,000 lines of each side of the shipped corpus's training split, and the
    slow and fast tokenizers of two Opus-MT layouts: one vocab.json for both sides (with language tokens), and a
    vocab.json and target_vocab.json of their own (the same size, so that `<pad>` has one id)."""
    folder = tmp_path_factory.mktemp("opus")
    rows = read_tsv(DATA / "train.tsv")[:3000]
    for side in ("en", "de"):
        train_spm([row[side] for row in rows], folder / f"{side}.spm")
    vocab = opus_vocab(folder / "en.spm", folder / "de.spm", extra=LANGUAGE_TOKENS)
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "source_vocab.json").write_text(json.dumps(opus_vocab(folder / "en.spm")))
    (folder / "target_vocab.json").write_text(json.dumps(opus_vocab(folder / "de.spm")))
    spm_files = str(folder / "en.spm"), str(folder / "de.spm")
    shared = MarianTokenizer(*spm_files, str(folder / "vocab.json"))
    separate = MarianTokenizer(
        *spm_files,
        str(folder / "source_vocab.json"),
        target_vocab_file=str(folder / "target_vocab.json"),
        separate_vocabs=True,
    )
    tokenizers = {"folder": folder, "vocab": vocab}
    for name, slow in (("shared", shared), ("separate", separate)):
        fast_marian_tokenizer(slow).save_pretrained(folder / name)
        tokenizers[name] = (slow, AutoTokenizer.from_pretrained(folder / name))  # as a converted model loads it
    return tokenizers


@pytest.fixture(scope="module", params=sorted(TEST_FILES))
def test_file(request):
    path, lines = TEST_FILES[request.param]
    rows = read_tsv(path)
    assert len(rows) == lines
    return rows


@pytest.mark.parametrize("layout", ["shared", "separate"])
@pytest.mark.parametrize("side", ["source", "target"])
def test_the_ids_and_decoded_texts_are_marian_tokenizers_on_every_line(opus, test_file, layout, side):
    slow, fast = opus[layout]
    texts = [row["en" if side == "source" else "de"] for row in test_file]
    asked = (lambda batch: {"text": batch}) if side == "source" else (lambda batch: {"text_target": batch})
    expected, ids = slow(**asked(texts))["input_ids"], fast(**asked(texts))["input_ids"]
    assert sum(a == b for a, b in zip(expected, ids, strict=True)) == len(texts)  # every line: 602 and 1,500
    if layout == "separate" and side == "source":
        return  # MarianTokenizer names source ids with the target vocabulary: its source decode is no reference
    for skip in (True, False):
        decoded = [fast.decode(row, skip_special_tokens=skip, use_source_tokenizer=side == "source") for row in ids]
        wanted = [slow.decode(row, skip_special_tokens=skip, use_source_tokenizer=side == "source") for row in ids]
        # MarianTokenizer puts a space after a special token in the middle of a text (<unk> here, in ~1% of lines)
        same = [a == b or (not skip and "<unk>" in b) for a, b in zip(decoded, wanted)]
        assert all(same), [(a, b) for a, b, ok in zip(decoded, wanted, same) if not ok][:3]


def test_each_token_holds_the_characters_it_was_read_from(opus, test_file):
    _, fast = opus["shared"]
    for side, tokenizer in (("en", fast), ("de", fast.target_tokenizer)):
        normalize = spm.SentencePieceProcessor(model_file=str(opus["folder"] / f"{side}.spm")).normalize
        texts = [row[side] for row in test_file]
        encoded = tokenizer(texts, return_offsets_mapping=True)
        for i, text in enumerate(texts):
            pieces, spans = encoded.encodings[i].tokens, encoded["offset_mapping"][i]
            assert pieces[-1] == "</s>" and spans[-1] == (0, 0)
            covered, previous = set(), 0
            for k, (piece, (start, stop)) in enumerate(zip(pieces[:-1], spans[:-1])):
                assert previous <= start < stop <= len(text), (text, piece)
                covered.update(range(start, stop))
                previous = start
                if piece == "▁":  # a space, or the prefix SentencePiece puts before a text: then its first character
                    assert text[start:stop].isspace() or spans[k + 1][0] == start, (text, k)
                else:  # "…" is "..." to SentencePiece: each "." holds the "…"
                    assert piece.lstrip("▁") in normalize(text[start:stop]), (text, piece, start, stop)
            assert all(k in covered or character.isspace() for k, character in enumerate(text)), text


def test_the_tokenizer_a_converted_model_loads(opus):
    slow, fast = opus["shared"]
    vocab = opus["vocab"]
    assert type(fast) is TransformerMTTokenizerFast and fast.is_fast and fast.target_tokenizer.is_fast
    assert len(fast) == len(fast.target_tokenizer) == len(vocab) == len(slow)
    assert (fast.eos_token_id, fast.unk_token_id, fast.pad_token_id) == (0, 1, len(vocab) - 1)
    assert fast.bos_token is None and fast.target_tokenizer.bos_token is None
    # a piece only the other side's model writes keeps its id under a name no text holds, and decodes as itself
    german = next(token for token in vocab if token not in fast.get_vocab() and OTHER_SIDE + token in fast.get_vocab())
    assert fast.get_vocab()[OTHER_SIDE + german] == vocab[german] == fast.target_tokenizer.get_vocab()[german]
    assert fast.decode([vocab[german]], use_source_tokenizer=True) == slow.decode([vocab[german]])
    assert fast.decode([vocab[german]]) == slow.decode([vocab[german]])


def test_language_tokens_are_read_as_marian_tokenizer_reads_them(opus):
    slow, fast = opus["shared"]
    for text in (">>fra<< Hello world.", ">>fra<<Hello world.", ">>spa<<   Click Save", ">>de<<"):
        assert fast(text)["input_ids"] == slow(text)["input_ids"], text
        assert fast.decode(fast(text)["input_ids"], skip_special_tokens=True) == slow.decode(
            slow(text)["input_ids"], skip_special_tokens=True
        )
    encoded = fast(">>fra<< Hello", return_offsets_mapping=True)
    assert encoded["input_ids"][0] == opus["vocab"][">>fra<<"] and encoded["offset_mapping"][:2] == [(0, 7), (8, 9)]


def test_where_it_differs_from_marian_tokenizer(opus):
    """What bridges/marian_tokenizer.py's docstring says it does otherwise, and nothing in the test files does."""
    slow, fast = opus["shared"]
    vocab = opus["vocab"]
    # a listed language token is kept whole anywhere; MarianTokenizer cuts one from the start of a text only
    assert vocab[">>fra<<"] in fast("Hello >>fra<< world")["input_ids"]
    assert vocab[">>fra<<"] not in slow("Hello >>fra<< world")["input_ids"]
    # an unlisted one at the start: <unk> to MarianTokenizer, text here
    assert slow(">>xx<< Hello")["input_ids"][0] == vocab["<unk>"] != fast(">>xx<< Hello")["input_ids"][0]
    # two characters neither SentencePiece model knows: one unknown piece to both
    assert fast("a 你好 b")["input_ids"] == slow("a 你好 b")["input_ids"]


def test_a_checkpoint_whose_files_allow_no_fast_tokenizer_keeps_marian_tokenizer(tmp_path, caplog):
    marian_checkpoint(tmp_path / "marian")
    vocab_file = tmp_path / "marian" / "vocab.json"
    vocab = json.loads(vocab_file.read_text())
    piece = next(token for token in vocab if token.startswith("▁") and len(token) > 2)
    vocab["▁not-a-piece"] = vocab.pop(piece)  # MarianTokenizer gives `piece` <unk>; a Unigram model cannot write it
    vocab_file.write_text(json.dumps(vocab))
    with pytest.raises(
        ValueError, match=r"the source side has no fast tokenizer .* 1 pieces .* not in its vocabulary"
    ):
        fast_marian_tokenizer(AutoTokenizer.from_pretrained(tmp_path / "marian"))
    convert_marian(str(tmp_path / "marian"), str(tmp_path / "converted"))
    assert type(AutoTokenizer.from_pretrained(tmp_path / "converted")).__name__ == "MarianTokenizer"
    assert "keeps MarianTokenizer, which gives no character offsets" in caplog.text
