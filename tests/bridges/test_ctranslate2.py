"""TransformerMT -> CTranslate2: the Translator decodes exactly as generate() does, for every config variant."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, BertConfig, BertModel

from transformer_mt import train_tokenizer

from ..utils import (
    ABSOLUTE_POSITION_TYPES,
    COPY_CORPUS,
    POSITION_TYPES,
    REPO,
    require,
    tiny_config,
    tiny_model,
    train_copy_model,
)


ctranslate2 = require("ctranslate2", "the export needs ctranslate2: pip install 'ctranslate2>=4.8,<5'")
from transformer_mt.bridges.ctranslate2 import (  # noqa: E402
    SINUSOID_POSITIONS,
    export_ctranslate2,
    export_problem,
    exported_max_positions,
    generated_tokens,
    hypothesis_text,
    segmented_tokens,
    source_tokens,
    translate_options,
)
from transformer_mt.scripts.export_ctranslate2 import main as export_main  # noqa: E402


# Of different lengths, seen and unseen in training, so outputs differ and end at different steps.
SENTENCES = [
    "Open the file.",
    "Click the Save button.",
    "Select the rows that you want to delete.",
    "Press Enter.",
    "Schließen Sie das Dialogfenster und klicken Sie auf Speichern.",
    "Format",
]
MAX_NEW_TOKENS = 24
EXPORTED_POSITION_TYPES = [*ABSOLUTE_POSITION_TYPES, "rotary"]  # ALiBi is refused: CTranslate2 has it in decoders only


@pytest.fixture(scope="module")
def tokenizer():
    return train_tokenizer(COPY_CORPUS * 4, vocab_size=320)


def save(model, tokenizer, path: Path) -> Path:
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def generate_tokens(model, tokenizer, sentences, num_beams: int) -> list[list[str]]:
    batch = tokenizer(sentences, return_tensors="pt", padding=True)
    with torch.no_grad():
        # early_stopping=True is the beam search CTranslate2 implements (see export_ctranslate2's docstring).
        output = model.generate(
            **batch, num_beams=num_beams, do_sample=False, max_new_tokens=MAX_NEW_TOKENS, early_stopping=True
        )
    return generated_tokens(tokenizer, output, model.generation_config.eos_token_id)


def translate_tokens(model_dir, tokenizer, sentences, num_beams: int, compute_type: str = "float32"):
    translator = ctranslate2.Translator(str(model_dir), compute_type=compute_type, intra_threads=1)
    results = translator.translate_batch(
        source_tokens(tokenizer, sentences), **translate_options(num_beams, MAX_NEW_TOKENS)
    )
    return [result.hypotheses[0] for result in results]


def assert_same_decoding(model, tokenizer, exported, sentences=SENTENCES, num_beams: int = 1):
    expected = generate_tokens(model, tokenizer, sentences, num_beams)
    # Guard the comparison's power: outputs that differ per sentence and stop at </s> before the limit.
    assert len({tuple(tokens) for tokens in expected}) > 1
    assert any(tokens[-1] == tokenizer.eos_token and len(tokens) < MAX_NEW_TOKENS for tokens in expected)
    assert translate_tokens(exported, tokenizer, sentences, num_beams) == expected


@pytest.mark.parametrize("position_type", EXPORTED_POSITION_TYPES)
@pytest.mark.parametrize("normalize_before", [False, True], ids=["post-LN", "pre-LN"])
def test_greedy_and_beam_decoding_match_generate(position_type, normalize_before, tokenizer, tmp_path):
    model = train_copy_model(tokenizer, position_embedding_type=position_type, normalize_before=normalize_before)
    exported = export_ctranslate2(str(save(model, tokenizer, tmp_path / "model")), str(tmp_path / "ct2"))
    model = AutoModelForSeq2SeqLM.from_pretrained(tmp_path / "model").eval()  # what the export read
    assert_same_decoding(model, tokenizer, exported, num_beams=1)
    assert_same_decoding(model, tokenizer, exported, num_beams=4)


@pytest.mark.parametrize(
    "overrides",
    [
        dict(
            sinusoidal_layout="concatenated",
            layernorm_embedding=True,
            scale_embedding=False,
            type_vocab_size=0,
            activation_function="gelu",
            layer_norm_eps=1e-3,
        ),
        dict(
            position_embedding_type="learned",
            share_encoder_decoder_embeddings=False,
            tie_word_embeddings=False,
            use_final_logits_bias=True,
            decoder_layers=1,
            decoder_attention_heads=2,
            decoder_ffn_dim=48,
            activation_function="silu",
            normalize_before=True,
        ),
        dict(
            position_embedding_type="rotary",
            type_vocab_size=0,
            scale_embedding=False,
            layernorm_embedding=True,
            share_encoder_decoder_embeddings=False,
        ),
    ],
    ids=["concatenated-layernorm-unscaled-gelu", "separate-vocab-untied-bias-silu", "rotary-unsegmented-unscaled"],
)
def test_config_variants_match_generate(overrides, tokenizer, tmp_path):
    model = train_copy_model(tokenizer, **overrides)
    if not model.config.share_encoder_decoder_embeddings:
        assert model.model.decoder.get_input_embeddings() is not model.get_input_embeddings()
    exported = export_ctranslate2(str(save(model, tokenizer, tmp_path / "model")), str(tmp_path / "ct2"))
    assert_same_decoding(model, tokenizer, exported)
    ct2_config = json.loads((tmp_path / "ct2" / "config.json").read_text())
    assert ct2_config["layer_norm_epsilon"] == pytest.approx(model.config.layer_norm_eps)


def test_separate_vocabularies_export_both_and_decode_as_generate(tmp_path):
    """Source and target vocabularies of their own (target_tokenizer.json): two CTranslate2 vocabularies."""
    targets = [f"{line} Ende {i}." for i, line in enumerate(COPY_CORPUS)]  # a target vocabulary unlike the source's
    tokenizer = train_tokenizer(COPY_CORPUS * 4, vocab_size=320, target_texts=targets * 4, target_vocab_size=300)
    model = train_copy_model(
        tokenizer, targets, decoder_vocab_size=len(tokenizer.target_tokenizer), share_encoder_decoder_embeddings=False
    )
    assert tokenizer.get_vocab() != tokenizer.target_tokenizer.get_vocab()
    exported = export_ctranslate2(str(save(model, tokenizer, tmp_path / "model")), str(tmp_path / "ct2"))
    source = json.loads((tmp_path / "ct2" / "source_vocabulary.json").read_text())
    target = json.loads((tmp_path / "ct2" / "target_vocabulary.json").read_text())
    assert source == tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    assert target == tokenizer.target_tokenizer.convert_ids_to_tokens(list(range(len(tokenizer.target_tokenizer))))
    loaded = AutoTokenizer.from_pretrained(tmp_path / "ct2")  # the export holds both vocabularies' tokenizer
    assert loaded.separate_vocabs
    assert_same_decoding(model, loaded, exported, sentences=COPY_CORPUS[:6])
    with torch.no_grad():
        ids = model.generate(
            **loaded(COPY_CORPUS[:6], return_tensors="pt", padding=True), max_new_tokens=MAX_NEW_TOKENS
        )
    translations = [
        hypothesis_text(loaded, tokens) for tokens in translate_tokens(exported, loaded, COPY_CORPUS[:6], 1)
    ]
    assert translations == loaded.target_tokenizer.batch_decode(ids, skip_special_tokens=True)
    assert any("Ende" in text for text in translations)  # target words, read with the target vocabulary


def test_sinusoid_beyond_max_position_embeddings(tokenizer, tmp_path):
    model = train_copy_model(tokenizer, max_position_embeddings=16)
    exported = export_ctranslate2(str(save(model, tokenizer, tmp_path / "model")), str(tmp_path / "ct2"))
    long_sentence = " ".join(SENTENCES)  # far more than 16 tokens: positions the sinusoid extends to
    assert len(tokenizer(long_sentence)["input_ids"]) > 40
    assert translate_tokens(exported, tokenizer, [long_sentence], 1) == generate_tokens(
        model, tokenizer, [long_sentence], 1
    )


def test_int8_export_translates(tokenizer, tmp_path):
    model = train_copy_model(tokenizer)
    exported = export_ctranslate2(
        str(save(model, tokenizer, tmp_path / "model")), str(tmp_path / "ct2"), quantization="int8"
    )
    vocabulary = set(tokenizer.get_vocab())
    hypotheses = translate_tokens(exported, tokenizer, SENTENCES, 1, compute_type="int8")
    assert len(hypotheses) == len(SENTENCES) and any(hypotheses)
    assert all(token in vocabulary for tokens in hypotheses for token in tokens)
    exported_tokenizer = AutoTokenizer.from_pretrained(exported)  # the export carries its tokenizer
    assert exported_tokenizer("Open the file.")["input_ids"] == tokenizer("Open the file.")["input_ids"]


def test_another_model_type_is_rejected(tmp_path):
    BertModel(
        BertConfig(vocab_size=30, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32)
    ).save_pretrained(tmp_path / "bert")
    with pytest.raises(ValueError, match="holds a 'bert' checkpoint, not a TransformerMT"):
        export_ctranslate2(str(tmp_path / "bert"), str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "overrides, message",
    [
        (dict(activation_function="mish"), "`activation_function`='mish' has no CTranslate2 equivalent"),
        (dict(vocab_size=400), "The tokenizer has 3.. tokens but `vocab_size` is 400"),
    ],
    ids=["activation", "vocab-size"],
)
def test_unsupported_config_is_named(overrides, message, tokenizer, tmp_path):
    model = tiny_model(**{"vocab_size": len(tokenizer), **overrides})
    with pytest.raises(ValueError, match=message):
        export_ctranslate2(str(save(model, tokenizer, tmp_path / "model")), str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


@pytest.mark.slow  # the export command as a process of its own
def test_non_empty_output_is_kept_unless_forced(tokenizer, tmp_path):
    model_dir = save(tiny_model(vocab_size=len(tokenizer)), tokenizer, tmp_path / "model")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="is not empty"):
        export_ctranslate2(str(model_dir), str(tmp_path / "out"))
    assert sorted(path.name for path in (tmp_path / "out").iterdir()) == ["keep.txt"]

    script = [sys.executable, str(REPO / "scripts" / "export_ctranslate2.py"), str(model_dir), str(tmp_path / "out")]
    result = subprocess.run(script, capture_output=True, text=True, timeout=300)
    assert result.returncode == 2 and result.stderr.strip().splitlines() == [
        f"error: Output directory {str(tmp_path / 'out')!r} is not empty; pass --force to write into it anyway."
    ]
    # The command's refusal above is its own process's; forced, the same main runs here (a process start is seconds)
    export_main([str(model_dir), str(tmp_path / "out"), "--force"])
    assert (tmp_path / "out" / "model.bin").exists() and (tmp_path / "out" / "keep.txt").read_text() == "mine"
    ctranslate2.Translator(str(tmp_path / "out"))  # the forced export is complete and loadable


@pytest.mark.parametrize("position_type", sorted(set(POSITION_TYPES) - set(EXPORTED_POSITION_TYPES)))
def test_alibi_is_refused_by_name_before_anything_is_written(position_type, tokenizer, tmp_path):
    model = tiny_model(position_embedding_type=position_type, vocab_size=len(tokenizer))
    save(model, tokenizer, tmp_path / "model")
    with pytest.raises(
        ValueError,
        match=rf"position_embedding_type='{position_type}' cannot be exported to "
        r"CTranslate2: .*Sinusoidal, learned and rotary positions can\.",
    ):
        export_ctranslate2(str(tmp_path / "model"), str(tmp_path / "ct2"))
    assert not (tmp_path / "ct2").exists()


@pytest.mark.parametrize("position_type", POSITION_TYPES)
def test_export_problem_and_positions_are_known_from_the_config(position_type):
    """What the engines ask before exporting: whether a config exports (why not) and how long its decoder's
    position table is (learned: its rows; sinusoids: at least SINUSOID_POSITIONS; in attention: no table)."""
    config = tiny_config(position_embedding_type=position_type, max_position_embeddings=48)
    problem = export_problem(config)
    assert (problem is None) == (position_type in EXPORTED_POSITION_TYPES)
    if problem is not None:
        assert problem.startswith(f"position_embedding_type='{position_type}' cannot be exported to CTranslate2: ")
    assert exported_max_positions(config) == {"learned": 48, "sinusoidal": SINUSOID_POSITIONS}.get(position_type)
    assert exported_max_positions(
        tiny_config(position_embedding_type=position_type, max_position_embeddings=2048)
    ) == (2048 if position_type in ABSOLUTE_POSITION_TYPES else None)
    mish = export_problem(tiny_config(position_embedding_type=position_type, activation_function="mish"))
    assert mish == problem if problem else mish.startswith("`activation_function`='mish' has no CTranslate2")


@pytest.mark.parametrize("position_type", EXPORTED_POSITION_TYPES)
def test_a_model_trained_with_context_reads_its_segments_as_generate_does(position_type, tokenizer, tmp_path):
    """A model trained with context (issue 52) is exported with a second source embedding of its segments: a
    sentence with its context as segment 1 decodes as generate() decodes it, and a sentence alone as before."""
    model = train_copy_model(tokenizer, position_embedding_type=position_type, source_context=True)
    with torch.no_grad():  # a segment-1 vector training on single sentences never moved: make it matter
        model.model.encoder.embeddings.token_type_embeddings.weight[1].normal_(std=1.0)
    exported = export_ctranslate2(str(save(model, tokenizer, tmp_path / "model")), str(tmp_path / "ct2"))
    model = AutoModelForSeq2SeqLM.from_pretrained(tmp_path / "model").eval()
    translator = ctranslate2.Translator(str(exported), compute_type="float32", intra_threads=1)
    context = "Menu of the file dialog"
    for num_beams in (1, 4):
        batch = tokenizer(
            SENTENCES, [context] * len(SENTENCES), return_tensors="pt", padding=True, return_token_type_ids=True
        )
        with torch.no_grad():
            output = model.generate(
                **batch, num_beams=num_beams, do_sample=False, max_new_tokens=MAX_NEW_TOKENS, early_stopping=True
            )
        expected = generated_tokens(tokenizer, output, model.generation_config.eos_token_id)
        alone = generate_tokens(model, tokenizer, SENTENCES, num_beams)
        assert expected != alone  # the context changes what the model writes
        pairs = tokenizer(SENTENCES, [context] * len(SENTENCES), return_token_type_ids=True)
        sources = [
            segmented_tokens(tokenizer.convert_ids_to_tokens(ids), segments)
            for ids, segments in zip(pairs["input_ids"], pairs["token_type_ids"])
        ]
        results = translator.translate_batch(sources, **translate_options(num_beams, MAX_NEW_TOKENS))
        assert [result.hypotheses[0] for result in results] == expected
        results = translator.translate_batch(
            source_tokens(tokenizer, SENTENCES, model.config), **translate_options(num_beams, MAX_NEW_TOKENS)
        )
        assert [result.hypotheses[0] for result in results] == alone
