"""The position study: what each position type (sinusoidal, learned, ALiBi, rotary) buys, across seeds and input
lengths.

Every position type is trained with one recipe (the main job's), one tokenizer, one data order and a fixed
number of optimizer steps (not wall time: all see the same updates), for several seeds. Every model is then
evaluated on the test split bucketed by source length, and on longer inputs built by joining k consecutive test
pairs (sources and references joined alike), which reach past every length seen in training. Reported per set:
BLEU and chrF (mean and spread over seeds) and the output/reference length ratio, which shows a model that drops
the second half of an input. Learned positions get a table long enough for every input, and the study reports
what its rows past the training lengths look like after training: they never receive a gradient.

A second variant ("+ joined pairs") trains on the same data plus a share of joined training pairs, a cheap,
well-known way to show a model longer inputs. Runs are trained, resumed and recorded by `studies.run_all` and scored
by `evaluation.score_sets` (greedy, each input whole: the study measures the model, not the sentence splitter).
"""

import json
import re
import statistics
from pathlib import Path

from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

from transformer_mt.configuration import POSITION_EMBEDDING_TYPES
from transformer_mt.data import join_consecutive, load_parallel_data
from transformer_mt.evaluation import score_sets, translator

from .position_report import markdown_kept, markdown_seeds, markdown_summary, plot_study, seed_spread, study_report
from .position_sets import (
    EXACT_TABLE,
    JOINED,
    JOINED_SHARE,
    QUICK_NEW_TOKENS,
    TABLE_SIZE,
    evaluation_sets,
    table_limited,
    untrained_rows,
)
from .studies import QUICK, QUICK_PAIRS, RECIPE, StudyRun, add_study_arguments, read_results, run_all, study_tokenizer


SENTENCE_END = re.compile(r"[.!?:](?:\s|$)")  # a sentence- or clause-final mark, as help texts end them


def count_sentences(
    output_dir: str,
    data_dir: str,
    seeds=(0,),
    position_types=POSITION_EMBEDDING_TYPES,
    joined=(2, 4, 8),
    pairs: int = 40,
    batch_size: int = 20,
    source_lang: str = "en",
    target_lang: str = "de",
    run_suffix: str = "",
    max_new_tokens: int | None = None,
) -> dict:
    """How many sentences the study's models write for joined inputs: (position type, k) -> mean sentence ends per
    reference and per greedy output, over the first `pairs` inputs of k joined test pairs. Reads the models a study
    left in output_dir/runs (`run_suffix` "-joined": the "+ joined pairs" variant's, and the exact-table runs of
    learned positions beside them, as "learned, N-row table"). Outputs within the engines' length bound, or of at most
    `max_new_tokens` tokens."""
    test = load_parallel_data(data_dir, source_lang, target_lang)["test"]
    runs = Path(output_dir) / "runs"
    counts = {}
    for position_type in position_types:
        for seed in seeds:
            name = f"{position_type}-seed{seed}{run_suffix}"
            models = {position_type: runs / name}
            if run_suffix:
                models.update(
                    (f"{position_type}, {path.name.rsplit('-table', 1)[1]}-row table", path)
                    for path in sorted(runs.glob(f"{name}-table*"))
                )
            for label, model_dir in models.items():
                translate = translator(
                    str(model_dir), num_beams=1, batch_size=batch_size, max_new_tokens=max_new_tokens
                )
                for k in joined:
                    sources, references = join_consecutive(list(test[source_lang]), list(test[target_lang]), k)
                    outputs = translate(sources[:pairs])
                    entry = counts.setdefault(f"{label} {k} joined", {"reference": [], "output": []})
                    entry["reference"].append(
                        statistics.mean(len(SENTENCE_END.findall(r)) for r in references[:pairs])
                    )
                    entry["output"].append(statistics.mean(len(SENTENCE_END.findall(o)) for o in outputs))
    return {name: {side: statistics.mean(values) for side, values in entry.items()} for name, entry in counts.items()}


def write_sentence_counts(
    output_dir: str,
    data_dir: str,
    seeds=(0,),
    position_types=POSITION_EMBEDDING_TYPES,
    quick: bool = False,
    of_joined_variant: bool = False,
    source_lang: str = "en",
    target_lang: str = "de",
) -> dict:
    """`count_sentences` of the models a study left in `output_dir` at 2, 4 and 8 joined test pairs (the "+ joined
    pairs" variant's with `of_joined_variant`: 2, 4, 8 and 16; `quick`: 2, on 8 inputs, outputs of at most
    QUICK_NEW_TOKENS tokens), written to output_dir/sentence_counts.json (sentence_counts_joined.json); returns the
    counts."""
    joined = (2,) if quick else (2, 4, 8, 16) if of_joined_variant else (2, 4, 8)
    counts = count_sentences(
        output_dir,
        data_dir,
        seeds,
        position_types,
        joined=joined,
        pairs=8 if quick else 40,
        source_lang=source_lang,
        target_lang=target_lang,
        run_suffix="-joined" if of_joined_variant else "",
        max_new_tokens=QUICK_NEW_TOKENS if quick else None,
    )
    name = "sentence_counts_joined.json" if of_joined_variant else "sentence_counts.json"
    Path(output_dir, name).write_text(json.dumps(counts, indent=1), encoding="utf-8")
    return counts


def markdown_sentence_counts(counts: dict) -> str:
    """The sentence counts as docs/results.md tabulates them: sentence ends per reference and per output."""
    lines = ["| inputs | sentence ends per reference | per output |", "| --- | ---: | ---: |"]
    lines += [f"| {name} | {entry['reference']:.2f} | {entry['output']:.2f} |" for name, entry in counts.items()]
    return "\n".join(lines)


def study_data(data_dir: str, output: Path, quick: bool, source_lang: str, target_lang: str) -> tuple:
    """(the study's tokenizer directory, the training sources' token lengths sorted, the evaluation sets): one
    tokenizer for every run, trained on the training split (QUICK's 400 pairs with `quick`), and the sets built from
    the test split (its first QUICK_PAIRS pairs, joined at most 4 at a time, with `quick`)."""
    splits = load_parallel_data(data_dir, source_lang, target_lang)
    train, test = splits["train"], splits["test"]
    if quick:
        train, test = train.select(range(QUICK["max_train_samples"])), test.select(range(QUICK_PAIRS))
    tokenizer_dir = study_tokenizer(data_dir, output, quick, source_lang, target_lang)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    max_length = RECIPE["max_source_length"]
    train_lengths = sorted(min(len(ids), max_length) for ids in tokenizer(list(train[source_lang]))["input_ids"])
    sets = evaluation_sets(
        list(test[source_lang]), list(test[target_lang]), tokenizer, joined=JOINED[:2] if quick else JOINED
    )
    return tokenizer_dir, train_lengths, sets


def study_runs(overrides: dict, seeds, position_types, joined_variant: bool) -> list[StudyRun]:
    """Every (variant, seed, position type) to train, seed-major: a study cut short holds every position type for
    every seed it reached. With `joined_variant`, "+ joined pairs" and the exact table of the learned types too."""
    table = {**RECIPE, **overrides}["max_source_length"]  # the exact table: as long as the longest training input
    variants = {"plain": ({}, "", position_types)}
    if joined_variant:
        variants["+ joined pairs"] = ({"joined_pairs_share": JOINED_SHARE}, "-joined", position_types)
        variants[EXACT_TABLE] = (
            {"joined_pairs_share": JOINED_SHARE, "max_position_embeddings": table},
            f"-joined-table{table}",
            [t for t in position_types if table_limited(t, table)],
        )
    return [
        StudyRun(
            name=f"{position_type}-seed{seed}{suffix}",
            seed=seed,
            overrides={**overrides, **variant_overrides, "position_embedding_type": position_type},
            fields={"variant": variant, "position_embedding_type": position_type},
        )
        for variant, (variant_overrides, suffix, variant_types) in variants.items()
        for seed in seeds
        for position_type in variant_types
    ]


def scorer(sets: dict, trained_positions: int, batch_size: int, quick: bool):
    """`score(study_run, model_dir)` for `studies.run_all`: the model's scores on every set, its untrained rows, and
    for a table shorter than TABLE_SIZE what happens past it (the share of each set's inputs cut)."""
    scored_sets = {name: (described["sources"], described["references"]) for name, described in sets.items()}

    def score(study_run: StudyRun, model_dir: Path) -> dict:
        model = AutoModelForSeq2SeqLM.from_pretrained(model_dir)
        result = {
            "scores": score_sets(
                str(model_dir), scored_sets, batch_size=batch_size, max_new_tokens=QUICK_NEW_TOKENS if quick else None
            ),
            "untrained_rows": untrained_rows(model, trained_positions),
        }
        if study_run.overrides.get("max_position_embeddings", TABLE_SIZE) < TABLE_SIZE:  # what it does past its table
            rows = model.config.max_position_embeddings
            result["past_the_table"] = {
                "table_positions": rows,
                "what_happens": f"inputs are cut to their first {rows} tokens, with a warning",
                "inputs_cut": {
                    name: sum(n > rows for n in described["lengths"]) / described["size"]
                    for name, described in sets.items()
                },
            }
        return result

    return score


def keep_probe(rows: list[dict]) -> dict:
    """What a run's result keeps of its probe: the source gain at each step."""
    return {"source_gain": [(row["step"], round(row["source_gain"], 3)) for row in rows]}


def run_study(
    data_dir: str,
    output_dir: str,
    seeds=(0, 1, 2),
    steps: int = 2000,
    joined_variant: bool = True,
    quick: bool = False,
    batch_size: int = 32,
    position_types=POSITION_EMBEDDING_TYPES,
    results_dir: str | None = None,
    source_lang: str = "en",
    target_lang: str = "de",
) -> dict:
    """Train and evaluate every (variant, seed, position type) not already in `results_dir` (one JSON per run,
    written as soon as it is scored); write position_study.json and .png of every run there; return them. `quick`:
    QUICK's tiny model on its 400 training pairs, scored on QUICK_PAIRS test pairs with translations of at most
    QUICK_NEW_TOKENS tokens."""
    output = Path(output_dir)
    output.mkdir(parents=True, exist_ok=True)
    results_path = Path(results_dir) if results_dir else output / "results"
    results_path.mkdir(parents=True, exist_ok=True)
    overrides = {**(QUICK if quick else {}), "max_position_embeddings": TABLE_SIZE}
    tokenizer_dir, train_lengths, sets = study_data(data_dir, output, quick, source_lang, target_lang)
    scored_runs(results_path, steps)  # refuse a mix before training anything
    # the models stay (count_sentences reads them); their checkpoints go
    run_all(
        study_runs(overrides, seeds, position_types, joined_variant),
        data_dir,
        output,
        results_path,
        tokenizer_dir,
        steps,
        scorer(sets, train_lengths[-1], batch_size, quick),
        keep_probe,
        quick=quick,
        keep_models=True,
        source_lang=source_lang,
        target_lang=target_lang,
    )
    runs = scored_runs(results_path, steps)
    results = {
        "recipe": {**RECIPE, **overrides, "max_steps": steps},
        "seeds": sorted({run_result["seed"] for run_result in runs}),
        "training_source_tokens": {
            "mean": statistics.mean(train_lengths),
            "p99": train_lengths[int(0.99 * (len(train_lengths) - 1))],
            "max": train_lengths[-1],
            "max_source_length": RECIPE["max_source_length"],
        },
        "sets": {
            name: {key: value for key, value in described.items() if key not in ("sources", "references", "lengths")}
            for name, described in sets.items()
        },
        "runs": runs,
        "summary": seed_spread(runs),
        **({"max_new_tokens": QUICK_NEW_TOKENS} if quick else {}),  # the full study decodes within the engines' bound
    }
    (output / "position_study.json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    plot_study(results, str(output / "position_study.png"))
    return results


def scored_runs(results_path: Path, steps: int) -> list[dict]:
    """Every run scored in `results_path`; all must have trained for `steps` steps."""
    runs = read_results(results_path)
    order = {name: index for index, name in enumerate(POSITION_EMBEDDING_TYPES)}  # sinusoidal (the paper's) first
    runs.sort(
        key=lambda run: (
            run["variant"] != "plain",
            order.get(run["position_embedding_type"], len(order)),
            run["position_embedding_type"],
            run["seed"],
        )
    )
    mixed = sorted({run_result["steps"] for run_result in runs} - {steps})
    if mixed:
        raise ValueError(
            f"{results_path} holds runs of {mixed} steps besides {steps}: a study compares equal "
            "steps; give another --results_dir (or --steps) instead of mixing them."
        )
    return runs


def add_arguments(parser) -> None:
    """scripts/position_study.py's flags: the study's options (`studies.add_study_arguments`), its runs and seeds,
    and --count_sentences, which counts the sentences of the models a study left instead of training."""
    add_study_arguments(parser, output_dir="runs/position-study")
    parser.add_argument("--results_dir", help="One JSON per scored run. Default: OUTPUT_DIR/results.")
    parser.add_argument("--seeds", type=int, nargs="+", help="Default 0 1 2 (--quick: 0).")
    parser.add_argument("--steps", type=int, help="Optimizer steps of every model. Default 2000 (--quick: 20).")
    parser.add_argument(
        "--position_types", nargs="+", choices=POSITION_EMBEDDING_TYPES, default=list(POSITION_EMBEDDING_TYPES)
    )
    parser.add_argument(
        "--no_joined_variant",
        action="store_true",
        help="Leave out the variant trained with a share of joined pairs (--quick leaves it out).",
    )
    parser.add_argument(
        "--count_sentences",
        action="store_true",
        help="Instead: how many sentences the models in --output_dir write for 2, 4 and 8 joined "
        "test pairs (the first 40 of each, greedy), against the references; to "
        "OUTPUT_DIR/sentence_counts.json.",
    )
    parser.add_argument(
        "--of_joined_variant",
        action="store_true",
        help='With --count_sentences: count the "+ joined pairs" variant\'s models, at 2, 4, 8 and 16 joined pairs.',
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="A tiny model on 400 pairs, 20 steps, one seed, scored on 48 test pairs with "
        "translations of at most 31 tokens: checks the pipeline in under a minute.",
    )


__all__ = [
    "EXACT_TABLE",
    "add_arguments",
    "count_sentences",
    "evaluation_sets",
    "join_consecutive",
    "markdown_kept",
    "markdown_seeds",
    "markdown_sentence_counts",
    "markdown_summary",
    "plot_study",
    "run_study",
    "study_report",
    "write_sentence_counts",
]
