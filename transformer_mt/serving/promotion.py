"""Promotion: a model fine-tuned on suggestions (`transformer-mt-train --suggestions`) replaces the served one only
when it has earned it, and the server is switched to it atomically.

The rule (`decide`), on held-out data the candidate never trained on, by one metric (`PromotionSettings.metric`,
METRICS; chrF by default, sturdier than BLEU on short UI strings) and sacreBLEU's paired bootstrap
(`evaluation.compare_systems`, what `score.py --paired bs` runs; PAIRED_SAMPLES resamples):
- held-out ORIGINAL data (a split of the served model's own data): the candidate must not lose significantly:
  refused when its score is below the current model's with a p-value below ALPHA;
- held-out SUGGESTIONS (the `suggestions_held_out.tsv` training saves beside the candidate): it must gain
  significantly: its score above the current model's with a p-value below ALPHA (a gain that chance explains
  teaches nothing worth a switch); with fewer than MIN_HELD_OUT_SUGGESTIONS pairs the test refuses to decide.
BLEU and chrF are both compared and reported, each with its p-value, whichever decides.

`promote` runs the test and, when the candidate passes, switches what the server serves: `into` is a symlink
replaced in one step (a new symlink renamed over it with os.replace), so a server polling it
(`serving.reload`) sees either the old model or the new one, never half of one. Either way the decision (both
models' scores, p-values, the rule, the commit) is written beside the candidate as PROMOTION_FILE.
"""

import json
import os
import time
from dataclasses import dataclass, field

from ..data import load_parallel_data
from ..evaluation import compare_systems, split_pairs, translator
from ..machine import git_commit
from ..training.suggestion_data import HELD_OUT_FILE
from ..version import __version__


ALPHA = 0.05  # a difference with p below this is significant (a loss on the original data, a gain on suggestions)
PAIRED_SAMPLES = 1000  # bootstrap resamples, score.py --paired's default
MIN_HELD_OUT_SUGGESTIONS = 20  # fewer held-out suggestions decide nothing: refused
METRICS = ("bleu", "chrf")  # what may decide (both are always compared and reported)
METRIC = "chrf"  # the default: on short UI strings BLEU's 4-grams are often none, chrF's characters still count
METRIC_NAMES = {"bleu": "BLEU", "chrf": "chrF"}
PROMOTION_FILE = "promotion.json"  # beside the candidate: the decision and its figures


@dataclass(frozen=True)
class PromotionSettings:
    """How the promotion test compares the two models (the promote command's flags); checked where it is made."""

    metric: str = METRIC  # decides both halves of the rule
    alpha: float = ALPHA
    paired_samples: int = PAIRED_SAMPLES
    split: str = "test"  # of the held-out original data
    max_samples: int | None = None  # its first N pairs only
    num_beams: int | None = None  # None: each model's generation config
    source_lang: str = "en"
    target_lang: str = "de"

    def __post_init__(self):
        if self.metric not in METRICS:
            raise ValueError(f"--metric decides the promotion and is one of {', '.join(METRICS)}, got {self.metric!r}")
        if not 0 < self.alpha < 1:
            raise ValueError(f"--alpha is a significance level between 0 and 1, got {self.alpha!r}")

    def rule(self) -> str:
        """The rule in words, as the report states it."""
        name = METRIC_NAMES[self.metric]
        return (
            f"promoted only with no {name} loss significant at p < {self.alpha} on the held-out original data and "
            f"a {name} gain significant at p < {self.alpha} on the held-out suggestions (paired bootstrap, "
            f"{self.paired_samples} resamples)"
        )


@dataclass
class Decision:
    """Whether the candidate is promoted, why (one reason per rule it failed, or those it passed), and the record
    written beside it."""

    promoted: bool
    reasons: list[str]
    record: dict = field(default_factory=dict)


def held_out_suggestions(path: str, source_lang: str = "en", target_lang: str = "de") -> tuple[list, list]:
    """(sources, references) of a held-out suggestions file; a ValueError when it holds too few to decide by."""
    pairs = load_parallel_data({"held_out": path}, source_lang, target_lang)["held_out"]
    if len(pairs) < MIN_HELD_OUT_SUGGESTIONS:
        raise ValueError(
            f"{path} holds {len(pairs)} held-out suggestions; promotion needs at least "
            f"{MIN_HELD_OUT_SUGGESTIONS} to tell whether the candidate learned them: collect more "
            "suggestions (or hold out a larger share with --suggestions_held_out_share)."
        )
    return list(pairs[source_lang]), list(pairs[target_lang])


def compared(current: dict, candidate: dict, references: list[str], samples: int) -> dict:
    """The candidate against the current model on one set: BLEU and chrF, paired bootstrap p-values."""
    result = compare_systems({"current": current, "candidate": candidate}, references, ("bleu", "chrf"), "bs", samples)
    return {
        "pairs": len(references),
        **{
            name: {
                "current": metric["systems"]["current"]["score"],
                "candidate": metric["systems"]["candidate"]["score"],
                "p_value": metric["systems"]["candidate"]["p_value"],
                "signature": metric["signature"],
            }
            for name, metric in result["metrics"].items()
        },
    }


def change(comparison: dict, name: str) -> str:
    """One metric's change on one set: `chrF 35.15 -> 35.83 (p = 0.1399)`."""
    entry = comparison[name]
    return f"{METRIC_NAMES[name]} {entry['current']} -> {entry['candidate']} (p = {entry['p_value']:.4f})"


def decide(
    original: dict, suggestions: dict, settings: PromotionSettings = PromotionSettings()
) -> tuple[bool, list[str]]:
    """The rule (see the module) on the two comparisons `compared` made: (promoted, one reason per half)."""
    name, alpha = settings.metric, settings.alpha
    kept, gained = original[name], suggestions[name]
    loses = kept["candidate"] < kept["current"] and kept["p_value"] < alpha
    gains = gained["candidate"] > gained["current"] and gained["p_value"] < alpha
    reasons = [
        f"held-out original data: {change(original, name)}: "
        + (f"a significant loss (p < {alpha})" if loses else f"no significant loss (alpha {alpha})"),
        f"held-out suggestions: {change(suggestions, name)}: "
        + (f"a significant gain (p < {alpha})" if gains else f"no significant gain (alpha {alpha})"),
    ]
    return not loses and gains, reasons


def report(decision: Decision) -> str:
    """What the promote command prints: both sets' BLEU and chrF with their p-values, the rule, the reasons and the
    verdict."""
    record = decision.record
    lines = [
        f"{label} ({record[key]['pairs']} pairs): " + ", ".join(change(record[key], name) for name in METRICS)
        for key, label in (("original", "held-out original data"), ("suggestions", "held-out suggestions"))
    ]
    lines += [f"rule (by {METRIC_NAMES[record['rule']['metric']]}): {record['rule']['text']}", *decision.reasons]
    verdict = f"promoted: {record['into']} -> {record['candidate']}" if decision.promoted else "not promoted"
    return "\n".join([*lines, f"{verdict} (the decision: {os.path.join(record['candidate'], PROMOTION_FILE)})"])


def switch_served(into: str, candidate: str) -> None:
    """Point the symlink `into` at `candidate` in one step (a new symlink renamed over it); `into` may not exist
    yet, but must not be a real directory or file, which could not be replaced atomically."""
    if os.path.lexists(into) and not os.path.islink(into):
        raise ValueError(
            f"--into {into} is not a symlink: promotion replaces a symlink in one step. Move it aside "
            f"and link it: mv {into} {into}.0 && ln -s {into}.0 {into}"
        )
    staged = f"{into}.{os.getpid()}.promoting"
    os.symlink(os.path.abspath(candidate), staged, target_is_directory=True)
    os.replace(staged, into)


def promote(
    candidate: str,
    into: str,
    held_out_data: str,
    suggestions_held_out: str | None = None,
    current: str | None = None,
    settings: PromotionSettings = PromotionSettings(),
) -> Decision:
    """Test `candidate` against `current` (default: what `into` points at) and, when it passes, point `into` at it
    (see the module). `suggestions_held_out` defaults to the file training saved beside the candidate. The
    decision is written to candidate/PROMOTION_FILE and returned."""
    current = current or (os.path.realpath(into) if os.path.exists(into) else None)
    if current is None:
        raise ValueError(f"--into {into} does not exist yet: give --current, the model served now.")
    suggestions_held_out = suggestions_held_out or os.path.join(candidate, HELD_OUT_FILE)
    languages = settings.source_lang, settings.target_lang
    suggestion_sources, suggestion_references = held_out_suggestions(suggestions_held_out, *languages)
    _, sources, references = split_pairs(held_out_data, settings.split, *languages, max_samples=settings.max_samples)
    hypotheses = {}
    for name, path in (("current", current), ("candidate", candidate)):
        translate = translator(path, settings.num_beams)
        hypotheses[name] = (translate(sources), translate(suggestion_sources))
    samples = settings.paired_samples
    original = compared(hypotheses["current"][0], hypotheses["candidate"][0], references, samples)
    suggestions = compared(hypotheses["current"][1], hypotheses["candidate"][1], suggestion_references, samples)
    promoted, reasons = decide(original, suggestions, settings)
    record = {
        "promoted": promoted,
        "reasons": reasons,
        "candidate": os.path.abspath(candidate),
        "current": os.path.abspath(current),
        "into": os.path.abspath(into),
        "rule": {
            "metric": settings.metric,
            "alpha": settings.alpha,
            "paired_samples": samples,
            "min_held_out_suggestions": MIN_HELD_OUT_SUGGESTIONS,
            "text": settings.rule(),
        },
        "original": {"data": held_out_data, "split": settings.split, **original},
        "suggestions": {"file": suggestions_held_out, **suggestions},
        "num_beams": settings.num_beams,
        "commit": git_commit(os.path.dirname(os.path.abspath(__file__))),
        "version": __version__,
        "decided": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    if promoted:
        switch_served(into, candidate)
    partial = os.path.join(candidate, f"{PROMOTION_FILE}.partial")
    with open(partial, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=2, ensure_ascii=False)
    os.replace(partial, os.path.join(candidate, PROMOTION_FILE))
    return Decision(promoted, reasons, record)


__all__ = [
    "ALPHA",
    "Decision",
    "METRIC",
    "METRICS",
    "MIN_HELD_OUT_SUGGESTIONS",
    "PAIRED_SAMPLES",
    "PROMOTION_FILE",
    "PromotionSettings",
    "change",
    "compared",
    "decide",
    "held_out_suggestions",
    "promote",
    "report",
    "switch_served",
]
