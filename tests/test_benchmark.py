"""The benchmark harness: interleaving, identical outputs before timing, the tables (tiny preset, few repeats, one
untimed warm-up step: the tests check the protocol and the reports, not the speeds)."""

import pytest

from transformer_mt.experiments import benchmarks as benchmark

from .utils import DATA, SENTENCES


def test_engines_alternate_a_b_b_a():
    assert benchmark.interleaved_order(["A", "B"], 4) == ["A", "B", "B", "A", "A", "B", "B", "A"]
    assert benchmark.interleaved_order(["A", "B", "C"], 3) == ["A", "B", "C", "C", "B", "A", "A", "B", "C"]


def test_best_is_the_highest_throughput_and_worst_the_lowest():
    assert benchmark.sample_stats([10.0, 12.0, 11.0]) == {
        "best": 12.0,
        "median": 11.0,
        "worst": 10.0,
        "samples": [10.0, 12.0, 11.0],
    }


def test_ratios_and_table():
    results = {
        "task": {
            "base": benchmark.sample_stats([10.0, 12.0, 11.0]),
            "fast": benchmark.sample_stats([20.0, 18.0, 22.0]),
        }
    }
    rows = benchmark.ratio_rows(results, "base", "tokens/s")
    fast = next(row for row in rows if row["engine"] == "fast")
    assert fast["x baseline (best)"] == pytest.approx(22 / 12)
    assert fast["x baseline (median)"] == pytest.approx(20 / 11)
    table = benchmark.markdown_table(rows)
    assert table.splitlines()[0].startswith("| task | engine | tokens/s (best)") and "| 1.83 |" in table


@pytest.mark.slow
def test_a_tiny_comparison_with_marian_runs_end_to_end():
    results = benchmark.compare_with_marian(
        str(DATA),
        presets=("tiny",),
        tasks=("greedy b1", "beam-4 b32"),
        repeats=2,
        threads=1,
        new_tokens=4,
        train_steps=2,
        compiled=False,
        training_repeats=1,
        warmup=1,
    )
    generation = results["generation"]["tiny"]
    assert set(generation) == {"greedy b1", "beam-4 b32"}
    for engines in generation.values():
        assert set(engines) == {"MarianMT (eager)", "TransformerMT (eager)"}
        for engine in engines.values():
            assert len(engine["samples"]) == 2 and engine["best"] >= engine["median"] >= engine["worst"] > 0
    training = results["training"]["tiny"]
    losses = training["loss check"]
    assert losses["MarianMT"] == pytest.approx(losses["TransformerMT"], rel=1e-4)
    assert training["TransformerMT"]["peak RSS MB (max)"] > 0
    report = benchmark.report(results)
    assert "**generate(), tiny preset**" in report and "**training, tiny preset**" in report


@pytest.mark.slow
def test_the_ctranslate2_comparison_runs_each_engine_apart(saved_tiny_model):
    results = benchmark.compare_with_ctranslate2(
        str(saved_tiny_model), SENTENCES, batch_size=2, max_new_tokens=5, threads=1, repeats=1, beam_sizes=(1,)
    )
    greedy = results["search"]["greedy"]
    assert set(greedy) == {"generate()", "CTranslate2 float32", "CTranslate2 int8"}
    assert greedy["CTranslate2 float32"]["outputs equal to generate()"] == f"{len(SENTENCES)}/{len(SENTENCES)}"
    assert "| greedy | CTranslate2 int8 |" in benchmark.ctranslate2_report(results)


@pytest.mark.slow
def test_sentence_and_token_batches_are_compared_by_real_target_tokens():
    results = benchmark.compare_batching(
        str(DATA), max_tokens=(256, 512), repeats=1, threads=1, train_steps=2, preset="tiny", warmup=1
    )
    engines = results["batching"]
    assert list(engines) == ["48 pairs, length-grouped", "<= 256 padded tokens", "<= 512 padded tokens"]
    assert all(engine["best"] >= engine["median"] >= engine["worst"] > 0 for engine in engines.values())
    # Real target tokens per step: a 512-token budget holds about twice a 256-token one.
    assert (
        1.5
        < engines["<= 512 padded tokens"]["target tokens per step"]
        / engines["<= 256 padded tokens"]["target tokens per step"]
        < 2.5
    )
    assert "| training step | <= 512 padded tokens |" in benchmark.batching_report(results)


@pytest.mark.slow
def test_the_position_types_are_compared_at_one_size():
    results = benchmark.compare_positions(
        str(DATA), preset="tiny", repeats=1, threads=1, new_tokens=3, batch_size=2, train_steps=1, warmup=1
    )
    assert list(results["generation"]) == list(results["training"]) == ["sinusoidal", "learned", "alibi", "rotary"]
    assert all(engine["best"] >= engine["median"] >= engine["worst"] > 0 for engine in results["generation"].values())
    report = benchmark.positions_report(results)
    assert "| generate() greedy | rotary |" in report and "| training step | alibi |" in report
