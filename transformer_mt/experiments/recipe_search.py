"""The recipe search: which training recipe learns to translate in every seed, at a fixed number of steps.

Each candidate is a set of overrides of the study recipe (`studies.RECIPE`, the main job's minus its time budget).
Every (candidate, position type, seed) trains for the same number of optimizer steps with one shared tokenizer and
one data order, logs the alignment probe (`diagnostics.AlignmentProbe`) as it goes, and is scored with greedy
decoding on a fixed subset of the validation split (the test split is never looked at). One small JSON per run lands
in `results_dir` as soon as the run ends, so a search cut short keeps every finished run, and a run killed mid-way
resumes from its newest checkpoint (`studies.run_all`).
"""

import statistics
from pathlib import Path

from transformer_mt.data import join_consecutive, load_parallel_data
from transformer_mt.evaluation import score_sets
from transformer_mt.presets import MAIN_JOB
from transformer_mt.text.casing import title_case, upper_case

from .studies import QUICK, QUICK_PAIRS, StudyRun, read_results, run_all, study_tokenizer


# name -> overrides of RECIPE (the main job's recipe). "baseline" is the recipe the main job shipped with before the
# search, "init-0.05" the one it ships with since (docs/results.md, "The recipe"). Add a candidate here to search it.
CANDIDATES = {
    "baseline": {"init_std": 0.02},
    # fairseq and Marian initialise linear layers Glorot-uniform: std sqrt(2 / (fan_in + fan_out)), about 0.05 at
    # d_model 192 (0.046 for the FFN, 0.051 for q/k/v with fairseq's 1/sqrt(2) gain), where BERT's 0.02 suits d768.
    "init-0.05": {"init_std": 0.05},
    # Multi-sentence training pairs (--joined_pairs_share): every training target is otherwise one sentence, so a
    # model writes one sentence whatever it is given. Scored on joined validation pairs as well (JOINED_SETS).
    "joined-0.1": {"init_std": 0.05, "joined_pairs_share": 0.1},
    "joined-0.25": {"init_std": 0.05, "joined_pairs_share": 0.25},
    # Issue 40's augmentations on the main job's recipe (joined-0.25), OpusTrainer's shares: 5% of the pairs upper-
    # cased and 5% title-cased on both sides, 10% with the spans both sides hold as reserved tokens {k}. Scored on
    # upper- and title-cased validation pairs as well (CASED_SETS), translated as a user's text is (case folding on).
    "augmented": {
        "init_std": 0.05,
        "joined_pairs_share": 0.25,
        "uppercase_share": 0.05,
        "titlecase_share": 0.05,
        "span_token_share": 0.1,
    },
    # The span tokens alone: case folding at translation time already keeps 90% of capitals' BLEU (docs/results.md),
    # and the three together cost the plain subset 0.61 BLEU, more than the main job may pay.
    "spans": {"init_std": 0.05, "joined_pairs_share": 0.25, "span_token_share": 0.1},
}
JOINED_SETS = (2, 4)  # every run is also scored on the validation subset joined this many pairs at a time
CASED_SETS = {"upper": upper_case, "title": title_case}  # ... and on it upper- and title-cased, both sides
VALIDATION_PAIRS = 400  # the fixed validation subset every run is scored on


PROBE_FIELDS = ("step", "loss", "source_gain", "cross_attention_entropy", "grad_norm", "embedding_rms")


def validation_subset(
    data_dir: str, size: int = VALIDATION_PAIRS, source_lang: str = "en", target_lang: str = "de"
) -> tuple[list[str], list[str]]:
    """The first `size` pairs of the validation split: sources and references."""
    validation = load_parallel_data(data_dir, source_lang, target_lang)["validation"]
    validation = validation.select(range(min(size, len(validation))))
    return list(validation[source_lang]), list(validation[target_lang])


def run_name(candidate: str, position_type: str, seed: int) -> str:
    return f"{candidate}-{position_type}-seed{seed}"


def run_search(
    data_dir: str,
    output_dir: str,
    results_dir: str,
    candidates: dict,
    seeds=(0, 1, 2),
    position_types=("sinusoidal",),
    steps: int = 2000,
    quick: bool = False,
    keep_models: bool = False,
    source_lang: str = "en",
    target_lang: str = "de",
) -> list[dict]:
    """Train and score every (candidate, position type, seed) not already in `results_dir`; return all results."""
    output, results_path = Path(output_dir), Path(results_dir)
    output.mkdir(parents=True, exist_ok=True)
    base = dict(QUICK) if quick else {}
    tokenizer_dir = study_tokenizer(data_dir, output, quick, source_lang, target_lang)
    sources, references = validation_subset(
        data_dir, QUICK_PAIRS if quick else VALIDATION_PAIRS, source_lang, target_lang
    )
    # greedy BLEU, chrF and length ratio on the validation subset, and on it joined k pairs at a time
    sets = {
        "validation": (sources, references),
        **{str(k): join_consecutive(sources, references, k) for k in JOINED_SETS},
        **{
            name: ([change(text) for text in sources], [change(text) for text in references])
            for name, change in CASED_SETS.items()
        },
    }
    runs = [
        StudyRun(
            name=run_name(name, position_type, seed),
            seed=seed,
            overrides={**base, **overrides, "position_embedding_type": position_type},
            fields={"candidate": name, "overrides": overrides, "position_embedding_type": position_type},
        )
        for seed in seeds  # seed-major: a search cut short holds every candidate for the seeds it reached
        for name, overrides in candidates.items()
        for position_type in position_types
    ]

    def score(study_run: StudyRun, model_dir: Path) -> dict:
        scores = {
            name: {key: round(value, 3) for key, value in set_scores.items()}
            for name, set_scores in score_sets(str(model_dir), sets, batch_size=64).items()
        }
        cased = {name: scores.pop(name) for name in CASED_SETS}
        return {
            "validation_pairs": len(sources),
            "validation": scores.pop("validation"),
            "validation_joined": scores,
            "validation_cased": cased,
        }

    def keep_probe(rows: list[dict]) -> dict:
        return {"probe": [{key: row[key] for key in PROBE_FIELDS} for row in rows]}

    run_all(
        runs,
        data_dir,
        output,
        results_path,
        tokenizer_dir,
        steps,
        score,
        keep_probe,
        quick=quick,
        keep_models=keep_models,
        source_lang=source_lang,
        target_lang=target_lang,
    )
    return read_results(results_path)


def candidate_table(results: list[dict]) -> dict:
    """(candidate, position type) -> validation BLEU per seed, mean, sd, min, and the step where the source gain
    first passed 0.5 nats (None: never), per seed."""
    table = {}
    for result in results:
        row = table.setdefault(
            (result["candidate"], result["position_embedding_type"]), {"seeds": {}, "aligned_at": {}}
        )
        row["seeds"][result["seed"]] = result["validation"]["bleu"]
        row["aligned_at"][result["seed"]] = next(
            (probe["step"] for probe in result["probe"] if probe["source_gain"] > 0.5), None
        )
    for row in table.values():
        values = list(row["seeds"].values())
        row.update(
            mean=statistics.mean(values), min=min(values), sd=statistics.stdev(values) if len(values) > 1 else 0.0
        )
    return table


def markdown_table(results: list[dict]) -> str:
    """docs/results.md's candidate x seed table: validation BLEU (greedy) per seed, mean ± sd, worst seed."""
    table = candidate_table(results)
    seeds = sorted({seed for row in table.values() for seed in row["seeds"]})
    lines = [
        "| candidate | positions | " + " | ".join(f"seed {s}" for s in seeds) + " | mean ± sd | worst |",
        "|" + " --- |" * (4 + len(seeds)),
    ]
    for (candidate, position_type), row in table.items():
        cells = [f"{row['seeds'][s]:.1f}" if s in row["seeds"] else "" for s in seeds]
        lines.append(
            f"| {candidate} | {position_type} | "
            + " | ".join(cells)
            + f" | {row['mean']:.1f} ± {row['sd']:.1f} | {row['min']:.1f} |"
        )
    return "\n".join(lines)


def joined_table(results: list[dict]) -> str:
    """The joined-pairs table: per (candidate, position type), validation BLEU (greedy) and length ratio on single
    pairs and on the subset joined k pairs at a time (mean ± sd over seeds), and the share of the single-pair BLEU
    that 2 joined pairs keep. Runs without joined scores are left out."""
    rows = {}
    for result in results:
        if "validation_joined" in result:
            key = (result["candidate"], result["position_embedding_type"])
            rows.setdefault(key, []).append({"1": result["validation"], **result["validation_joined"]})
    if not rows:
        return ""
    sets = sorted({name for runs in rows.values() for run in runs for name in run}, key=int)

    def spread(values):
        return f"{statistics.mean(values):.1f} ± {statistics.stdev(values) if len(values) > 1 else 0.0:.1f}"

    lines = [
        "| candidate | positions | seeds | "
        + " | ".join("single pairs" if name == "1" else f"{name} joined" for name in sets)
        + " | 2 joined / single |",
        "|" + " --- |" * (4 + len(sets)),
    ]
    for (candidate, position_type), runs in rows.items():
        cells = [
            spread([run[name]["bleu"] for run in runs])
            + f" ({statistics.mean(run[name]['length_ratio'] for run in runs):.2f})"
            for name in sets
        ]
        kept = [run["2"]["bleu"] / run["1"]["bleu"] for run in runs if "2" in run and run["1"]["bleu"] > 0]
        share = f"{statistics.mean(kept):.0%}" if kept else "n/a"
        lines.append(f"| {candidate} | {position_type} | {len(runs)} | " + " | ".join(cells) + f" | {share} |")
    return "\n".join(lines)


def plot_search(results: list[dict], path: str) -> None:
    """What separates a run that aligns from one that does not: source gain and cross-attention entropy (last
    decoder layer) over training steps, a line per run, a colour per candidate; validation BLEU in the legend."""
    from transformer_mt.plots import figure

    fig = figure(figsize=(11, 4.2))
    gain_ax, entropy_ax = fig.subplots(1, 2)
    colours = {}
    for result in sorted(results, key=lambda r: (r["candidate"], r["position_embedding_type"], r["seed"])):
        key = (result["candidate"], result["position_embedding_type"])
        colour = colours.setdefault(key, f"C{len(colours)}")
        steps = [row["step"] for row in result["probe"]]
        # the main job's position type drawn solid, the others dashed
        style = "-" if result["position_embedding_type"] == MAIN_JOB["position_embedding_type"] else "--"
        label = f"{key[0]} {key[1]} seed {result['seed']}: BLEU {result['validation']['bleu']:.1f}"
        gain_ax.plot(steps, [row["source_gain"] for row in result["probe"]], style, color=colour, label=label)
        entropy_ax.plot(steps, [row["cross_attention_entropy"][-1] for row in result["probe"]], style, color=colour)
    gain_ax.set_ylabel("source gain (nats/token): loss with a shuffled source - loss")
    entropy_ax.set_ylabel("cross-attention entropy / log(source length)")
    for ax in (gain_ax, entropy_ax):
        ax.set_xlabel("optimizer step")
        ax.grid(alpha=0.3)
    gain_ax.legend(fontsize=6)
    fig.suptitle("Does the decoder read its source? 64 validation pairs, every 100 steps")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


__all__ = [
    "CANDIDATES",
    "candidate_table",
    "joined_table",
    "markdown_table",
    "plot_search",
    "run_search",
    "validation_subset",
]
