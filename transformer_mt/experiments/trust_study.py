"""The trust study (issue 41): what each shipped model's calibrated confidence buys on held-out data, and what the
guards catch.

For each shipped model and each test split, the split's sources are translated once by the default engine
(CTranslate2 where it can) as the translate command would (`calibration.rated_translations`: case folded, spans
put back, no guards), each rated by the model's calibration.json, and scored by sentence chrF against the
reference: Spearman's rho of confidence and chrF (and of the raw score), the precision (the share of kept
sentences with chrF >= the calibration's threshold) at 20%, 50%, 80% and 100% coverage, the curve. Then the same
sources with the guards (default options, each source one sentence): loops and copies before and after by
`quality`'s rules, the references' rate by the same rules, and BLEU/chrF before and after with sacreBLEU's paired
bootstrap. The copy guard's false alarms: the share of en-de-ui's identical.tsv (UI strings whose translation is
the source itself) on which it fires.

    python -m transformer_mt.experiments.trust_study
"""

import argparse
import json
import sys
import time
from pathlib import Path

from transformer_mt.calibration import measure, pairs_of, rated_translations, sentence_chrf
from transformer_mt.engines import load_engine
from transformer_mt.evaluation import compare_systems
from transformer_mt.experiments.studies import git_commit
from transformer_mt.machine import matmul_gflops
from transformer_mt.options import TranslationOptions
from transformer_mt.quality import is_copy, is_loop
from transformer_mt.text.languages import DE, EN, Languages
from transformer_mt.translation import translate_texts


MODELS = {
    "help-text": ("models/transformer-mt-en-de", "data/en-de"),
    "broader": ("models/transformer-mt-en-de-broad", "../shared/data/en-de-ui"),
}
SPLITS = {"en-de": "data/en-de", "en-de-ui": "../shared/data/en-de-ui"}
IDENTICAL = "../shared/data/en-de-ui/identical.tsv"
RESULTS = Path("docs/results/trust")


def rates(sources: list[str], outputs: list[str], confidences: list[float | None]) -> dict:
    loops = sum(is_loop(source, output, Languages(EN, DE)) for source, output in zip(sources, outputs))
    copies = sum(
        is_copy(source, output, confidence) for source, output, confidence in zip(sources, outputs, confidences)
    )
    return {
        "loops": loops,
        "copies": copies,
        "loop_rate": round(loops / len(sources), 4),
        "copy_rate": round(copies / len(sources), 4),
    }


def study(model: str, data: str) -> dict:
    engine = load_engine(model, "auto")
    sources, references = pairs_of(data, "test")
    calibration = engine.calibration
    outputs, found = rated_translations(engine, sources)
    confidences = [calibration.confidence(values) for values in found]
    chrf = sentence_chrf(outputs, references)
    guarded = translate_texts(engine, sources, TranslationOptions(split_sentences=False))
    after = [text[0][0] if text else "" for text in guarded]
    compared = compare_systems(
        {"without guards": outputs, "with guards": after}, references, ("bleu", "chrf"), "bs", 1000
    )
    return {
        "engine": engine.name,
        "pairs": len(sources),
        "confidence": measure(confidences, chrf, calibration.chrf_threshold, [v["score"] for v in found]),
        "guards": {
            "before": rates(sources, outputs, confidences),
            "after": rates(sources, after, [text.flags.confidence for text in guarded]),
            "references": rates(sources, references, [None] * len(sources)),
            "redecoded": sum(text.flags.redecoded for text in guarded),
            "flagged": sum(bool(text.flags.guards) for text in guarded),
            "paired": compared,
        },
    }


def false_alarms(model: str) -> dict:
    engine = load_engine(model, "auto")
    sources, _ = pairs_of(IDENTICAL, "test")
    outputs, found = rated_translations(engine, sources)
    confidences = [engine.calibration.confidence(values) for values in found]
    alarms = sum(
        is_copy(source, output, confidence) for source, output, confidence in zip(sources, outputs, confidences)
    )
    copied = sum(source.strip() == output.strip() for source, output in zip(sources, outputs))
    return {
        "messages": len(sources),
        "copied_by_the_model": copied,
        "copy_guard_fired": alarms,
        "false_alarm_rate": round(alarms / len(sources), 4),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results_dir", default=str(RESULTS))
    args = parser.parse_args(argv)
    results = {"commit": git_commit(), "gflops_before": round(matmul_gflops(), 1), "models": {}}
    start = time.monotonic()
    for name, (model, _) in MODELS.items():
        results["models"][name] = {split: study(model, data) for split, data in SPLITS.items()}
        results["models"][name]["identical"] = false_alarms(model)
        print(
            name,
            json.dumps(
                {
                    split: {"spearman": found["confidence"]["spearman"], "precision": found["confidence"]["precision"]}
                    for split, found in results["models"][name].items()
                    if split in SPLITS
                }
            ),
            file=sys.stderr,
        )
    results["seconds"] = round(time.monotonic() - start)
    results["gflops_after"] = round(matmul_gflops(), 1)
    out = Path(args.results_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "trust.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    plot(results, out / "coverage_precision.png")


def plot(results: dict, path: Path) -> None:
    """The coverage-precision curves, one panel per shipped model, one line per test split."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, len(results["models"]), figsize=(10, 4), sharey=True)
    for axis, (name, found) in zip(axes, results["models"].items()):
        for split in SPLITS:
            curve = found[split]["confidence"]["curve"]
            axis.plot([c for c, _ in curve], [p for _, p in curve], label=f"{split} test")
        axis.set(title=f"{name} model", xlabel="coverage (most confident share kept)")
        axis.grid(alpha=0.3)
    axes[0].set_ylabel("precision (share with chrF >= 50)")
    axes[0].legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)


if __name__ == "__main__":
    main()
