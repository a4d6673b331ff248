"""Decoding controls of translate.py, translate() and the CTranslate2 path: n-best with scores, sampling with a
seed, length and repetition controls, interactive line-by-line translation through a pipe."""

import subprocess
import sys
import time

import pytest

from transformer_mt.bridges.ctranslate2 import translate_options
from transformer_mt.scripts import translate as translate_command

from .utils import SCRIPTS, SENTENCES, command_env


def run_translate(model_dir, capsys, *argv) -> str:
    capsys.readouterr()
    translate_command.main(["--model", str(model_dir), "--no_progress", "--max_new_tokens", "6", *argv])
    return capsys.readouterr().out


def test_n_best_gives_n_rows_a_line_best_first(model_dir, capsys):
    out = run_translate(model_dir, capsys, "--num_beams", "4", "--num_return_sequences", "3", *SENTENCES[:2])
    rows = [line.split("\t") for line in out.splitlines()]
    assert [(row[0], row[1]) for row in rows] == [(str(n), str(r)) for n in (1, 2) for r in (1, 2, 3)]
    for number in ("1", "2"):
        scores = [float(row[2]) for row in rows if row[0] == number]
        assert scores == sorted(scores, reverse=True) and all(score < 0 for score in scores)


@pytest.mark.parametrize("num_beams", [1, 3])
def test_scores_are_the_hypotheses_log_probabilities(model_dir, num_beams):
    """With length_penalty 0 a score is the summed log-probability of the hypothesis' tokens up to </s>: what a
    teacher-forced forward pass gives for greedy search (our computation) and for beam search (its own)."""
    import torch
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    from transformer_mt.engines import hypothesis_scores

    model = AutoModelForSeq2SeqLM.from_pretrained(model_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    batch = tokenizer(SENTENCES[:2], return_tensors="pt", padding=True)
    with torch.no_grad():
        output = model.generate(
            **batch,
            num_beams=num_beams,
            num_return_sequences=num_beams,
            max_new_tokens=6,
            length_penalty=0.0,
            output_scores=True,
            return_dict_in_generate=True,
        )
        eos = torch.tensor([model.generation_config.eos_token_id])
        scores = hypothesis_scores(model, output, eos, length_penalty=0.0)
        sequences = output.sequences
        repeated = {key: value.repeat_interleave(num_beams, 0) for key, value in batch.items()}
        log_probs = model(**repeated, decoder_input_ids=sequences[:, :-1]).logits.log_softmax(-1)
    picked = log_probs.gather(-1, sequences[:, 1:, None])[..., 0]
    ended = torch.isin(sequences[:, 1:], eos).long()
    counted = (ended.cumsum(-1) - ended) == 0
    expected = picked.masked_fill(~counted, 0.0).sum(-1)
    torch.testing.assert_close(torch.tensor(scores), expected, rtol=1e-4, atol=1e-4)


def test_sampling_with_a_seed_is_reproducible(model_dir, capsys):
    flags = ["--do_sample", "--temperature", "5.0", *SENTENCES]
    first = run_translate(model_dir, capsys, "--seed", "3", *flags)
    assert run_translate(model_dir, capsys, "--seed", "3", *flags) == first
    assert run_translate(model_dir, capsys, "--seed", "4", *flags) != first


def test_decoding_controls_reach_generate(model_dir, capsys, monkeypatch):
    from transformers import GenerationMixin

    seen = []
    original = GenerationMixin.generate

    def spy(self, *args, **kwargs):
        seen.append(kwargs)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(GenerationMixin, "generate", spy)
    run_translate(
        model_dir,
        capsys,
        "--engine",
        "transformers",
        "--length_penalty",
        "0.6",
        "--no_repeat_ngram_size",
        "2",
        "--num_beams",
        "3",
        SENTENCES[0],
    )  # generate()'s controls (the CTranslate2 path: test_engines)
    assert seen and all(
        (call["length_penalty"], call["no_repeat_ngram_size"], call["num_beams"]) == (0.6, 2, 3) for call in seen
    )


def test_bad_decoding_flags_are_named(model_dir, capsys):
    for argv, fragment in (
        (["--top_p", "0.9"], "--top_p applies to sampling: add --do_sample"),
        (["--top_p", "1.5", "--do_sample"], "--top_p must be in (0, 1]"),
        (["--num_return_sequences", "0"], "--num_return_sequences must be >= 1"),
    ):
        with pytest.raises(SystemExit):
            translate_command.main(["--model", str(model_dir), *argv, "x"])
        assert fragment in capsys.readouterr().err
    with pytest.raises(SystemExit):
        translate_command.main(["--model", str(model_dir), "--num_beams", "2", "--num_return_sequences", "3", "x"])
    assert (
        "--num_return_sequences 3 needs at least as many beams (--num_beams, now 2) or --do_sample"
        in capsys.readouterr().err
    )


@pytest.mark.slow  # translate.py --interactive in a process of its own
def test_interactive_translates_each_line_as_it_arrives(model_dir):
    process = subprocess.Popen(
        [
            sys.executable,
            str(SCRIPTS / "translate.py"),
            "--model",
            str(model_dir),
            "--interactive",
            "--max_new_tokens",
            "4",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=command_env(),
    )
    try:
        for sentence in SENTENCES[:2]:
            process.stdin.write(sentence + "\n")
            process.stdin.flush()
            start = time.monotonic()
            line = process.stdout.readline()  # answered while stdin is still open
            assert line.endswith("\n") and time.monotonic() - start < 120
        process.stdin.close()
        assert process.wait(timeout=120) == 0
    finally:
        process.kill()


def test_the_ctranslate2_path_takes_the_same_controls_and_refuses_the_others():
    options = translate_options(
        num_beams=4, max_new_tokens=20, length_penalty=0.6, no_repeat_ngram_size=3, num_return_sequences=2
    )
    assert (
        options["beam_size"],
        options["length_penalty"],
        options["no_repeat_ngram_size"],
        options["num_hypotheses"],
        options["return_scores"],
    ) == (4, 0.6, 3, 2, True)
    sampling = translate_options(do_sample=True, top_p=0.9, temperature=0.7)
    assert (sampling["sampling_topk"], sampling["sampling_topp"], sampling["sampling_temperature"]) == (0, 0.9, 0.7)
    with pytest.raises(ValueError, match="CTranslate2 has no equivalent of diversity_penalty, typical_p"):
        translate_options(diversity_penalty=0.5, typical_p=0.9)
    with pytest.raises(ValueError, match="apply to sampling: pass do_sample=True"):
        translate_options(top_k=5)
