"""The model shipped in models/transformer-mt-en-de: small, float16 on disk and float32 in memory, the README's
examples are its own translations, and it scores on the test split what its scores.json and card say."""

import json

import torch
from safetensors.torch import load_file
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, pipeline

from transformer_mt.evaluation import evaluate_split
from transformer_mt.tokenization import tokenizer_fingerprint

from .utils import DATA, REPO


MODEL = REPO / "models" / "transformer-mt-en-de"


def test_it_is_small_half_precision_on_disk_and_loads_in_float32():
    assert (MODEL / "model.safetensors").stat().st_size < 10 * 2**20
    assert {tensor.dtype for tensor in load_file(MODEL / "model.safetensors").values()} == {torch.float16}
    model = AutoModelForSeq2SeqLM.from_pretrained(MODEL)
    assert {parameter.dtype for parameter in model.parameters()} == {torch.float32}
    assert model.config.tokenizer_fingerprint == tokenizer_fingerprint(AutoTokenizer.from_pretrained(MODEL))


def test_the_readme_examples_are_its_translations():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    lines = readme[readme.index("<!-- shipped-model examples -->"):].splitlines()[1:]
    table = lines[:next(i for i, line in enumerate(lines) if not line.startswith("|"))]
    rows = table[2:]  # below the header and the rule
    sources = [row.split(" | ")[0][2:] for row in rows]
    assert len(sources) == 5
    translator = pipeline("translation", model=str(MODEL))
    translations = [result["translation_text"] for result in translator(sources)]
    assert rows == [f"| {source} | {translation} |" for source, translation in zip(sources, translations)]


def test_it_scores_what_it_says_on_the_test_split():
    recorded = json.loads((MODEL / "scores.json").read_text())
    results = evaluate_split(str(DATA), "test", str(MODEL), metrics=("bleu", "chrf"), batch_size=32)
    assert results["pairs"] == recorded["pairs"] == 602
    for metric in ("bleu", "chrf"):  # beam 4; another CPU's float rounding may flip a near-tie or two
        assert abs(results["scores"][metric]["score"] - recorded["scores"][metric]["score"]) < 0.3
    assert recorded["scores"]["bleu"]["score"] >= 25
    card = (MODEL / "README.md").read_text(encoding="utf-8")
    assert f"| {recorded['scores']['bleu']['score']:.2f} | {recorded['scores']['chrf']['score']:.2f} |" in card
