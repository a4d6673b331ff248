"""Fine-tuning an Opus-MT (MarianMT) checkpoint in one step: train.py converts it on load, the loss falls, the run's
checkpoints average, export to CTranslate2 and translate there as generate() does."""

import json

import pytest

from transformer_mt import training
from transformer_mt.checkpoints import load_translator
from transformer_mt.engines import load_engine
from transformer_mt.scripts import average_checkpoints
from transformer_mt.translation import translate

from .utils import MARIAN_TEXT, marian_checkpoint, require


require("sentencepiece", "MarianTokenizer needs sentencepiece (in the test extra)")
require("ctranslate2", "the export needs ctranslate2")
pytestmark = pytest.mark.slow  # end to end: a 150-step fine-tune, averaging, an export


def test_an_opus_mt_checkpoint_fine_tunes_averages_exports_and_translates(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_MT_CACHE", str(tmp_path / "cache"))
    marian_checkpoint(tmp_path / "opus-mt-en-de")
    data = tmp_path / "data"
    data.mkdir()
    pairs = list(zip(MARIAN_TEXT[0:8:2], MARIAN_TEXT[1:8:2]))
    for split, count in (("train", 24), ("validation", 1), ("test", 1)):
        (data / f"{split}.tsv").write_text(
            "en\tde\n" + "".join(f"{en}\t{de}\n" for en, de in pairs * count), encoding="utf-8"
        )
    output = tmp_path / "run"
    trainer = training.run(
        *training.parse_args(
            [
                "--do_train",
                "true",
                "--model_name_or_path",
                str(tmp_path / "opus-mt-en-de"),
                "--data",
                str(data),
                "--output_dir",
                str(output),
                "--max_steps",
                "150",
                "--learning_rate",
                "3e-3",
                "--warmup_steps",
                "0",
                "--per_device_train_batch_size",
                "8",
                "--save_steps",
                "50",
                "--save_total_limit",
                "3",
                "--logging_steps",
                "10",
                "--do_eval",
                "false",
                "--do_predict",
                "false",
                "--report_to",
                "none",
                "--disable_tqdm",
                "true",
                "--seed",
                "0",
            ]
        )
    )
    converted = json.loads((output / "converted-from-marian" / "config.json").read_text())
    assert converted["model_type"] == "transformer_mt" and converted["source_lang"] == "en"
    assert type(trainer.model).__name__ == "TransformerMTForConditionalGeneration"  # not MarianMTModel
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    assert losses[-1] < 0.5 * losses[0], losses
    average_checkpoints.main([str(output), "--last", "2", "--output_dir", str(tmp_path / "averaged")])
    model, tokenizer = load_translator(tmp_path / "averaged")
    assert model.generation_config.bad_words_ids  # Opus-MT's generation config kept: never write <pad>
    engine = load_engine(str(tmp_path / "averaged"), "auto", model=model, tokenizer=tokenizer)
    assert engine.name == "ctranslate2", engine.reason  # exported: bad_words_ids map to suppress_sequences
    sources = [en for en, _ in pairs]
    generated = translate(model, tokenizer, sources)
    assert translate(model, tokenizer, sources, engine=engine) == generated
    assert len(set(generated)) > 1 and all(generated)  # real, differing outputs: a comparison that can fail
