"""Suggestions that take effect: `POST /suggest` judged by the filters, stored durably (`suggestion_store`), decided
by an admin (or at once), and answered back as a translation memory (`Recall`) unless the request asks what an
accepted suggestion cannot give.
"""

import dataclasses
import hashlib
import os

from ..quality import weights_sha256
from ..text.glossary import term_used
from ..text.languages import LanguageRules, rules_for
from ..trust import annotated
from .fields import RequestError
from .suggestion_filter import judge_suggestion
from .suggestion_store import PER_DAY, PER_HOUR, SuggestionStore, normalise


MODES = ("review", "accept")  # review: each suggestion waits for an admin; accept: those that pass the filters count


def client_of(request, fields: dict) -> str:
    """Who a rate counts against: the API key (as a SHA-256 prefix, never the key itself), else the address."""
    key = fields.get("api_key")
    if isinstance(key, str) and key:
        return "key:" + hashlib.sha256(key.encode()).hexdigest()[:16]
    return "address:" + (request.client.host if request is not None and request.client else "?")


def weights_of(model) -> str | None:
    """The SHA-256 of the served model's model.safetensors (as a calibration records it), or None (an export)."""
    directory = getattr(model.engine.config, "name_or_path", None)
    if directory and os.path.isfile(os.path.join(directory, "model.safetensors")):
        return weights_sha256(directory)
    return None


def passed_over(text: str, remembered: str, options, target: LanguageRules) -> str | None:
    """Why the memory's translation `remembered` of `text` cannot answer a request translated with `options`
    (`TranslationOptions`, the request's own), or None: "min_confidence" when the request asks for a minimum
    confidence (an accepted suggestion has no calibrated confidence, its field is null, so it cannot be held to
    one), "glossary" when a glossary term found in `text` (as the model's sentences are searched:
    `trust.annotated`) is not used in it (`glossary.term_used` by the `target` language's rules, the check a model's
    translation gets)."""
    if options.min_confidence is not None:
        return "min_confidence"
    if options.glossary and not all(term_used(remembered, term, target) for _, term in annotated(text, options)[1]):
        return "glossary"
    return None


@dataclasses.dataclass
class Recall:
    """The texts of a request that the memory answers (index -> the accepted suggestion), those it holds but was
    passed over for (index -> `passed_over`'s reason), and how to answer the rest with the model and merge all."""

    asked: object  # fields.TranslateRequest
    found: dict[int, str]
    passed: dict[int, str] = dataclasses.field(default_factory=dict)

    async def answer(self, translated) -> dict:
        """`translated(asked)` (the model's answer) for the texts not found, merged with the memory's: each found
        text's `flags` say `{"memory": true}`, its alternatives are none and its confidence null; a text the
        memory was passed over for has the model's answer, its `flags` saying why (`{"memory_passed_over":
        "glossary"}`)."""
        asked = self.asked
        rest = [text for i, text in enumerate(asked.texts) if i not in self.found]
        answer = await translated(dataclasses.replace(asked, texts=rest, is_list=True)) if rest else {}
        fields = [
            "translatedText",
            *(["alternatives"] if asked.alternatives else []),
            *(["confidence"] if "confidence" in answer else []),
            "flags",
        ]
        remembered = {"translatedText": None, "alternatives": [], "confidence": None, "flags": {"memory": True}}
        merged, k = {field: [] for field in fields}, 0
        for i in range(len(asked.texts)):
            for field in fields:
                if i in self.found:
                    merged[field].append(self.found[i] if field == "translatedText" else remembered[field])
                else:
                    merged[field].append(answer[field][k] if field in answer else {})
            if i in self.passed:
                merged["flags"][-1] = {**merged["flags"][-1], "memory_passed_over": self.passed[i]}
            k += i not in self.found
        return merged if asked.is_list else {field: value[0] for field, value in merged.items()}


@dataclasses.dataclass
class Suggestions:
    """The server's suggestions: `mode` (MODES), the store, and the rates per client."""

    store: SuggestionStore
    mode: str = "review"
    per_hour: int = PER_HOUR
    per_day: int = PER_DAY

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"--suggestions is one of {', '.join(MODES)}, got {self.mode!r}")
        self.weights: dict[int, str | None] = {}

    def recall(self, model, asked) -> Recall | None:
        """The request's texts found in the memory (plain text only: an HTML text is never matched), each answered
        by it unless the request asks what it cannot give (`passed_over`: a glossary it does not follow, a minimum
        confidence), or None when the memory holds none of them."""
        if asked.format != "text":
            return None
        memory = self.store.memory(model.source, model.target, asked.texts)
        found, passed = {}, {}
        for i, text in enumerate(asked.texts):
            if (remembered := memory.get(normalise(text))) is None:
                continue
            if (reason := passed_over(text, remembered, asked.options, rules_for(model.target))) is None:
                found[i] = remembered
            else:
                passed[i] = reason
        return Recall(asked, found, passed) if found or passed else None

    def suggest(self, model, fields: dict, client: str) -> dict:
        """Judge and store one suggestion (blocking: the model scores it); `{"success": true}` as LibreTranslate
        answers, a 400 naming the filter that refuses it, a 429 over a rate."""
        q, s = fields["q"], fields["s"]
        self.store.check_rate(client, self.per_hour, self.per_day)  # before the model is asked
        reason, numbers = judge_suggestion(model.engine, q, s, model.source, model.target)
        if id(model) not in self.weights:
            self.weights[id(model)] = weights_of(model)
        status = "rejected" if reason else "accepted" if self.mode == "accept" else "pending"
        self.store.add(
            {
                "source": model.source,
                "target": model.target,
                "q": q,
                "s": s,
                "status": status,
                "verdict": reason or "passed",
                "numbers": numbers,
                "client": client,
                "weights": self.weights[id(model)],
                "decided_by": "filter" if reason else "accept mode" if status == "accepted" else None,
            },
            self.per_hour,
            self.per_day,
        )
        if reason:
            raise RequestError(reason)
        return {"success": True}


def suggest_fields(fields: dict, char_limit: int) -> dict:
    """/suggest's fields, checked as LibreTranslate checks them (its words for a missing one), and the API key."""
    for name in ("q", "s", "source", "target"):
        value = fields.get(name)
        if value is None or value == "":
            raise RequestError(f"Invalid request: missing {name} parameter")
        if not isinstance(value, str) or not value.strip():
            raise RequestError(f"Invalid request: {name} must be a non-empty string")
        if len(value) > char_limit:
            raise RequestError(f"Invalid request: {name} ({len(value)}) exceeds text limit ({char_limit})")
    return {
        "q": fields["q"],
        "s": fields["s"],
        "source": fields["source"].strip().lower(),
        "target": fields["target"].strip().lower(),
        "api_key": fields.get("api_key"),
    }


def suggestions_of(args) -> Suggestions | None:
    """The serve command's suggestions (--suggestions MODE, --suggestions_db PATH), or None when they are off."""
    return Suggestions(SuggestionStore(args.suggestions_db), args.suggestions) if args.suggestions else None


__all__ = [
    "MODES",
    "Recall",
    "Suggestions",
    "client_of",
    "passed_over",
    "suggest_fields",
    "suggestions_of",
    "weights_of",
]
