"""Word alignments from cross-attention: tokens to words, the hard alignment, both engines alike, translate.py
--alignments (tests/fixtures/copy-aligner copies random word sequences, so its alignments are the diagonal)."""

import random
from pathlib import Path

import pytest
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

from transformer_mt import TransformerMTConfig
from transformer_mt.engines import GenerateEngine, load_engine
from transformer_mt.engines.alignment import join_alignments, pharaoh, token_words, word_alignment
from transformer_mt.options import TranslationOptions
from transformer_mt.scripts.translate import main as translate_main
from transformer_mt.translation import translate

from .fixtures.make_copy_aligner import WORDS


ALIGNER = Path(__file__).parent / "fixtures" / "copy-aligner"
PLAIN_WORDS = [word for word in WORDS if word.isalpha()]  # no full stop: one sentence a sequence


@pytest.fixture(scope="module")
def aligner():
    return AutoModelForSeq2SeqLM.from_pretrained(ALIGNER).eval(), AutoTokenizer.from_pretrained(ALIGNER)


def sequences(count: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.sample(PLAIN_WORDS, rng.randint(3, 7))) for _ in range(count)]


def diagonal(line: str) -> list[tuple[int, int]]:
    return [(i, i) for i in range(len(line.split()))]


def test_tokens_map_to_the_whitespace_words_of_their_characters():
    text = "Click  the Save-button."
    # a leading space in an offset (byte-level BPE) is skipped, a hyphen joins, a token without characters (</s>)
    # belongs to no word
    assert token_words(text, [(0, 3), (3, 5), (5, 10), (10, 15), (15, 23), (0, 0)]) == [0, 0, 1, 2, 2, None]


def test_each_target_token_aligns_to_the_word_it_attends_to_most():
    attention = [
        [0.1, 0.7, 0.2, 0.0],  # target word 0 -> source token 1 (word 0)
        [0.0, 0.1, 0.3, 0.6],  # target word 1 -> source token 3, </s>: skipped, so token 2 (word 1)
        [0.9, 0.0, 0.0, 0.1],
    ]  # </s> of the target: no word
    assert word_alignment(attention, [0, 0, 1, None], [0, 1, None]) == [(0, 0), (1, 1)]


def test_sentences_alignments_are_numbered_within_their_line():
    joined = join_alignments(
        [[(0, 0), (1, 2)], [(0, 1)]],
        ["Open it.", "Close the window."],
        ["Öffne es jetzt.", "Schließe das Fenster."],
        [" "],
    )
    assert joined == [(0, 0), (1, 2), (2, 4)]
    assert pharaoh(joined) == "0-0 1-2 2-4"
    # sentences joined without whitespace share their touching words (as Chinese is written, or "Hello.World.")
    assert join_alignments([[(0, 0)], [(0, 0)]], ["你好。", "世界。"], ["Hallo.", "Welt."], [""]) == [(0, 0)]
    assert join_alignments([[(1, 1)], [(0, 0)]], ["Open it.", "Now."], ["Öffne es.", "Jetzt."], ["\n"]) == [
        (1, 1),
        (2, 2),
    ]


def test_a_copy_model_aligns_on_the_diagonal(aligner):
    model, tokenizer = aligner
    lines = sequences(20)
    aligned = GenerateEngine(model, tokenizer).align_pairs(lines, lines, TranslationOptions())
    assert sum(alignment == diagonal(line) for alignment, line in zip(aligned, lines)) >= 18


def test_ctranslate2_gives_the_same_alignments(aligner, tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_MT_CACHE", str(tmp_path))
    model, tokenizer = aligner
    lines = sequences(20, seed=2)
    targets = [" ".join(reversed(line.split())) for line in lines]  # not the model's own output: any given pair
    fast = load_engine(str(ALIGNER), "ctranslate2", model=model, tokenizer=tokenizer)
    assert fast.align_pairs(lines, targets, TranslationOptions()) == GenerateEngine(model, tokenizer).align_pairs(
        lines, targets, TranslationOptions()
    )


@pytest.mark.parametrize("engine", ["transformers", "ctranslate2"])
def test_translate_py_writes_a_pharaoh_line_per_input_line(aligner, tmp_path, monkeypatch, engine):
    monkeypatch.setenv("TRANSFORMER_MT_CACHE", str(tmp_path / "cache"))
    model, tokenizer = aligner
    reference = GenerateEngine(model, tokenizer)
    candidates = [
        line
        for line in sequences(40, seed=3)
        if reference.align_pairs([line], [line], TranslationOptions())[0] == diagonal(line)
    ]
    capitalised = next(line for line in candidates[2:] if line[0].isupper())  # starts a sentence
    # two sentences in one line: each is aligned with its translation, numbered within the line
    lines = [candidates[0], "", f"{candidates[1]}. {capitalised}."]
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    translate_main(
        [
            "--model",
            str(ALIGNER),
            "--input",
            str(tmp_path / "in.txt"),
            "--output",
            str(tmp_path / "out"),
            "--alignments",
            str(tmp_path / "align"),
            "--engine",
            engine,
            "--no_progress",
        ]
    )
    translations = (tmp_path / "out").read_text(encoding="utf-8").splitlines()
    assert translations[0] == lines[0]  # the model copies
    written = (tmp_path / "align").read_text(encoding="utf-8").splitlines()
    assert len(written) == 3 and written[1] == ""
    assert written[0] == pharaoh(diagonal(lines[0]))
    first, second = f"{lines[2].split('. ')[0]}.", lines[2].split(". ")[1]
    alone = translate(model, tokenizer, [first, second], split_sentences=False, engine=engine)
    assert translations[2] == " ".join(alone)
    expected = join_alignments(
        reference.align_pairs([first, second], alone, TranslationOptions()), [first, second], alone, [" "]
    )
    assert written[2] == pharaoh(expected) and len(expected) >= len(lines[2].split()) - 2


def test_alignments_with_several_hypotheses_are_refused(tmp_path, capsys):
    with pytest.raises(SystemExit):
        translate_main(
            [
                "--model",
                str(ALIGNER),
                "Click",
                "--alignments",
                str(tmp_path / "a"),
                "--num_return_sequences",
                "2",
                "--num_beams",
                "2",
            ]
        )
    assert "--alignments aligns each line's one translation" in capsys.readouterr().err


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("alignment_layer", 2, r"`alignment_layer` must name one of the 2 decoder layers, in \[-2, 1\].*got 2"),
        ("alignment_heads", 5, r"`alignment_heads` \(5\) must be at most `decoder_attention_heads` \(4\)"),
    ],
)
def test_alignment_settings_are_checked_by_name(field, value, message):
    with pytest.raises(ValueError, match=message):
        TransformerMTConfig(decoder_layers=2, decoder_attention_heads=4, d_model=32, **{field: value})


def test_a_source_tag_aligns_to_nothing_and_the_words_keep_their_numbers(aligner):
    model, tokenizer = aligner
    lines = sequences(5, seed=4)
    tag = PLAIN_WORDS[0]
    engine = GenerateEngine(model, tokenizer)
    with_tag = engine.align_pairs(lines, lines, TranslationOptions(source_prefix=tag))
    written_out = engine.align_pairs([f"{tag} {line}" for line in lines], lines, TranslationOptions())
    for tagged, plain, line in zip(with_tag, written_out, lines):
        # every link to a word keeps it, one number down; a target word that attended most to the tag links to
        # the word it attended to next instead
        assert {(i - 1, j) for i, j in plain if i > 0} <= set(tagged)
        assert all(0 <= i < len(line.split()) for i, _ in tagged)
    assert with_tag != written_out


def test_alignments_need_a_fast_tokenizer_and_say_so(aligner, tmp_path, capsys):
    from transformers import MarianTokenizer

    from transformer_mt.engines.alignment import check_tokenizer

    slow = MarianTokenizer.__new__(MarianTokenizer)  # a slow tokenizer, as a converted Opus-MT model keeps
    with pytest.raises(
        ValueError, match="word alignments need a fast tokenizer's character offsets; this model's is MarianTokenizer"
    ):
        check_tokenizer(slow)
    with pytest.raises(SystemExit):
        translate_main(
            ["--model", str(ALIGNER), "Click", "--output", str(tmp_path / "x"), "--alignments", str(tmp_path / "x")]
        )
    assert "--alignments and --output are both" in capsys.readouterr().err
