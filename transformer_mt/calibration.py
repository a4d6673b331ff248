"""Fitting a model's confidence (`quality.Calibration`): its translations of a validation split, each sentence's
chrF against its reference, and a logistic regression (scikit-learn, the `[train]` extra) from what the decoding
pass gave (`quality.FEATURES`) to whether that chrF reaches `chrf_threshold`; the length guard's band from the
training split's character ratios. `transformer-mt-score --model M --data D --calibrate` writes it beside the model.

`measure` gives what a threshold buys on any split: the Spearman correlation of confidence and sentence chrF (and of
the raw score, for comparison), the precision (the share of kept sentences whose chrF reaches the threshold) at
20%, 50% and 80% coverage against keeping everything, and the coverage-precision curve.
"""

import dataclasses
import math
import os

from .data import load_parallel_data
from .engines import EngineSettings, load_engine
from .options import TranslationOptions, guards_in_evaluation
from .quality import FEATURES, LENGTH_MIN_CHARS, Calibration, weights_sha256
from .translation import translate_texts
from .trust import sentence_features


DEFAULT_CHRF_THRESHOLD = 50.0
COVERAGES = (0.2, 0.5, 0.8, 1.0)
BAND = (0.005, 0.995)  # the length guard's band: these quantiles of the training pairs' character ratios


def pairs_of(data: str, split: str, source_lang: str = "en", target_lang: str = "de") -> tuple[list, list]:
    """A data directory's split, or a single .tsv/.csv/.jsonl file taken as that split, as (sources, references)."""
    splits = load_parallel_data({split: data} if os.path.isfile(data) else data, source_lang, target_lang)
    if split not in splits:
        raise ValueError(f"{data} has no {split!r} split; it has: {', '.join(splits)}")
    return list(splits[split][source_lang]), list(splits[split][target_lang])


def rated_translations(engine, sources: list[str], batch_size: int = 32) -> tuple[list[str], list[dict]]:
    """Each source's translation as the translate command makes it (case folded, spans put back), without the
    guards (`options.guards_in_evaluation`: the confidence is fitted on the first decode), and the calibration's
    features of it, each source one sentence."""
    options = TranslationOptions(
        split_sentences=False, scores=True, guards=guards_in_evaluation(fits_confidence=True), batch_size=batch_size
    )
    outputs = [hypotheses[0] if hypotheses else ("", 0.0) for hypotheses in translate_texts(engine, sources, options)]
    found = sentence_features(engine, sources, [text for text, _ in outputs], [score for _, score in outputs])
    return [text for text, _ in outputs], found


def sentence_chrf(outputs: list[str], references: list[str]) -> list[float]:
    from sacrebleu.metrics import CHRF

    chrf = CHRF()
    return [chrf.sentence_score(output, [reference]).score for output, reference in zip(outputs, references)]


def length_band(sources: list[str], targets: list[str]) -> tuple[float, float]:
    """The BAND quantiles of target/source character ratios over pairs whose source has LENGTH_MIN_CHARS or more."""
    import numpy as np

    ratios = [
        len(target.strip()) / len(source.strip())
        for source, target in zip(sources, targets)
        if len(source.strip()) >= LENGTH_MIN_CHARS
    ]
    if len(ratios) < 100:
        raise ValueError(
            f"the length band needs 100 training pairs with sources of {LENGTH_MIN_CHARS}+ characters; "
            f"got {len(ratios)}"
        )
    low, high = np.quantile(ratios, BAND)
    return round(float(low), 4), round(float(high), 4)


def fit(
    model_dir: str,
    data: str,
    split: str = "validation",
    chrf_threshold: float = DEFAULT_CHRF_THRESHOLD,
    length_data: str | None = None,
    engine: EngineSettings | str = "auto",
    max_samples: int | None = None,
    source_lang: str = "en",
    target_lang: str = "de",
) -> Calibration:
    """The calibration of the model saved in `model_dir`, fitted on `data`'s `split` as `engine` decodes it
    (`engines.load_engine`'s settings), with the length band of `length_data`'s (default `data`'s) train split."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    translator = load_engine(model_dir, engine)
    sources, references = pairs_of(data, split, source_lang, target_lang)
    sources, references = sources[:max_samples], references[:max_samples]
    outputs, found = rated_translations(translator, sources)
    chrf = sentence_chrf(outputs, references)
    labels = [score >= chrf_threshold for score in chrf]
    if len(set(labels)) < 2:
        raise ValueError(
            f"every sentence of {data} ({split}) is on one side of chrF {chrf_threshold}: choose another "
            "--chrf_threshold"
        )
    rows = [[values[name] for name in FEATURES] for values in found]
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(rows, labels)
    scaler, regression = model[0], model[1]
    train_sources, train_targets = pairs_of(length_data or data, "train", source_lang, target_lang)
    calibration = Calibration(
        weights_sha256=weights_sha256(model_dir),
        chrf_threshold=chrf_threshold,
        features=FEATURES,
        mean=tuple(float(x) for x in scaler.mean_),
        scale=tuple(float(x) for x in scaler.scale_),
        coefficients=tuple(float(x) for x in regression.coef_[0]),
        intercept=float(regression.intercept_[0]),
        length_band=length_band(train_sources, train_targets),
        fitted_on=f"{data} ({split})",
        pairs=len(sources),
    )
    measured = measure(
        [calibration.confidence(values) for values in found],
        chrf,
        chrf_threshold,
        [values["score"] for values in found],
    )
    return dataclasses.replace(
        calibration, measured={key: measured[key] for key in ("spearman", "spearman_raw_score", "precision")}
    )


def measure(
    confidences: list[float], chrf: list[float], chrf_threshold: float, raw_scores: list[float] | None = None
) -> dict:
    """Spearman's rho of confidence and sentence chrF (and of the raw score), the precision at each of COVERAGES
    (the most confident share kept), and the whole coverage-precision curve (every 1%)."""
    from scipy.stats import spearmanr

    order = sorted(range(len(confidences)), key=lambda i: -confidences[i])
    good = [chrf[i] >= chrf_threshold for i in order]

    def precision(coverage: float) -> float:
        kept = max(1, math.ceil(coverage * len(good)))
        return round(sum(good[:kept]) / kept, 4)

    result = {
        "sentences": len(chrf),
        "chrf_threshold": chrf_threshold,
        "spearman": round(float(spearmanr(confidences, chrf).statistic), 4),
        "precision": {f"{coverage:.0%}": precision(coverage) for coverage in COVERAGES},
        "curve": [[k / 100, precision(k / 100)] for k in range(1, 101)],
    }
    if raw_scores is not None:
        result["spearman_raw_score"] = round(float(spearmanr(raw_scores, chrf).statistic), 4)
    return result


__all__ = [
    "BAND",
    "COVERAGES",
    "DEFAULT_CHRF_THRESHOLD",
    "fit",
    "length_band",
    "measure",
    "pairs_of",
    "rated_translations",
    "sentence_chrf",
]
