"""The position study's results as docs/results.md shows them: the spread over seeds, the figure (BLEU against input
length, a line per position type) and the tables scripts/position_study.py prints."""

import statistics

from transformer_mt.configuration import POSITION_EMBEDDING_TYPES

from .position_sets import ALL_PAIRS, EXACT_TABLE


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
                by_set[name] = {
                    key: {
                        "mean": statistics.mean(values),
                        "min": min(values),
                        "max": max(values),
                        "sd": statistics.stdev(values) if len(values) > 1 else 0.0,
                        "n": len(values),
                    }
                    for key, values in metrics.items()
                }
    return summary


def plot_study(results: dict, path: str) -> None:
    """BLEU against mean input length: a panel for the plain variant and one for the variants trained with joined
    pairs, a line per position type, the band spanning the seeds."""
    from transformer_mt.plots import figure

    lengths = {
        name: described["mean_source_tokens"] for name, described in results["sets"].items() if name != ALL_PAIRS
    }
    order = sorted(lengths, key=lengths.get)
    x = [lengths[name] for name in order]
    panels = {
        "plain": [v for v in results["summary"] if v == "plain"],
        "trained with joined pairs": [v for v in results["summary"] if v != "plain"],
    }
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
                ax.plot(
                    x,
                    [by_set[name]["bleu"]["mean"] for name in order],
                    "o-" if variant != EXACT_TABLE else "s--",
                    color=color,
                    label=f"{label}, {seeds} seed{'s' if seeds > 1 else ''}",
                )
                ax.fill_between(
                    x,
                    [by_set[name]["bleu"]["min"] for name in order],
                    [by_set[name]["bleu"]["max"] for name in order],
                    color=color,
                    alpha=0.2,
                )
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
    parts = [
        f"\nBLEU / chrF per set, {' and '.join(variants)}:\n" + markdown_summary(results, variants)
        for variants in (["plain"], [variant for variant in results["summary"] if variant != "plain"])
        if variants
    ]
    parts += [
        "\nTest BLEU (greedy, all pairs) per seed:\n" + markdown_seeds(results),
        "\nWhat is kept from 2 to 8 joined pairs:\n" + markdown_kept(results),
        f"\nFigure and numbers: {output_dir}/position_study.png, position_study.json",
    ]
    return "\n".join(parts)


def markdown_summary(results: dict, variants=None) -> str:
    """docs/results.md's table: BLEU and chrF mean ± sd and the length ratio per set, per variant and type (of
    `variants` only, when given: one table per group of variants keeps the columns readable)."""
    columns = [
        (variant, position_type)
        for variant, by_type in results["summary"].items()
        if variants is None or variant in variants
        for position_type in by_type
    ]
    header = (
        "| set | mean source tokens | "
        + " | ".join(f"{t}{'' if v == 'plain' else ' ' + v}: BLEU / chrF (length ratio)" for v, t in columns)
        + " |"
    )
    lines = [header, "|" + " --- |" * (2 + len(columns))]
    for name, described in sorted(results["sets"].items(), key=lambda item: item[1]["mean_source_tokens"]):
        cells = []
        for variant, position_type in columns:
            scores = results["summary"][variant][position_type][name]
            cells.append(
                f"{scores['bleu']['mean']:.1f} ± {scores['bleu']['sd']:.1f} / "
                f"{scores['chrf']['mean']:.1f} ± {scores['chrf']['sd']:.1f} "
                f"({scores['length_ratio']['mean']:.2f})"
            )
        lines.append(f"| {name} | {described['mean_source_tokens']:.0f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown_kept(results: dict, longer: int = 8, shorter: int = 2) -> str:
    """Per variant and type: BLEU and length ratio at `shorter` and `longer` joined pairs (mean over seeds), and
    the share of the `shorter`-joined BLEU kept at `longer`."""
    lines = [
        f"| positions | seeds | {shorter} joined: BLEU (length ratio) | {longer} joined: BLEU (length ratio) "
        f"| kept at {longer} |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for variant, by_type in results["summary"].items():
        for position_type, by_set in by_type.items():
            near, far = by_set.get(f"{shorter} joined pairs"), by_set.get(f"{longer} joined pairs")
            if near is None or far is None:
                continue
            kept = far["bleu"]["mean"] / near["bleu"]["mean"] if near["bleu"]["mean"] else float("nan")
            name = position_type + ("" if variant == "plain" else f" {variant}")
            lines.append(
                f"| {name} | {near['bleu']['n']} | {near['bleu']['mean']:.1f} "
                f"({near['length_ratio']['mean']:.2f}) | {far['bleu']['mean']:.1f} "
                f"({far['length_ratio']['mean']:.2f}) | {kept:.0%} |"
            )
    return "\n".join(lines)


def markdown_seeds(results: dict, set_name: str = ALL_PAIRS) -> str:
    """Seed spread: BLEU of every run on one set (default the whole test split), per position type and seed, with
    mean ± sd and the gap between the best and the worst seed."""
    table = {}
    for run_result in results["runs"]:
        if run_result["variant"] == "plain":
            table.setdefault(run_result["position_embedding_type"], {})[run_result["seed"]] = run_result["scores"][
                set_name
            ]["bleu"]
    seeds = sorted({seed for by_seed in table.values() for seed in by_seed})
    lines = [
        "| positions | " + " | ".join(f"seed {seed}" for seed in seeds) + " | mean ± sd | best - worst |",
        "|" + " --- |" * (3 + len(seeds)),
    ]
    for position_type, by_seed in table.items():
        values = list(by_seed.values())
        sd = statistics.stdev(values) if len(values) > 1 else 0.0
        cells = [f"{by_seed[seed]:.1f}" if seed in by_seed else "" for seed in seeds]
        lines.append(
            f"| {position_type} | "
            + " | ".join(cells)
            + f" | {statistics.mean(values):.1f} ± {sd:.1f} | {max(values) - min(values):.1f} |"
        )
    return "\n".join(lines)


__all__ = ["markdown_kept", "markdown_seeds", "markdown_summary", "plot_study", "seed_spread", "study_report"]
