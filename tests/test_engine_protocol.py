"""The engine protocol (transformer_mt.engines.protocol): both engines implement it, a fake one stands in for them,
the seed reaches both on every input path, and a length a learned position table cannot hold is refused in one line
on both."""

import pytest

from transformer_mt.engines import Engine, EngineSettings, GenerateEngine, load_engine
from transformer_mt.options import TranslationOptions
from transformer_mt.scripts import translate as translate_script
from transformer_mt.translation import translate_stream, translate_texts

from .utils import require, save_copy_model


require("ctranslate2", "the CTranslate2 engine needs the [fast] extra")


@pytest.fixture(scope="module")
def learned(tmp_path_factory):
    """A copy-trained tiny model with a 64-row learned position table and a tokenizer that sets no input limit."""
    path = tmp_path_factory.mktemp("learned") / "model"
    save_copy_model(path, position_embedding_type="learned", max_position_embeddings=64)
    return path


def test_both_engines_are_engines_and_a_fake_one_stands_in(learned):
    for name in ("transformers", "ctranslate2"):
        engine = load_engine(str(learned), name)
        assert isinstance(engine, Engine) and engine.name == name and engine.max_positions == 64
        assert engine.device == "cpu"

    class Upper:  # what the protocol asks, no more
        name, reason, device, workers, max_positions = "upper", "test", "cpu", 1, None
        calibration = calibration_problem = None  # the protocol's: no calibration beside it
        config = load_engine(str(learned), "transformers").config
        generation_config = tokenizer = None

        def translate_sentences(self, sentences, options, names=None, target_prefix=None):
            return [[(sentence.upper(), None)] for sentence in sentences]

    assert translate_texts(Upper(), ["Open it. Close it.", ""], TranslationOptions()) == [
        [("OPEN IT. CLOSE IT.", None)],
        [],
    ]


@pytest.mark.parametrize("engine", ["transformers", "ctranslate2"])
def test_the_seed_reaches_the_engine_on_every_input_path(learned, tmp_path, capsys, engine):
    """Lines, and a .po file, whose path returned before the CTranslate2 seed was set."""
    polib = require("polib", "the .po format needs the [files] extra")
    catalogue = polib.POFile()
    for text in ("Open the file.", "Close the dialog window.", "Click the Save button."):
        catalogue.append(polib.POEntry(msgid=text, msgstr=""))
    catalogue.save(str(tmp_path / "in.po"))
    sampling = ["--model", str(learned), "--engine", engine, "--do_sample", "--seed", "7", "--no_progress"]
    written = []
    for run in range(2):
        output = tmp_path / f"out{run}.po"
        translate_script.main([*sampling, "--input", str(tmp_path / "in.po"), "--output", str(output)])
        written.append([entry.msgstr for entry in polib.pofile(str(output))])
        translate_script.main([*sampling, "Open the file.", "Close the dialog window."])
        written.append(capsys.readouterr().out)
    assert written[0] == written[2] and written[1] == written[3]
    stream = load_engine(str(learned), engine)
    outputs = [[], []]
    for output in outputs:
        translate_stream(stream, ["Open the file."] * 3, output.append, TranslationOptions(do_sample=True, seed=7))
    assert outputs[0] == outputs[1]


def test_a_seed_repeats_sampling_on_a_loaded_ctranslate2_engine_with_two_workers(learned):
    """CTranslate2 draws from one generator per worker thread, seeded when the thread first samples: call after call
    on one engine, batches spread over two workers, the same seed gives the same texts and another seed others."""
    engine = load_engine(str(learned), EngineSettings("ctranslate2", inter_threads=2))
    sentences = [
        "Open the file.",
        "Close the dialog window now.",
        "Click the Save button to keep the changes.",
        "Print it.",
        "Select the text you want to copy and paste it here.",
    ]
    options = TranslationOptions(do_sample=True, seed=7, temperature=4.0, batch_size=1)
    runs = [translate_texts(engine, sentences, options) for _ in range(3)]
    assert runs[0] == runs[1] == runs[2]
    assert translate_texts(engine, sentences, options.replace(seed=8)) != runs[0]
    assert translate_texts(engine, sentences, options) == runs[0]


@pytest.mark.parametrize("engine", ["transformers", "ctranslate2"])
def test_a_length_past_a_learned_table_is_refused_in_one_line(learned, capsys, engine):
    long_line = "Click the Save button and close the dialog window " * 30
    command = ["--model", str(learned), "--engine", engine, "--no_progress", "--no_split_sentences"]
    with pytest.raises(SystemExit) as stopped:
        translate_script.main([*command, "Open the file.", long_line])
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert (
        stopped.value.code == 2
        and error.startswith("error: Text 2 has ")
        and error.endswith(
            "tokens and this model reads at most 64 (its position table): shorten it, or split it into sentences"
        )
    )
    with pytest.raises(SystemExit) as stopped:
        translate_script.main([*command, "--max_new_tokens", "200", "Open the file."])
    assert stopped.value.code == 2 and capsys.readouterr().err.strip().splitlines()[-1] == (
        "error: --max_new_tokens 200 is more than this model can write: its decoder's position table has 64 rows, so "
        "at most 63 new tokens"
    )
    # split into sentences, every sentence fits
    translate_script.main([*command[:-1], "--max_new_tokens", "63", "Open the file. " * 40])
    assert len(capsys.readouterr().out.splitlines()) == 1


def test_generate_engine_reads_the_encoders_table_for_inputs(learned):
    engine = load_engine(str(learned), "transformers")
    assert isinstance(engine, GenerateEngine) and engine.max_input_positions == 64
