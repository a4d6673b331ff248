"""Every command answers an expected mistake with one line naming the cause and exit status 2, and writes nothing."""

import io
import shutil

import pytest

from transformer_mt.checkpoints import load_translator
from transformer_mt.scripts import export_ctranslate2, train, translate

from .utils import DATA, TINY, save_tiny


def fails_with(main, argv, capsys, *fragments) -> str:
    """Run a command's main; it must exit with 2 and print one `error:` line holding every fragment."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def stdin_bytes(monkeypatch, data: bytes):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


def test_translate_a_directory_without_a_model(tmp_path, capsys, model_dir):
    (tmp_path / "empty").mkdir()
    fails_with(
        translate.main,
        ["--model", str(tmp_path / "empty"), "Hello"],
        capsys,
        "holds no saved model: config.json is missing",
    )
    (model_dir / "model.safetensors").unlink()
    fails_with(translate.main, ["--model", str(model_dir), "Hello"], capsys, "model.safetensors is missing")


def test_translate_names_a_truncated_weights_file(capsys, model_dir):
    weights = model_dir / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-100])
    fails_with(translate.main, ["--model", str(model_dir), "Hello"], capsys, f"{weights}: truncated")


def test_translate_names_the_line_that_is_not_utf8(tmp_path, capsys, monkeypatch, model_dir):
    """The other lines are translated; the bad one stays an empty line and is named at the end, with exit 2."""
    source = tmp_path / "input.txt"
    source.write_bytes(b"Click Save.\nClose the window.\nCaf\xe9 au lait\n")
    stdin_bytes(monkeypatch, b"Fine.\n\xff\xfe\n")
    for argv, fragment in (
        (["--input", str(source)], f"{source}, line 3: not valid UTF-8"),
        ([], "<stdin>, line 2: not valid UTF-8"),
    ):
        capsys.readouterr()
        with pytest.raises(SystemExit) as exit_info:
            translate.main(["--model", str(model_dir), "--max_new_tokens", "3", "--no_progress", *argv])
        output = capsys.readouterr()
        assert exit_info.value.code == 2
        assert output.err.strip().splitlines()[-1].startswith("error: 1 line(s)") and fragment in output.err
        assert output.out.count("\n") == (3 if argv else 2) and output.out.endswith("\n\n")


def test_a_line_longer_than_the_model_takes_is_cut_with_a_warning(capsys, monkeypatch, model_dir):
    tokenizer_config = model_dir / "tokenizer_config.json"
    tokenizer_config.write_text(
        tokenizer_config.read_text().replace('"model_max_length": 512', '"model_max_length": 64')
    )
    stdin_bytes(monkeypatch, ("Click the Save button. " * 200 + "\nClose.\n").encode())
    with log_records() as records:
        translate.main(["--model", str(model_dir), "--max_new_tokens", "3", "--no_split_sentences"])
    assert len(capsys.readouterr().out.splitlines()) == 2
    assert any("Text 1 has" in r and "only its first 64 are translated" in r for r in records)
    # split into sentences, only the long sentence is cut, and the warning names it
    long_sentence = "Click the Save button and " * 20 + "close the dialog."
    stdin_bytes(monkeypatch, f"Close.\nClick the Save button. {long_sentence}\n".encode())
    with log_records() as records:
        translate.main(["--model", str(model_dir), "--max_new_tokens", "3"])
    assert len(capsys.readouterr().out.splitlines()) == 2
    length = len(load_translator(model_dir)[1](long_sentence)["input_ids"])
    assert records == [
        f"Text 2, sentence 2 has {length} tokens; only its first 64 are translated (the model's "
        "limit, tokenizer.model_max_length)."
    ]


def test_translate_asks_for_the_language_a_model_does_not_name(tmp_path, capsys):
    save_tiny(tmp_path / "old", source_lang=None)
    model = str(tmp_path / "old")
    with pytest.raises(SystemExit) as exit_info:  # found once the model is loaded (its progress bar above it)
        translate.main(["--model", model, "--output", str(tmp_path / "out.de"), "Close the dialog."])
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert exit_info.value.code == 2 and error.startswith(
        f"error: Splitting the input into sentences needs its language, and {model} has no source_lang in its config"
    )
    assert "pass --source_lang (or source_lang=), or --no_split_sentences" in error
    assert list(tmp_path.iterdir()) == [tmp_path / "old"]  # no output, not even a partial one
    for flags in (["--source_lang", "en"], ["--no_split_sentences"]):
        translate.main(["--model", model, "--max_new_tokens", "3", "--no_progress", *flags, "Close. Save."])
        assert len(capsys.readouterr().out.splitlines()) == 1
    with pytest.raises(SystemExit) as exit_info:
        translate.main(["--model", model, "--source_lang", "en", "--no_split_sentences", "Close."])
    assert exit_info.value.code == 2
    assert "--source_lang applies to sentence splitting: drop it or --no_split_sentences" in capsys.readouterr().err


class log_records:
    """Collect transformer_mt's logged warnings."""

    def __enter__(self):
        import logging

        self.records = []
        self.handler = logging.Handler()
        self.handler.emit = lambda record: self.records.append(record.getMessage())
        self.logger = logging.getLogger("transformer_mt")
        self.logger.addHandler(self.handler)
        return self.records

    def __exit__(self, *exc):
        self.logger.removeHandler(self.handler)


def test_export_without_a_tokenizer(tmp_path, capsys, model_dir):
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (model_dir / name).unlink()
    fails_with(export_ctranslate2.main, [str(model_dir), str(tmp_path / "out")], capsys, "holds no tokenizer")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "flags, fragments",
    [
        (
            ["--d_model", "33", "--encoder_attention_heads", "3", "--decoder_attention_heads", "3"],
            ["`d_model` must be even with position_embedding_type='sinusoidal'"],
        ),
        (["--encoder_attention_heads", "5"], ["must be divisible by `encoder_attention_heads` (5)"]),
        (["--max_source_length", "0"], ["--max_source_length must be >= 1, got 0"]),
        (["--tokenizer_vocab_size", "100"], ["--tokenizer_vocab_size must be >= 261"]),
        (["--position_embedding_type", "lerned"], []),  # argparse: invalid choice
        (["--no_such_flag", "1"], ["--no_such_flag"]),
    ],
)
def test_train_checks_everything_before_writing_anything(tmp_path, capsys, flags, fragments):
    output_dir = tmp_path / "run"
    argv = [*TINY, "--output_dir", str(output_dir), "--do_train", "--max_steps", "2", *flags]
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        train.main(argv)
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert "Traceback" not in error and all(fragment in error for fragment in fragments), error
    assert not output_dir.exists()
    train.main(argv[: -len(flags)])  # the corrected command runs: nothing was left behind to refuse it
    assert (output_dir / "model.safetensors").exists()


@pytest.mark.parametrize(
    "flag, split", [("--do_eval", "validation"), ("--do_predict", "test"), ("--do_train", "train")]
)
def test_train_says_when_a_split_is_missing(tmp_path, capsys, flag, split):
    data = tmp_path / "data"
    data.mkdir()
    for name in ("train", "validation", "test"):
        if name != split:
            shutil.copy(DATA / f"{name}.tsv", data / f"{name}.tsv")
    fails_with(
        train.main,
        [*TINY, "--data", str(data), "--output_dir", str(tmp_path / "run"), flag, "--max_steps", "2"],
        capsys,
        flag,
        f"needs a {split} split, but {data} has only",
    )
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "command, argv, fragment",
    [
        (train, ["--data", "/nonexistent/corpus", "--output_dir", "out", "--do_train"], "/nonexistent/corpus"),
        (train, ["--data", str(DATA), "--output_dir", "out", "--no_such_flag", "1"], "--no_such_flag"),
        (translate, ["--model", "/nonexistent/model", "Hello"], "'/nonexistent/model' is not a directory"),
    ],
)
def test_a_bad_path_or_flag_is_named(tmp_path, capsys, monkeypatch, command, argv, fragment):
    monkeypatch.chdir(tmp_path)
    fails_with(command.main, argv, capsys, fragment)
    assert list(tmp_path.iterdir()) == []


def test_translate_names_a_missing_input_file(capsys, model_dir):
    with pytest.raises(SystemExit) as exit_info:
        translate.main(["--model", str(model_dir), "--input", "/nonexistent.txt"])
    assert exit_info.value.code == 2 and "--input '/nonexistent.txt' does not exist" in capsys.readouterr().err


def test_translate_says_so_when_stdin_is_empty(capsys, monkeypatch, model_dir):
    stdin_bytes(monkeypatch, b"")
    translate.main(["--model", str(model_dir), "--no_progress"])
    output = capsys.readouterr()
    assert output.out == ""
    assert "warning: <stdin> held no lines: nothing was translated" in output.err
