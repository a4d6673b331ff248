"""The translate command's steps (transformer_mt.commands.translate): its options, its output written whole or not at
all as lines or n-best rows, and the command on the shipped model: a line of three sentences gives three translated
sentences."""

import pytest

from transformer_mt.commands.streams import atomic_output
from transformer_mt.commands.translate import line_writer, parse_args
from transformer_mt.options import OptionError
from transformer_mt.scripts import translate as translate_script

from .test_translation import SHIPPED, THREE


def test_splitting_is_on_unless_turned_off_and_the_language_is_the_models_unless_given():
    args = parse_args(["--model", "m", "text"])
    assert (args.options.split_sentences, args.options.source_lang) == (True, None)
    args = parse_args(["--model", "m", "--source_lang", "de", "text"])
    assert (args.options.split_sentences, args.options.source_lang) == (True, "de")
    assert not parse_args(["--model", "m", "--no_split_sentences", "text"]).options.split_sentences
    assert translate_script.parse_args is parse_args  # the command's parser is the library's


def test_decoding_options_are_the_flags_given():
    from transformers import GenerationConfig

    args = parse_args(["--model", "m", "--num_beams", "4", "--num_return_sequences", "3", "--length_penalty", "0.6"])
    assert args.options.generate_controls() == {"length_penalty": 0.6}
    with pytest.raises(OptionError) as error:
        parse_args(["--model", "m", "--num_return_sequences", "3"]).options.beams(GenerationConfig())
    assert error.value.for_command().startswith("--num_return_sequences 3 needs at least as many beams")


def test_a_line_of_three_sentences_gives_three_translated_sentences(capsys):
    translate_script.main(["--model", str(SHIPPED), "--no_progress", THREE])
    assert capsys.readouterr().out == (
        "Öffnen Sie das Menü Extras. Wählen Sie Optionen. Klicken Sie auf OK, um den Dialog zu schließen.\n"
    )
    # whole, one sequence: the same three sentences from this model (before its formality fine-tune it wrote two)
    translate_script.main(["--model", str(SHIPPED), "--no_progress", "--no_split_sentences", THREE])
    assert capsys.readouterr().out == (
        "Öffnen Sie das Menü Extras. Wählen Sie Optionen. Klicken Sie auf OK, um den Dialog zu schließen.\n"
    )
    translate_script.main(
        [
            "--model",
            str(SHIPPED),
            "--no_progress",
            "--num_beams",
            "2",
            "--scores",
            "Choose Options. Click OK to close the dialog.",
        ]
    )
    number, rank, score, text = capsys.readouterr().out.rstrip("\n").split("\t")
    assert (number, rank, text) == ("1", "1", "Wählen Sie Optionen. Klicken Sie auf OK, um den Dialog zu schließen.")


def test_the_output_is_written_whole_or_not_at_all(tmp_path):
    path = str(tmp_path / "out.de")
    with pytest.raises(KeyboardInterrupt):
        with atomic_output(path) as output:
            output.write("half\n")
            assert (tmp_path / "out.de.partial").exists() and not (tmp_path / "out.de").exists()
            raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []
    with atomic_output(path) as output:
        output.write("whole\n")
    assert list(tmp_path.iterdir()) == [tmp_path / "out.de"] and (tmp_path / "out.de").read_text() == "whole\n"


def test_nbest_rows_are_line_number_rank_score_translation(capsys):
    import sys

    write = line_writer(sys.stdout, nbest=True)
    write([("Wählen Sie Optionen.", -0.25), ("Optionen wählen.", -0.5)])
    write([])  # a blank line: no row
    write([("Schließen.", -0.125)])
    assert capsys.readouterr().out == (
        "1\t1\t-0.2500\tWählen Sie Optionen.\n1\t2\t-0.5000\tOptionen wählen.\n3\t1\t-0.1250\tSchließen.\n"
    )
    write = line_writer(sys.stdout, nbest=False)
    write("Wählen Sie Optionen.")
    write("")
    assert capsys.readouterr().out == "Wählen Sie Optionen.\n\n"
