"""The score command (scripts/score.py) as named steps: its flags (`parse_args`, which builds the
`evaluation.ScoreSettings` they give once, `score_settings`), and its modes (`run`): one system scored on a split,
systems compared with a paired test (`compare`), a model's confidence fitted (`calibrate`), given pairs scored
(`score_given_pairs`); and how results are printed (`signature_line`, `comparison_lines`) and written
(`write_results`). Scoring itself is `transformer_mt.evaluation`'s."""

import argparse
import dataclasses
import json
import os

from ..calibration import DEFAULT_CHRF_THRESHOLD, fit
from ..engines.pair_scores import read_pairs
from ..evaluation import (
    METRICS,
    TOKENIZERS,
    ScoreSettings,
    compare_systems,
    evaluate_split,
    read_references,
    score_saved,
    scored_pairs,
    system_hypotheses,
)
from .streams import atomic_output


def parse_args(argv=None, description: str | None = None) -> argparse.Namespace:
    """The score command's flags, checked: a one-line parser error (exit 2) for a value that cannot work.
    `args.settings` is the `ScoreSettings` they give."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    system = parser.add_mutually_exclusive_group(required=True)
    system.add_argument("--model", help="A saved model directory, or a CTranslate2 export.")
    system.add_argument("--hypotheses", help="A file of translations, one per line of the split.")
    parser.add_argument("--data", help="The data to score on (required unless --pairs).")
    parser.add_argument("--pairs", help="Score these given pairs (source<TAB>target a line) with --model instead.")
    parser.add_argument("--length_penalty", type=float, help="--pairs: the score's length penalty.")
    parser.add_argument("--dataset_config_name", help="The Hub dataset's configuration, e.g. de-en.")
    parser.add_argument("--split", help="The split to score (default test; validation with --calibrate).")
    parser.add_argument("--source_lang", default="en")
    parser.add_argument("--target_lang", default="de")
    parser.add_argument("--max_samples", type=int, help="Score only the first N pairs.")
    parser.add_argument("--join_pairs", type=int, default=1, help="Join the pairs K at a time (default 1: none).")
    parser.add_argument("--by_column", help="Also score each value of this column of the data apart (e.g. origin).")
    parser.add_argument("--metrics", nargs="+", choices=METRICS, default=list(METRICS))
    parser.add_argument("--bootstrap", type=int, help="Bootstrap resamples for a 95%% confidence interval.")
    parser.add_argument("--num_beams", type=int, help="Beam size (default: the model's generation config).")
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--output", help="Also write the results as JSON here.")
    trust = parser.add_argument_group("--calibrate: the model's confidence (transformer_mt.quality)")
    trust.add_argument(
        "--calibrate",
        action="store_true",
        help="Fit the --model directory's confidence on --data's --split (default validation) and "
        "write it beside the weights as calibration.json (replacing one fitted before).",
    )
    trust.add_argument(
        "--chrf_threshold",
        type=float,
        default=DEFAULT_CHRF_THRESHOLD,
        help="--calibrate: the confidence is the probability that a sentence's chrF reaches this "
        f"(default {DEFAULT_CHRF_THRESHOLD:g}).",
    )
    trust.add_argument(
        "--length_data", help="--calibrate: the data whose train split gives the length guard's band (default --data)."
    )
    sacre = parser.add_argument_group("sacreBLEU's settings (kept in the signatures)")
    sacre.add_argument(
        "--tokenize",
        choices=TOKENIZERS,
        default="13a",
        help="BLEU's tokenizer: 13a (default), zh for Chinese, ja-mecab for Japanese, char, intl, ...",
    )
    sacre.add_argument("--lowercase", action="store_true", help="Score case-insensitively.")
    sacre.add_argument(
        "--references",
        nargs="+",
        default=[],
        metavar="FILE",
        help="More references: files of one reference a line, aligned with the split.",
    )
    sacre.add_argument(
        "--segment_scores",
        metavar="FILE",
        help="Also write each line's sentence BLEU and chrF as TSV: line, BLEU, chrF.",
    )
    sacre.add_argument(
        "--paired",
        choices=("bs", "ar"),
        help="Compare with --compare's systems: paired bootstrap "
        "resampling (bs) or approximate randomization (ar), p-values against this system.",
    )
    sacre.add_argument(
        "--compare",
        nargs="+",
        default=[],
        metavar="SYSTEM",
        help="--paired: other systems, each a file of hypotheses or a model directory.",
    )
    sacre.add_argument("--paired_samples", type=int, default=1000, help="--paired: resamples (default 1000).")
    args = parser.parse_args(argv)
    check_args(parser, args)
    return args


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    args.split = args.split or ("validation" if args.calibrate else "test")
    if args.calibrate and (args.model is None or not os.path.isfile(os.path.join(args.model, "model.safetensors"))):
        parser.error("--calibrate fits a saved model's confidence: give --model, a directory with model.safetensors")
    if args.calibrate and not 0 < args.chrf_threshold < 100:
        parser.error(f"--chrf_threshold is a chrF in (0, 100), got {args.chrf_threshold}")
    if args.pairs is not None:
        if args.model is None:
            parser.error("--pairs scores with a model: give --model")
        if not os.path.isfile(args.pairs):
            parser.error(f"--pairs {args.pairs!r} does not exist")
    elif args.data is None:
        parser.error("--data is required (or --pairs FILE with --model)")
    if args.output and os.path.exists(args.output):
        parser.error(f"--output {args.output!r} exists; results never replace a file")
    for name in ("max_samples", "num_beams", "batch_size", "join_pairs", "paired_samples"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    if bool(args.paired) != bool(args.compare):
        parser.error("--paired and --compare go together: a test, and the systems to compare with")
    for path in [args.segment_scores, args.output]:
        if path and os.path.exists(path):
            parser.error(f"{path!r} exists; results never replace a file")
    try:
        args.settings = score_settings(args)
    except ValueError as error:
        parser.error(str(error))


def score_settings(args: argparse.Namespace) -> ScoreSettings:
    """The `ScoreSettings` the flags give."""
    return ScoreSettings(
        split=args.split,
        source_lang=args.source_lang,
        target_lang=args.target_lang,
        config_name=args.dataset_config_name,
        max_samples=args.max_samples,
        join_pairs=args.join_pairs,
        by_column=args.by_column,
        num_beams=args.num_beams,
        batch_size=args.batch_size,
        metrics=tuple(args.metrics),
        bootstrap=args.bootstrap,
        tokenize=args.tokenize,
        lowercase=args.lowercase,
        references_files=tuple(args.references),
        segments=bool(args.segment_scores),
    )


def run(args: argparse.Namespace) -> None:
    """The command's mode: given pairs scored (--pairs), systems compared (--paired), or one system scored."""
    if args.pairs is not None:
        return score_given_pairs(args)
    if args.calibrate:
        return calibrate(args)
    if args.paired:
        return compare(args)
    results = evaluate_split(args.data, args.settings, model=args.model, hypotheses_file=args.hypotheses)
    inputs = (
        f"{results['pairs']} inputs of {args.join_pairs} joined pairs"
        if args.join_pairs > 1
        else f"{results['pairs']} pairs"
    )
    print(f"{results['system']} on {results['data']} ({results['split']}, {inputs}):")
    print(signature_line(results))
    if args.segment_scores:
        with atomic_output(args.segment_scores) as output:
            for number, row in enumerate(results.pop("segments"), 1):
                print(f"{number}\t{row['bleu']}\t{row['chrf']}", file=output)
    if args.output:
        write_results(results, args.output)


def compare(args) -> None:
    """--paired: this system against --compare's on the split, sacreBLEU's paired test."""
    settings = args.settings
    _, sources, references = scored_pairs(args.data, settings)
    baseline = args.model or args.hypotheses
    systems = {
        name: system_hypotheses(
            name, sources, settings.num_beams, settings.batch_size, is_model=True if name == args.model else None
        )
        for name in [baseline, *args.compare]
    }
    compared = compare_systems(
        systems,
        references,
        settings.metrics,
        args.paired,
        args.paired_samples,
        settings.tokenize,
        settings.lowercase,
        read_references(settings.references_files),
    )
    print(comparison_lines(compared))
    if args.output:
        write_results(compared, args.output)


def calibrate(args) -> None:
    """--calibrate: the model's confidence fitted on the split and written beside its weights."""
    settings = args.settings
    calibration = fit(
        args.model,
        args.data,
        settings.split,
        args.chrf_threshold,
        args.length_data,
        max_samples=settings.max_samples,
        source_lang=settings.source_lang,
        target_lang=settings.target_lang,
    )
    path = calibration.save(args.model)
    measured = calibration.measured
    print(
        f"{path}: P(chrF >= {calibration.chrf_threshold:g}) from {', '.join(calibration.features)}, fitted on "
        f"{calibration.pairs} pairs of {calibration.fitted_on}; Spearman with sentence chrF "
        f"{measured['spearman']} (the raw score's {measured['spearman_raw_score']}); precision at coverage "
        + ", ".join(f"{coverage} {value}" for coverage, value in measured["precision"].items())
        + f"; length band {calibration.length_band[0]}-{calibration.length_band[1]}"
    )
    if args.output:
        write_results(dataclasses.asdict(calibration), args.output)


def score_given_pairs(args) -> None:
    """--pairs: each given pair's scores under --model, a TSV row each."""
    scores = score_saved(args.model, *read_pairs(args.pairs), args.settings.batch_size, args.length_penalty)
    with atomic_output(args.output) as output:
        for number, pair in enumerate(scores, 1):
            print(f"{number}\t{pair.log_prob:.4f}\t{pair.tokens}\t{pair.per_token:.4f}\t{pair.score:.4f}", file=output)


def comparison_lines(compared: dict) -> str:
    """A table as sacreBLEU prints its paired tests: one row per system, the p-value against the baseline."""
    lines = [f"{compared['test']} ({compared['samples']} samples), baseline {compared['baseline']}:"]
    for name, metric in compared["metrics"].items():
        lines.append(f"{name}: {metric['signature']}")
        for system, entry in metric["systems"].items():
            interval = f" (μ = {entry['mean']} ± {entry['ci95']})" if "ci95" in entry else ""
            p_value = (
                ""
                if entry["p_value"] is None
                else f"  p = {entry['p_value']:.4f}" + (" *" if entry["p_value"] < 0.05 else "")
            )
            lines.append(f"  {system}: {entry['score']}{interval}{p_value}")
    return "\n".join(lines)


def signature_line(results: dict) -> str:
    """One line per metric as papers print them: `BLEU 23.31 (nrefs:1|...)`; then, scored by a column, one line
    per value: `origin=ddtp (1,500 pairs): BLEU 15.20, chrF 40.10`."""
    names = {"bleu": "BLEU", "chrf": "chrF", "chrf++": "chrF++", "ter": "TER"}
    lines = []
    for name, entry in results["scores"].items():
        interval = f" (mean {entry['mean']} ± {entry['ci95']})" if "ci95" in entry else ""
        lines.append(f"{names[name]} {entry['score']}{interval}  {entry['signature']}")
    for key, groups in results.items():
        if key.startswith("by_"):
            for value, group in groups.items():
                scores = ", ".join(f"{names[name]} {entry['score']:.2f}" for name, entry in group["scores"].items())
                lines.append(f"{key[3:]}={value} ({group['pairs']:,} pairs): {scores}")
    return "\n".join(lines)


def write_results(results: dict, path: str) -> None:
    """`results` as JSON at `path` (--output)."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(results, f, indent=2, ensure_ascii=False)


__all__ = [
    "calibrate",
    "check_args",
    "compare",
    "comparison_lines",
    "parse_args",
    "run",
    "score_given_pairs",
    "score_settings",
    "signature_line",
    "write_results",
]
