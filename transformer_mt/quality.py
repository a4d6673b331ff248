"""Whether a translation can be trusted: its calibrated confidence, the guards against a small model's classic
failures, and one per-sentence `Flags` record of everything the steps around the engine found.

**Confidence.** From what a decoding pass already gives (the length-normalised log-probability the search ranks by,
the source's and the output's token counts, their ratio, characters per token on each side, whether the output
copies the source), a logistic
regression fitted on a validation split (`transformer_mt.calibration`) gives the probability that the sentence's
chrF against a reference is at least `Calibration.chrf_threshold`. The fit is stored beside the model as
`calibration.json` (coefficients, never a pickle) with the SHA-256 of the `model.safetensors` it was fitted on;
`Calibration.load` refuses, by name, a file fitted on other weights. A line's confidence is its weakest sentence's.

**Guards**, on the best hypothesis of each sentence, as the user will read it:
- a *loop*: a word or phrase of up to `LOOP_MAX_WORDS` words written twice or more back to back (case-insensitive,
  within one stretch between punctuation marks) in an output whose source holds no such repetition itself; a
  word its language may write exactly twice (`LanguageRules.doubling`: a German article then relative pronoun,
  "..., die die Datei enthält"; French "vous vous connectez") is grammatical and not one: the output read by the
  target language's rules, the source by the source language's;
- a *copy*: an output equal to its source (case-insensitive, spaces collapsed) of more than `COPY_MIN_WORDS` words,
  or of any length at a confidence below `COPY_CONFIDENCE` (UI strings such as "Name", "Status", "OK" are
  rightly left as they are; a short one flagged is tried in its other forms, `trust.labels`);
- a *length* ratio (output characters / source characters, for sources of at least `LENGTH_MIN_CHARS`) outside the
  band the calibration measured on the training data (its 0.5th to 99.5th percentile); without a calibration this
  guard is off.

Imports nothing of the package but `spans`' report and `languages`' rules: the translation layer runs the guards
and re-decodes.
"""

import dataclasses
import hashlib
import json
import math
import os
import re
from dataclasses import dataclass, field

from .text.languages import LanguageRules, Languages
from .text.spans import SpanReport


CALIBRATION_FILE = "calibration.json"
LOOP_MAX_WORDS = 4
COPY_MIN_WORDS = 3
COPY_CONFIDENCE = 0.2
LENGTH_MIN_CHARS = 20
FEATURES = (
    "score",
    "source_tokens",
    "output_tokens",
    "length_ratio",
    "source_chars_per_token",
    "output_chars_per_token",
    "copy",
)
GUARDS = ("loop", "copy", "length", "broken")
BROKEN = "\ufffd"  # what a tokenizer writes for byte pieces that make no UTF-8 character

_STRETCH = re.compile(r"[^\s.,;:!?()\[\]\"„“”«»]+(?:\s+[^\s.,;:!?()\[\]\"„“”«»]+)*")


def repetition(text: str, rules: LanguageRules) -> str | None:
    """The first word or phrase (up to LOOP_MAX_WORDS words) `text` writes twice or more back to back, within a
    stretch between punctuation marks, lower-cased; a word of `rules.doubling` (the text's language's) written
    exactly twice does not count."""
    for stretch in _STRETCH.findall(text):
        words = stretch.casefold().split()
        for n in range(1, LOOP_MAX_WORDS + 1):
            for start in range(len(words) - 2 * n + 1):
                phrase = words[start : start + n]
                copies = 1
                while words[start + copies * n : start + (copies + 1) * n] == phrase:
                    copies += 1
                if copies >= 2 and not (n == 1 and copies == 2 and phrase[0] in rules.doubling):
                    return " ".join(phrase)
    return None


def is_loop(source: str, output: str, languages: Languages) -> bool:
    """Whether `output` repeats a word or phrase back to back (`repetition`, by the target language's rules) that its
    source does not (by the source language's)."""
    return repetition(output, languages.target) is not None and repetition(source, languages.source) is None


def _normal(text: str) -> str:
    return " ".join(text.casefold().split())


def same_text(source: str, output: str) -> bool:
    """Whether `output` is `source` again (case-insensitive, spaces collapsed)."""
    return _normal(source) == _normal(output)


def is_copy(source: str, output: str, confidence: float | None = None) -> bool:
    """Whether `output` is its source again: more than COPY_MIN_WORDS words, or any length below COPY_CONFIDENCE."""
    if not source.strip() or not same_text(source, output):
        return False
    return len(source.split()) > COPY_MIN_WORDS or (confidence is not None and confidence < COPY_CONFIDENCE)


def weights_sha256(model_dir: str) -> str:
    """The SHA-256 of a saved model's `model.safetensors`: what a calibration is bound to."""
    digest = hashlib.sha256()
    with open(os.path.join(model_dir, "model.safetensors"), "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def features(source: str, output: str, source_tokens: int, output_tokens: int, score: float) -> dict[str, float]:
    """The calibration's inputs for one sentence, from what one decoding pass gives: the score, the token counts
    (logs) and their ratio, characters per token on each side (a source of rare words, an output of fragments,
    read as many short tokens), and whether the output copies the source."""
    return {
        "score": score,
        "source_tokens": math.log1p(source_tokens),
        "output_tokens": math.log1p(output_tokens),
        "length_ratio": math.log((output_tokens + 1) / (source_tokens + 1)),
        "source_chars_per_token": len(source) / max(1, source_tokens),
        "output_chars_per_token": len(output) / max(1, output_tokens),
        "copy": float(same_text(source, output)),
    }


class CalibrationError(ValueError):
    """A calibration.json that cannot be used with these weights (fitted on others, or unreadable)."""


@dataclass(frozen=True)
class Calibration:
    """P(sentence chrF >= chrf_threshold) = sigmoid(sum_i coefficients[i] * (x_i - mean[i]) / scale[i] + intercept),
    x the `features`; `length_band`: the guard's output/source character ratio band; `weights_sha256`: the weights
    it was fitted on; `fitted_on` and `pairs`: the data; `measured`: its figures on that data."""

    weights_sha256: str
    chrf_threshold: float
    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coefficients: tuple[float, ...]
    intercept: float
    length_band: tuple[float, float] | None = None
    fitted_on: str = ""
    pairs: int = 0
    measured: dict = field(default_factory=dict, hash=False, compare=False)

    def confidence(self, values: dict[str, float]) -> float:
        z = self.intercept + sum(
            c * (values[name] - m) / s
            for name, c, m, s in zip(self.features, self.coefficients, self.mean, self.scale)
        )
        return 1 / (1 + math.exp(-z)) if z > -700 else 0.0

    def off_length(self, source: str, output: str) -> bool:
        """Whether the output's length is outside the band for its source (sources of LENGTH_MIN_CHARS or more)."""
        if self.length_band is None or len(source.strip()) < LENGTH_MIN_CHARS:
            return False
        low, high = self.length_band
        return not low <= len(output.strip()) / len(source.strip()) <= high

    def save(self, model_dir: str) -> str:
        path = os.path.join(model_dir, CALIBRATION_FILE)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(dataclasses.asdict(self), f, indent=2)
            f.write("\n")
        return path

    @classmethod
    def load(cls, model_dir: str) -> "Calibration | None":
        """The calibration beside a saved model, None when there is none; a CalibrationError when it was fitted on
        other weights than the directory's model.safetensors."""
        path = os.path.join(model_dir, CALIBRATION_FILE)
        if not os.path.isfile(path):
            return None
        try:
            with open(path, encoding="utf-8") as f:
                stored = json.load(f)
            calibration = cls(
                **{
                    **stored,
                    **{name: tuple(stored[name]) for name in ("features", "mean", "scale", "coefficients")},
                    "length_band": tuple(stored["length_band"]) if stored.get("length_band") else None,
                }
            )
        except (ValueError, TypeError, KeyError) as error:
            raise CalibrationError(f"{path} cannot be read as a calibration: {error}") from None
        actual = weights_sha256(model_dir)
        if calibration.weights_sha256 != actual:
            raise CalibrationError(
                f"{path} was fitted on other weights (sha256 {calibration.weights_sha256[:12]}...)"
                f" than {model_dir}'s model.safetensors ({actual[:12]}...): fit it again with "
                f"transformer-mt-score --model {model_dir} --calibrate DATA"
            )
        return calibration


@dataclass
class Flags:
    """What the steps around the engine found in one sentence's best translation (or, `together`, in a text's):
    its protected spans, its calibrated confidence (None without a calibration), the guards that fired and were
    still firing after the re-decode, whether it was re-decoded, and whether it was left untranslated because its
    confidence was below the asked minimum."""

    spans: SpanReport = field(default_factory=SpanReport)
    confidence: float | None = None
    guards: tuple[str, ...] = ()
    redecoded: bool = False
    abstained: bool = False
    terms_missed: tuple[str, ...] = ()  # glossary target terms the translation does not use (`glossary.term_used`)
    terms_redecoded: bool = False  # decoded again with more beams for a missed term, another hypothesis taken
    terms_placed: tuple[str, ...] = ()  # glossary target terms put in the place of the model's own word for them
    terms_forced: tuple[str, ...] = ()  # glossary target terms forced into a new decode as its beginning's last words
    # a register asked for with prefer_more / prefer_less that the model has no tag for: its own register was kept
    register_unknown: bool = False
    pivot: bool = False  # translated through English by two models (`steps.pivot`)

    def names(self) -> list[str]:
        """The flags set, as the server's counters name them."""
        return [
            *self.guards,
            *(["redecoded"] if self.redecoded else []),
            *(["abstained"] if self.abstained else []),
            *(["span_repaired"] * len(self.spans.repaired)),
            *(["span_removed"] * len(self.spans.removed)),
            *(["span_lost"] * len(self.spans.lost)),
            *(["term_missed"] * len(self.terms_missed)),
            *(["term_redecoded"] if self.terms_redecoded else []),
            *(["term_placed"] * len(self.terms_placed)),
            *(["term_forced"] * len(self.terms_forced)),
            *(["register_unknown"] if self.register_unknown else []),
            *(["pivot"] if self.pivot else []),
        ]

    @property
    def notable(self) -> bool:
        """Whether a reader should hear of it: a span put back or lost, a guard, a re-decode, an abstention, a
        glossary term, a register unknown or a pivot through English."""
        return bool(self.names())

    def as_json(self) -> dict:
        """The answer's `flags` entry for one text (what is set; the confidence has its own field)."""
        shown = {
            "repaired": [span.text for span in self.spans.repaired],
            "removed": [span.text for span in self.spans.removed],
            "lost": [span.text for span in self.spans.lost],
            "guards": list(self.guards),
        }
        shown = {name: value for name, value in shown.items() if value}
        if self.redecoded:
            shown["redecoded"] = True
        if self.abstained:
            shown["abstained"] = True
        if self.terms_missed:
            shown["terms_missed"] = list(self.terms_missed)
        if self.terms_redecoded:
            shown["terms_redecoded"] = True
        if self.terms_placed:
            shown["terms_placed"] = list(self.terms_placed)
        if self.terms_forced:
            shown["terms_forced"] = list(self.terms_forced)
        if self.register_unknown:
            shown["register_unknown"] = True
        if self.pivot:
            shown["pivot"] = True
        return shown

    def comment(self) -> str:
        """One line for a translator's comment (.po) or note (XLIFF); empty when there is nothing to say."""
        parts = [f"confidence {self.confidence:.2f}"] if self.confidence is not None else []
        if self.abstained:
            parts.append("not translated: confidence below the minimum")
        if self.guards:
            parts.append(f"guards: {', '.join(self.guards)}")
        if self.spans.repaired:
            parts.append(f"put back: {' '.join(span.text for span in self.spans.repaired)}")
        if self.spans.removed:
            parts.append(
                f"written more often than the source holds, removed: "
                f"{' '.join(span.text for span in self.spans.removed)}"
            )
        if self.spans.lost:
            parts.append(f"lost: {' '.join(span.text for span in self.spans.lost)}")
        if self.terms_missed:
            parts.append(f"glossary terms not used: {', '.join(self.terms_missed)}")
        if self.terms_placed:
            parts.append(f"glossary terms put in the model's own word's place: {', '.join(self.terms_placed)}")
        if self.terms_forced:
            parts.append(f"glossary terms forced into the translation: {', '.join(self.terms_forced)}")
        if self.register_unknown:
            parts.append("the register asked for is not one this model can be asked for: its own kept")
        if self.pivot:
            parts.append("translated through English")
        return "; ".join(parts)


class Translation(str):
    """A translation as `translate()` returns it: the text, with its `flags` and their `confidence` (None unless a
    confidence was asked for and the model has a calibration)."""

    flags: Flags

    def __new__(cls, text: str, flags: "Flags | None" = None):
        translation = super().__new__(cls, text)
        translation.flags = flags or Flags()
        return translation

    @property
    def confidence(self) -> float | None:
        return self.flags.confidence


def together(flags: list[Flags]) -> Flags:
    """A text's flags from its sentences': spans and guards joined, the weakest sentence's confidence."""
    joined = Flags()
    for sentence in flags:
        joined.spans.carried += sentence.spans.carried
        joined.spans.repaired += sentence.spans.repaired
        joined.spans.lost += sentence.spans.lost
        joined.spans.removed += sentence.spans.removed
        joined.guards += tuple(guard for guard in sentence.guards if guard not in joined.guards)
        joined.redecoded |= sentence.redecoded
        joined.abstained |= sentence.abstained
        joined.terms_missed += sentence.terms_missed
        joined.terms_redecoded |= sentence.terms_redecoded
        joined.terms_placed += sentence.terms_placed
        joined.terms_forced += sentence.terms_forced
        joined.register_unknown |= sentence.register_unknown
        joined.pivot |= sentence.pivot
    known = [sentence.confidence for sentence in flags if sentence.confidence is not None]
    joined.confidence = min(known) if known else None
    return joined


__all__ = [
    "BROKEN",
    "CALIBRATION_FILE",
    "COPY_CONFIDENCE",
    "COPY_MIN_WORDS",
    "Calibration",
    "CalibrationError",
    "FEATURES",
    "Flags",
    "GUARDS",
    "LENGTH_MIN_CHARS",
    "LOOP_MAX_WORDS",
    "features",
    "is_copy",
    "is_loop",
    "Translation",
    "repetition",
    "same_text",
    "together",
    "weights_sha256",
]
