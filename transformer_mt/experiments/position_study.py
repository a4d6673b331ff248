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
from types import SimpleNamespace

from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

from transformer_mt.configuration import POSITION_EMBEDDING_TYPES
from transformer_mt.data import join_consecutive, load_parallel_data
from transformer_mt.evaluation import score_sets, translator
from transformer_mt.modeling.positional_embeddings import POSITION_STRATEGIES

from .studies import QUICK, QUICK_PAIRS, RECIPE, StudyRun, read_results, run_all, study_tokenizer


TABLE_SIZE = 1024  # learned positions: rows for every evaluated input; those past the training lengths stay untrained
BUCKETS = ((1, 10), (11, 20), (21, 30), (31, 1000))  # test-split source lengths, in tokens
JOINED = (2, 4, 8, 16)
ALL_PAIRS = "test, all pairs"  # the whole test split: each run's test BLEU, compared across seeds
JOINED_SHARE = 0.25  # the "+ joined pairs" variant: --joined_pairs_share (2-3 consecutive pairs joined)
# The paper's comparison: learned positions with a table exactly as long as the training inputs, where sinusoids
# need none. Past its table such a model cannot place a token: translation cuts the input there, with a warning.
EXACT_TABLE = "+ joined pairs, learned table of the training length"
# --quick: translations stop at the quick models' training target length (presets.TINY's, the start token included).
# Models of a few steps rarely write an end token, so each would otherwise run to the engines' bound (twice its input
# plus 10 tokens), and decoding would take most of the quick study's time; the full study keeps that bound.
QUICK_NEW_TOKENS = QUICK["max_target_length"] - 1


def table_limited(position_type: str, rows: int) -> bool:
    """Whether a strategy's positions end with its table (learned), the types the exact-table variant compares."""
    return POSITION_STRATEGIES[position_type].position_limit(SimpleNamespace(max_position_embeddings=rows)) is not None


def evaluation_sets(sources: list[str], references: list[str], tokenizer, joined=JOINED) -> dict:
    """name -> {sources, references, mean/max source tokens}: the test split by length bucket, then joined pairs."""
    lengths = [len(ids) for ids in tokenizer(sources)["input_ids"]]
    sets = {ALL_PAIRS: (sources, references)}
    for low, high in BUCKETS:
        chosen = [i for i, n in enumerate(lengths) if low <= n <= high]
        if chosen:
            name = f"test, {low}-{high} tokens" if high < 1000 else f"test, {low}+ tokens"
            sets[name] = ([sources[i] for i in chosen], [references[i] for i in chosen])
    for k in joined:
        sets[f"{k} joined pairs"] = join_consecutive(sources, references, k)
    described = {}
    for name, (set_sources, set_references) in sets.items():
        set_lengths = [len(ids) for ids in tokenizer(set_sources)["input_ids"]]
        described[name] = {"sources": set_sources, "references": set_references, "size": len(set_sources),
                           "lengths": set_lengths, "mean_source_tokens": statistics.mean(set_lengths),
                           "max_source_tokens": max(set_lengths)}
    return described


def untrained_rows(model, trained_positions: int) -> dict | None:
    """Learned positions: the mean row norm of positions seen in training and of those never seen (still at their
    initialisation: they get no gradient). None for sinusoids."""
    table = getattr(model.get_encoder().embeddings.embed_positions, "weight", None)
    if table is None:
        return None
    norms = table.detach().norm(dim=-1)
    return {"trained_positions": trained_positions,
            "mean_norm_trained_rows": float(norms[:trained_positions].mean()),
            "mean_norm_untrained_rows": float(norms[trained_positions:].mean())}


SENTENCE_END = re.compile(r"[.!?:](?:\s|$)")  # a sentence- or clause-final mark, as help texts end them


def count_sentences(output_dir: str, data_dir: str, seeds=(0,), position_types=POSITION_EMBEDDING_TYPES,
                    joined=(2, 4, 8), pairs: int = 40, batch_size: int = 20, source_lang: str = "en",
                    target_lang: str = "de", run_suffix: str = "", max_new_tokens: int | None = None) -> dict:
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
                models.update((f"{position_type}, {path.name.rsplit('-table', 1)[1]}-row table", path)
                              for path in sorted(runs.glob(f"{name}-table*")))
            for label, model_dir in models.items():
                translate = translator(str(model_dir), num_beams=1, batch_size=batch_size,
                                       max_new_tokens=max_new_tokens)
                for k in joined:
                    sources, references = join_consecutive(list(test[source_lang]), list(test[target_lang]), k)
                    outputs = translate(sources[:pairs])
                    entry = counts.setdefault(f"{label} {k} joined", {"reference": [], "output": []})
                    entry["reference"].append(
                        statistics.mean(len(SENTENCE_END.findall(r)) for r in references[:pairs]))
                    entry["output"].append(statistics.mean(len(SENTENCE_END.findall(o)) for o in outputs))
    return {name: {side: statistics.mean(values) for side, values in entry.items()} for name, entry in counts.items()}


def write_sentence_counts(output_dir: str, data_dir: str, seeds=(0,), position_types=POSITION_EMBEDDING_TYPES,
                          quick: bool = False, of_joined_variant: bool = False, source_lang: str = "en",
                          target_lang: str = "de") -> dict:
    """`count_sentences` of the models a study left in `output_dir` at 2, 4 and 8 joined test pairs (the "+ joined
    pairs" variant's with `of_joined_variant`: 2, 4, 8 and 16; `quick`: 2, on 8 inputs, outputs of at most
    QUICK_NEW_TOKENS tokens), written to output_dir/sentence_counts.json (sentence_counts_joined.json); returns the
    counts."""
    joined = (2,) if quick else (2, 4, 8, 16) if of_joined_variant else (2, 4, 8)
    counts = count_sentences(output_dir, data_dir, seeds, position_types, joined=joined, pairs=8 if quick else 40,
                             source_lang=source_lang, target_lang=target_lang,
                             run_suffix="-joined" if of_joined_variant else "",
                             max_new_tokens=QUICK_NEW_TOKENS if quick else None)
    name = "sentence_counts_joined.json" if of_joined_variant else "sentence_counts.json"
    Path(output_dir, name).write_text(json.dumps(counts, indent=1), encoding="utf-8")
    return counts


def markdown_sentence_counts(counts: dict) -> str:
    """The sentence counts as docs/results.md tabulates them: sentence ends per reference and per output."""
    lines = ["| inputs | sentence ends per reference | per output |", "| --- | ---: | ---: |"]
    lines += [f"| {name} | {entry['reference']:.2f} | {entry['output']:.2f} |" for name, entry in counts.items()]
    return "\n".join(lines)


def seed_spread(runs: list[dict]) -> dict:
    """variant -> position type -> set -> mean and spread (min, max, standard deviation) over seeds."""
    summary = {}
    for run_result in runs:
        by_type = summary.setdefault(run_result["variant"], {}).setdefault(run_result["position_embedding_type"], {})
        for name, scores in run_result["scores"].items():
            for key, value in scores.items():
                by_type.setdefault(name, {}).setdefault(key, []).append(value)
    for variant in summary.values():
        for by_set in variant.values():
            for name, metrics in by_set.items():
                by_set[name] = {key: {"mean": statistics.mean(values), "min": min(values), "max": max(values),
                                      "sd": statistics.stdev(values) if len(values) > 1 else 0.0, "n": len(values)}
                                for key, values in metrics.items()}
    return summary


def run_study(data_dir: str, output_dir: str, seeds=(0, 1, 2), steps: int = 2000, joined_variant: bool = True,
              quick: bool = False, batch_size: int = 32, position_types=POSITION_EMBEDDING_TYPES,
              results_dir: str | None = None, source_lang: str = "en", target_lang: str = "de") -> dict:
    """Train and evaluate every (variant, seed, position type) not already in `results_dir` (one JSON per run,
    written as soon as it is scored); write position_study.json and .png of every run there; return them. `quick`:
    QUICK's tiny model on its 400 training pairs, scored on QUICK_PAIRS test pairs with translations of at most
    QUICK_NEW_TOKENS tokens."""
    output = Path(output_dir)
    output.mkdir(parents=True, exist_ok=True)
    results_path = Path(results_dir) if results_dir else output / "results"
    results_path.mkdir(parents=True, exist_ok=True)
    overrides = {**(QUICK if quick else {}), "max_position_embeddings": TABLE_SIZE}
    splits = load_parallel_data(data_dir, source_lang, target_lang)
    train = splits["train"]
    if quick:
        train = train.select(range(QUICK["max_train_samples"]))
    tokenizer_dir = study_tokenizer(data_dir, output, quick, source_lang, target_lang)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    max_length = RECIPE["max_source_length"]
    train_lengths = sorted(min(len(ids), max_length) for ids in tokenizer(list(train[source_lang]))["input_ids"])
    test = splits["test"]
    if quick:
        test = test.select(range(QUICK_PAIRS))
    sets = evaluation_sets(list(test[source_lang]), list(test[target_lang]), tokenizer,
                           joined=JOINED[:2] if quick else JOINED)

    table = {**RECIPE, **overrides}["max_source_length"]  # the exact table: as long as the longest training input
    variants = {"plain": ({}, "", position_types)}
    if joined_variant:
        variants["+ joined pairs"] = ({"joined_pairs_share": JOINED_SHARE}, "-joined", position_types)
        variants[EXACT_TABLE] = ({"joined_pairs_share": JOINED_SHARE, "max_position_embeddings": table},
                                 f"-joined-table{table}", [t for t in position_types if table_limited(t, table)])
    scored_runs(results_path, steps)  # refuse a mix before training anything
    runs = [StudyRun(name=f"{position_type}-seed{seed}{suffix}", seed=seed,
                     overrides={**overrides, **variant_overrides, "position_embedding_type": position_type},
                     fields={"variant": variant, "position_embedding_type": position_type})
            for variant, (variant_overrides, suffix, variant_types) in variants.items()
            for seed in seeds  # seed-major: a study cut short holds every position type for every seed it reached
            for position_type in variant_types]
    scored_sets = {name: (described["sources"], described["references"]) for name, described in sets.items()}

    def score(study_run: StudyRun, model_dir: Path) -> dict:
        model = AutoModelForSeq2SeqLM.from_pretrained(model_dir)
        result = {"scores": score_sets(str(model_dir), scored_sets, batch_size=batch_size,
                                       max_new_tokens=QUICK_NEW_TOKENS if quick else None),
                  "untrained_rows": untrained_rows(model, train_lengths[-1])}
        if study_run.overrides.get("max_position_embeddings", TABLE_SIZE) < TABLE_SIZE:  # what it does past its table
            rows = model.config.max_position_embeddings
            result["past_the_table"] = {
                "table_positions": rows,
                "what_happens": f"inputs are cut to their first {rows} tokens, with a warning",
                "inputs_cut": {name: sum(n > rows for n in described["lengths"]) / described["size"]
                               for name, described in sets.items()}}
        return result

    def keep_probe(rows: list[dict]) -> dict:
        return {"source_gain": [(row["step"], round(row["source_gain"], 3)) for row in rows]}

    # the models stay (count_sentences reads them); their checkpoints go
    run_all(runs, data_dir, output, results_path, tokenizer_dir, steps, score, keep_probe, quick=quick,
            keep_models=True, source_lang=source_lang, target_lang=target_lang)
    runs = scored_runs(results_path, steps)
    results = {
        "recipe": {**RECIPE, **overrides, "max_steps": steps},
        "seeds": sorted({run_result["seed"] for run_result in runs}),
        "training_source_tokens": {"mean": statistics.mean(train_lengths),
                                   "p99": train_lengths[int(0.99 * (len(train_lengths) - 1))],
                                   "max": train_lengths[-1], "max_source_length": max_length},
        "sets": {name: {key: value for key, value in described.items()
                        if key not in ("sources", "references", "lengths")} for name, described in sets.items()},
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
    runs.sort(key=lambda run: (run["variant"] != "plain", order.get(run["position_embedding_type"], len(order)),
                               run["position_embedding_type"], run["seed"]))
    mixed = sorted({run_result["steps"] for run_result in runs} - {steps})
    if mixed:
        raise ValueError(f"{results_path} holds runs of {mixed} steps besides {steps}: a study compares equal "
                         "steps; give another --results_dir (or --steps) instead of mixing them.")
    return runs


def plot_study(results: dict, path: str) -> None:
    """BLEU against mean input length: a panel for the plain variant and one for the variants trained with joined
    pairs, a line per position type, the band spanning the seeds."""
    from transformer_mt.plots import figure

    lengths = {name: described["mean_source_tokens"] for name, described in results["sets"].items()
               if name != ALL_PAIRS}
    order = sorted(lengths, key=lengths.get)
    x = [lengths[name] for name in order]
    panels = {"plain": [v for v in results["summary"] if v == "plain"],
              "trained with joined pairs": [v for v in results["summary"] if v != "plain"]}
    panels = {title: variants for title, variants in panels.items() if variants}
    fig = figure(figsize=(7 + 4 * (len(panels) - 1), 4.5))
    axes = fig.subplots(1, len(panels), sharey=True, squeeze=False)[0]
    limit, rows = results["training_source_tokens"]["max"], results["recipe"]["max_source_length"]
    for ax, (title, variants) in zip(axes, panels.items()):
        for variant in variants:
            for position_type, by_set in results["summary"][variant].items():
                seeds = next(iter(by_set.values()))["bleu"]["n"]
                label = position_type if variant != EXACT_TABLE else f"{position_type}, a {rows}-row table"
                color = f"C{POSITION_EMBEDDING_TYPES.index(position_type)}"  # one colour per type in both panels
                ax.plot(x, [by_set[name]["bleu"]["mean"] for name in order], "o-" if variant != EXACT_TABLE else "s--",
                        color=color, label=f"{label}, {seeds} seed{'s' if seeds > 1 else ''}")
                ax.fill_between(x, [by_set[name]["bleu"]["min"] for name in order],
                                [by_set[name]["bleu"]["max"] for name in order], color=color, alpha=0.2)
        ax.axvline(limit, color="grey", linestyle=":", label=f"longest training input ({limit} tokens)")
        ax.set_xscale("log")
        ax.set_xlabel("mean source length of the set (tokens, log scale)")
        ax.set_title(f"Position types, {title} (band: min-max over seeds)", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[0].set_ylabel("BLEU (greedy)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def study_report(results: dict, output_dir: str) -> str:
    """What scripts/position_study.py prints: docs/results.md's "Position study" tables (BLEU / chrF per set, plain
    then trained with joined pairs; test BLEU per seed; what is kept from 2 to 8 joined pairs) and where the figure
    and the numbers are."""
    parts = [f"\nBLEU / chrF per set, {' and '.join(variants)}:\n" + markdown_summary(results, variants)
             for variants in (["plain"], [variant for variant in results["summary"] if variant != "plain"])
             if variants]
    parts += ["\nTest BLEU (greedy, all pairs) per seed:\n" + markdown_seeds(results),
              "\nWhat is kept from 2 to 8 joined pairs:\n" + markdown_kept(results),
              f"\nFigure and numbers: {output_dir}/position_study.png, position_study.json"]
    return "\n".join(parts)


def markdown_summary(results: dict, variants=None) -> str:
    """docs/results.md's table: BLEU and chrF mean ± sd and the length ratio per set, per variant and type (of
    `variants` only, when given: one table per group of variants keeps the columns readable)."""
    columns = [(variant, position_type) for variant, by_type in results["summary"].items()
               if variants is None or variant in variants for position_type in by_type]
    header = "| set | mean source tokens | " + " | ".join(
        f"{t}{'' if v == 'plain' else ' ' + v}: BLEU / chrF (length ratio)" for v, t in columns) + " |"
    lines = [header, "|" + " --- |" * (2 + len(columns))]
    for name, described in sorted(results["sets"].items(), key=lambda item: item[1]["mean_source_tokens"]):
        cells = []
        for variant, position_type in columns:
            scores = results["summary"][variant][position_type][name]
            cells.append(f"{scores['bleu']['mean']:.1f} ± {scores['bleu']['sd']:.1f} / "
                         f"{scores['chrf']['mean']:.1f} ± {scores['chrf']['sd']:.1f} "
                         f"({scores['length_ratio']['mean']:.2f})")
        lines.append(f"| {name} | {described['mean_source_tokens']:.0f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown_kept(results: dict, longer: int = 8, shorter: int = 2) -> str:
    """Per variant and type: BLEU and length ratio at `shorter` and `longer` joined pairs (mean over seeds), and
    the share of the `shorter`-joined BLEU kept at `longer`."""
    lines = [f"| positions | seeds | {shorter} joined: BLEU (length ratio) | {longer} joined: BLEU (length ratio) "
             f"| kept at {longer} |", "| --- | ---: | ---: | ---: | ---: |"]
    for variant, by_type in results["summary"].items():
        for position_type, by_set in by_type.items():
            near, far = by_set.get(f"{shorter} joined pairs"), by_set.get(f"{longer} joined pairs")
            if near is None or far is None:
                continue
            kept = far["bleu"]["mean"] / near["bleu"]["mean"] if near["bleu"]["mean"] else float("nan")
            name = position_type + ("" if variant == "plain" else f" {variant}")
            lines.append(f"| {name} | {near['bleu']['n']} | {near['bleu']['mean']:.1f} "
                         f"({near['length_ratio']['mean']:.2f}) | {far['bleu']['mean']:.1f} "
                         f"({far['length_ratio']['mean']:.2f}) | {kept:.0%} |")
    return "\n".join(lines)


def markdown_seeds(results: dict, set_name: str = ALL_PAIRS) -> str:
    """Seed spread: BLEU of every run on one set (default the whole test split), per position type and seed, with
    mean ± sd and the gap between the best and the worst seed."""
    table = {}
    for run_result in results["runs"]:
        if run_result["variant"] == "plain":
            table.setdefault(run_result["position_embedding_type"], {})[run_result["seed"]] = \
                run_result["scores"][set_name]["bleu"]
    seeds = sorted({seed for by_seed in table.values() for seed in by_seed})
    lines = ["| positions | " + " | ".join(f"seed {seed}" for seed in seeds) + " | mean ± sd | best - worst |",
             "|" + " --- |" * (3 + len(seeds))]
    for position_type, by_seed in table.items():
        values = list(by_seed.values())
        sd = statistics.stdev(values) if len(values) > 1 else 0.0
        cells = [f"{by_seed[seed]:.1f}" if seed in by_seed else "" for seed in seeds]
        lines.append(f"| {position_type} | " + " | ".join(cells)
                     + f" | {statistics.mean(values):.1f} ± {sd:.1f} | {max(values) - min(values):.1f} |")
    return "\n".join(lines)


__all__ = ["EXACT_TABLE", "count_sentences", "evaluation_sets", "join_consecutive", "markdown_kept", "markdown_seeds",
           "markdown_sentence_counts", "markdown_summary", "plot_study", "run_study", "study_report",
           "write_sentence_counts"]
