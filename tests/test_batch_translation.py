"""The stream (transformer_mt.translation.translate_stream) and scripts/translate.py on files, with a model that
copies its input: streamed, batched by length, in input order, the same bytes on 1 or 2 processes."""

import subprocess
import sys

import pytest

from transformer_mt.engines import GenerateEngine
from transformer_mt.options import TranslationOptions
from transformer_mt.scripts import translate as translate_command
from transformer_mt.translation import translate, translate_nbest, translate_stream

from .utils import SCRIPTS, SENTENCES, command_env, overfit, save_tiny


def many_lines(count: int) -> list[str]:
    """`count` lines of different lengths (1-4 sentences joined), with an empty line now and then."""
    return [
        "" if i % 37 == 5 else " ".join(SENTENCES[(i + j) % len(SENTENCES)] for j in range(1 + i % 4))
        for i in range(count)
    ]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """A tiny model taught to copy its input, so that lines that begin differently get different outputs (a random
    model says the same thing to every input, and a line put in the wrong place would go unseen). Copying the first
    6 tokens needs no more than a loss of 0.1: at 0.01 it took twice as long and gave the same outputs."""
    path = tmp_path_factory.mktemp("model")
    model, tokenizer = save_tiny(path)
    batch = tokenizer([line for line in many_lines(64) if line], return_tensors="pt", padding=True)
    labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
    overfit(model, batch, labels, loss_below=0.1)
    model.save_pretrained(path)
    model.generation_config.num_beams = 1
    model.generation_config.save_pretrained(path)
    return path


def test_the_stream_keeps_line_order_and_equals_translate(model_dir):
    from transformer_mt.checkpoints import load_translator

    model, tokenizer = load_translator(model_dir)
    lines = many_lines(90)
    written, progress = [], []
    count = translate_stream(
        GenerateEngine(model, tokenizer),
        iter(lines),
        written.append,
        TranslationOptions(batch_size=4, max_new_tokens=6),
        chunk_size=25,
        progress=progress.append,
    )
    assert count == len(written) == len(lines) and progress == [25, 25, 25, 15]
    assert len(set(written)) >= 5  # lines get different outputs: one in the wrong place would show
    assert [w for w, line in zip(written, lines) if not line] == [""] * lines.count("")
    # every line gets what translate() gives it in the same batch (a batch of one: no padding anywhere)
    for index in (0, 1, 2, 3, 40, 89):
        if lines[index]:
            assert written[index] == translate(model, tokenizer, [lines[index]], batch_size=1, max_new_tokens=6)[0]


def run_translate(launcher: list[str], model_dir, source, output) -> subprocess.CompletedProcess:
    command = [
        *launcher,
        str(SCRIPTS / "translate.py"),
        "--model",
        str(model_dir),
        "--input",
        str(source),
        "--output",
        str(output),
        "--batch_size",
        "8",
        "--max_new_tokens",
        "6",
        "--chunk_size",
        "64",
    ]
    return subprocess.run(command, env=command_env(), capture_output=True, text=True, timeout=600)


@pytest.mark.slow  # translate.py as one process (this one: a process start is seconds), then as two under accelerate
def test_two_processes_write_the_bytes_of_one(tmp_path, model_dir):
    source = tmp_path / "source.txt"
    source.write_text("\n".join(many_lines(300)) + "\n", encoding="utf-8")
    translate_command.main(
        [
            "--model",
            str(model_dir),
            "--input",
            str(source),
            "--output",
            str(tmp_path / "one.de"),
            "--batch_size",
            "8",
            "--max_new_tokens",
            "6",
            "--chunk_size",
            "64",
        ]
    )
    two = run_translate(
        [
            sys.executable,
            "-m",
            "accelerate.commands.launch",
            "--multi_gpu",
            "--num_processes",
            "2",
            "--num_machines",
            "1",
            "--mixed_precision",
            "no",
            "--dynamo_backend",
            "no",
        ],
        model_dir,
        source,
        tmp_path / "two.de",
    )
    assert two.returncode == 0, two.stderr[-3000:]
    written = (tmp_path / "one.de").read_bytes()
    assert written.count(b"\n") == 300 and len(set(written.splitlines())) >= 5
    assert (tmp_path / "two.de").read_bytes() == written
    assert not list(tmp_path.glob("*.partial"))


def test_a_line_that_cannot_be_read_is_named_and_left_empty(tmp_path, capsys, model_dir):
    source = tmp_path / "source.txt"
    source.write_bytes(b"Open the file.\nClose \xff the file.\nSave it.\n")
    with pytest.raises(SystemExit) as exit_info:
        translate_command.main(
            [
                "--model",
                str(model_dir),
                "--input",
                str(source),
                "--output",
                str(tmp_path / "out.de"),
                "--max_new_tokens",
                "4",
                "--no_progress",
            ]
        )
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("error: 1 line(s)") and f"{source}, line 2: not valid UTF-8" in error
    lines = (tmp_path / "out.de").read_text(encoding="utf-8").split("\n")
    assert len(lines) == 4 and lines[1] == "" and lines[3] == ""  # three lines, the second empty; a final newline


def test_an_existing_output_is_never_replaced(tmp_path, capsys, model_dir):
    (tmp_path / "out.de").write_text("my translations\n")
    with pytest.raises(SystemExit) as exit_info:
        translate_command.main(["--model", str(model_dir), "--output", str(tmp_path / "out.de"), "Hello"])
    assert exit_info.value.code == 2 and "exists" in capsys.readouterr().err
    assert (tmp_path / "out.de").read_text() == "my translations\n"


def test_the_stream_translates_sentences_and_joins_them_per_line(model_dir, monkeypatch):
    from transformer_mt.checkpoints import load_translator

    model, tokenizer = load_translator(model_dir)
    lines = ["Click the Save button.  Close the dialog.", "", "Close the dialog.", "   "]
    rows, generate = [], model.generate

    def counting_generate(**inputs):
        rows.append(inputs["input_ids"].shape[0])
        return generate(**inputs)

    monkeypatch.setattr(model, "generate", counting_generate)
    written = []
    engine = GenerateEngine(model, tokenizer)
    translate_stream(engine, iter(lines), written.append, TranslationOptions(max_new_tokens=6))
    alone = [translate(model, tokenizer, [sentence], max_new_tokens=6)[0] for sentence in SENTENCES[::2]]
    assert written == [f"{alone[0]}  {alone[1]}", "", alone[1], ""]
    assert rows[0] == 3  # one batch of the three sentences; the blank lines are never sent
    rows.clear()
    written = []
    translate_stream(engine, iter(lines), written.append, TranslationOptions(max_new_tokens=6, split_sentences=False))
    assert rows == [2] and written == translate(model, tokenizer, lines, max_new_tokens=6, split_sentences=False)
    nbest = []
    translate_stream(
        engine,
        iter(lines[:2]),
        nbest.append,
        TranslationOptions(max_new_tokens=6, num_beams=2, num_return_sequences=2, scores=True),
    )
    assert nbest == [
        translate_nbest(
            model, tokenizer, lines[:1], max_new_tokens=6, num_beams=2, num_return_sequences=2, scores=True
        )[0],
        [],
    ]
