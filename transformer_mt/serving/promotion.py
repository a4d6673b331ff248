"""Promotion: a model fine-tuned on suggestions (`transformer-mt-train --suggestions`) replaces the served one only
when it has earned it, and the server is switched to it atomically.

The rule (`decide`), on held-out data the candidate never trained on:
- held-out ORIGINAL data (a split of the served model's own data): the candidate must not lose significantly:
  refused when its BLEU is below the current model's with a paired bootstrap p-value (`evaluation.compare_systems`,
  what `score.py --paired bs` runs; PAIRED_SAMPLES resamples) below ALPHA;
- held-out SUGGESTIONS (the `suggestions_held_out.tsv` training saves beside the candidate): its corpus chrF
  (SUGGESTION_METRIC, sturdier than BLEU on short UI strings) must be higher than the current model's; with fewer
  than MIN_HELD_OUT_SUGGESTIONS pairs the test refuses to decide.

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


ALPHA = 0.05  # a loss on the original data with p below this is significant: no promotion
PAIRED_SAMPLES = 1000  # bootstrap resamples, score.py --paired's default
MIN_HELD_OUT_SUGGESTIONS = 20  # fewer held-out suggestions decide nothing: refused
ORIGINAL_METRIC = "bleu"  # what the original data is compared by (the package's headline metric)
SUGGESTION_METRIC = "chrf"  # what the held-out suggestions are compared by
PROMOTION_FILE = "promotion.json"  # beside the candidate: the decision and its figures


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
        raise ValueError(f"{path} holds {len(pairs)} held-out suggestions; promotion needs at least "
                         f"{MIN_HELD_OUT_SUGGESTIONS} to tell whether the candidate learned them: collect more "
                         "suggestions (or hold out a larger share with --suggestions_held_out_share).")
    return list(pairs[source_lang]), list(pairs[target_lang])


def compared(current: dict, candidate: dict, references: list[str], samples: int) -> dict:
    """The candidate against the current model on one set: BLEU and chrF, paired bootstrap p-values."""
    result = compare_systems({"current": current, "candidate": candidate}, references, ("bleu", "chrf"), "bs",
                             samples)
    return {"pairs": len(references), **{name: {"current": metric["systems"]["current"]["score"],
                                                "candidate": metric["systems"]["candidate"]["score"],
                                                "p_value": metric["systems"]["candidate"]["p_value"],
                                                "signature": metric["signature"]}
                                         for name, metric in result["metrics"].items()}}


def decide(original: dict, suggestions: dict, alpha: float = ALPHA) -> tuple[bool, list[str]]:
    """The rule (see the module) on the two comparisons `compared` made: (promoted, reasons)."""
    kept, gained = original[ORIGINAL_METRIC], suggestions[SUGGESTION_METRIC]
    loses = kept["candidate"] < kept["current"] and kept["p_value"] < alpha
    better = gained["candidate"] > gained["current"]
    reasons = [
        f"held-out original data: BLEU {kept['current']} -> {kept['candidate']} (p = {kept['p_value']:.4f}): "
        + (f"a significant loss (p < {alpha})" if loses else f"no significant loss (alpha {alpha})"),
        f"held-out suggestions: chrF {gained['current']} -> {gained['candidate']}: "
        + ("better" if better else "not better"),
    ]
    return not loses and better, reasons


def switch_served(into: str, candidate: str) -> None:
    """Point the symlink `into` at `candidate` in one step (a new symlink renamed over it); `into` may not exist
    yet, but must not be a real directory or file, which could not be replaced atomically."""
    if os.path.lexists(into) and not os.path.islink(into):
        raise ValueError(f"--into {into} is not a symlink: promotion replaces a symlink in one step. Move it aside "
                         f"and link it: mv {into} {into}.0 && ln -s {into}.0 {into}")
    staged = f"{into}.{os.getpid()}.promoting"
    os.symlink(os.path.abspath(candidate), staged, target_is_directory=True)
    os.replace(staged, into)


def promote(candidate: str, into: str, held_out_data: str, suggestions_held_out: str | None = None,
            current: str | None = None, split: str = "test", max_samples: int | None = None,
            num_beams: int | None = None, samples: int = PAIRED_SAMPLES, alpha: float = ALPHA,
            source_lang: str = "en", target_lang: str = "de") -> Decision:
    """Test `candidate` against `current` (default: what `into` points at) and, when it passes, point `into` at it
    (see the module). `suggestions_held_out` defaults to the file training saved beside the candidate. The
    decision is written to candidate/PROMOTION_FILE and returned."""
    current = current or (os.path.realpath(into) if os.path.exists(into) else None)
    if current is None:
        raise ValueError(f"--into {into} does not exist yet: give --current, the model served now.")
    suggestions_held_out = suggestions_held_out or os.path.join(candidate, HELD_OUT_FILE)
    suggestion_sources, suggestion_references = held_out_suggestions(suggestions_held_out, source_lang, target_lang)
    _, sources, references = split_pairs(held_out_data, split, source_lang, target_lang, max_samples=max_samples)
    hypotheses = {}
    for name, path in (("current", current), ("candidate", candidate)):
        translate = translator(path, num_beams)
        hypotheses[name] = (translate(sources), translate(suggestion_sources))
    original = compared(hypotheses["current"][0], hypotheses["candidate"][0], references, samples)
    suggestions = compared(hypotheses["current"][1], hypotheses["candidate"][1], suggestion_references, samples)
    promoted, reasons = decide(original, suggestions, alpha)
    record = {"promoted": promoted, "reasons": reasons, "candidate": os.path.abspath(candidate),
              "current": os.path.abspath(current), "into": os.path.abspath(into),
              "rule": {"alpha": alpha, "paired_samples": samples, "original_metric": ORIGINAL_METRIC,
                       "suggestion_metric": SUGGESTION_METRIC, "min_held_out_suggestions": MIN_HELD_OUT_SUGGESTIONS},
              "original": {"data": held_out_data, "split": split, **original},
              "suggestions": {"file": suggestions_held_out, **suggestions},
              "num_beams": num_beams, "commit": git_commit(os.path.dirname(os.path.abspath(__file__))),
              "version": __version__, "decided": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    if promoted:
        switch_served(into, candidate)
    partial = os.path.join(candidate, f"{PROMOTION_FILE}.partial")
    with open(partial, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=2, ensure_ascii=False)
    os.replace(partial, os.path.join(candidate, PROMOTION_FILE))
    return Decision(promoted, reasons, record)


__all__ = ["ALPHA", "Decision", "MIN_HELD_OUT_SUGGESTIONS", "ORIGINAL_METRIC", "PAIRED_SAMPLES", "PROMOTION_FILE",
           "SUGGESTION_METRIC", "compared", "decide", "held_out_suggestions", "promote", "switch_served"]
