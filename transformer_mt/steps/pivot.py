"""Translating through English: a pair with no model of its own (fr→de) decoded by two that exist (fr→en, en→de).

A `Pivot` holds the two hops' engines; `decode` (what `steps.decode` is) decodes a pivot's sentences in two passes
through `decoder.decode`, each hop with every step of its own model (case, spans, markup alignment, terms, the
trust step), and joins them per sentence, as Bergamot's `remapAlignments` does:
- the hypotheses are the second hop's (its alternatives too), each scored by the sum of the hops' scores;
- each hypothesis' word alignment to the source sentence is the first hop's (source → English) composed with the
  second's (English → target), so that `translation.assemble` puts the inline markup where the source had it;
- a glossary's terms are found in the source, carried to the English text by the first hop's word alignment and
  given to the second hop as terms of its own (English words → target term); a term kept as written (no target)
  is kept by both hops; a term the alignment cannot carry is named in `terms_missed` when the translation lacks it;
- the confidence is the product of the hops' calibrated confidences, and the sentence abstains (keeps its source)
  when the product is below `min_confidence`; `flags.pivot` is set.
"""

import dataclasses
import re

from ..engines import Engine
from ..engines.alignment import Alignment
from ..engines.inputs import default_names
from ..options import TranslationOptions
from ..quality import Flags
from ..text.glossary import Glossary, find_terms, term_used
from ..text.languages import rules_for
from ..trust import Aligner, Decoded, has_offsets
from . import decoder


PIVOT = "en"  # the language every pivoted pair goes through
_EDGE = re.compile(r"^\W+|\W+$")


@dataclasses.dataclass
class Pivot:
    """Two engines that translate `source` → English → `target` (the first hop's config is the source side's)."""

    first: Engine
    second: Engine

    @property
    def config(self):
        return self.first.config

    @property
    def tokenizer(self):  # the source side's: what sentence lengths are counted in
        return self.first.tokenizer

    @property
    def name(self) -> str:
        return self.first.name if self.first.name == self.second.name else f"{self.first.name}+{self.second.name}"

    @property
    def reason(self) -> str:
        return f"through English: {self.first.reason}; then {self.second.reason}"

    @property
    def calibration(self):
        """Something when both hops have a calibration (the product of their confidences is the pivot's)."""
        return self.second.calibration if self.first.calibration is not None else None

    def seed(self, seed: int) -> None:
        self.first.seed(seed)
        self.second.seed(seed)

    def score_pairs(self, sources: list[str], targets: list[str], batch_size: int = 32) -> list:
        """The second hop's scores of `targets` given the first hop's English of `sources`, each read whole: how a
        suggestion for a pivoted pair is judged (`serving.suggestion_filter`)."""
        options = TranslationOptions(split_sentences=False, guards=False, target_lang=PIVOT, batch_size=batch_size)
        unique = list(dict.fromkeys(sources))  # a suggestion's source comes twice: the model's own and the given
        decoded = decoder.decode(self.first, unique, options, default_names(len(unique)))
        english = {
            source: hypotheses[0][0] if hypotheses and hypotheses[0][0].strip() else "."
            for source, hypotheses in zip(unique, decoded)
        }
        return self.second.score_pairs([english[source] for source in sources], targets, batch_size=batch_size)


def decode(
    engine,
    sentences: list[str],
    options: TranslationOptions,
    names: list[str],
    prefixes: list[str | None] | None = None,
    alone: list[bool] | None = None,
) -> list[Decoded]:
    """`decoder.decode`, or, for a `Pivot`, the two hops' decodes joined per sentence (the module's docstring)."""
    if not isinstance(engine, Pivot):
        return decoder.decode(engine, sentences, options, names, prefixes, alone)
    options = options.replace(target_lang=options.target_lang or getattr(engine.second.config, "target_lang", None))
    if prefixes is not None and any(prefixes):
        raise ValueError("a forced beginning (target_prefix) cannot be given to a pair translated through English")
    kept = tuple((term, target) for term, target in options.glossary if target is None)
    first = decoder.decode(
        engine.first,
        sentences,
        hop_options(options, options.source_lang, PIVOT).replace(glossary=kept),
        names,
        alone=alone,
    )
    english = [hypotheses[0][0] if hypotheses else "" for hypotheses in first]
    first_alignments = _first_alignments(engine.first, options, sentences, english, first)
    carried = carried_terms(sentences, english, first_alignments, options)
    second = decoder.decode(
        engine.second,
        english,
        hop_options(options, PIVOT, options.target_lang, options.num_return_sequences).replace(
            glossary=kept + carried
        ),
        names,
        alone=alone,
    )
    return [
        _joined(source, one, two, alignment, options)
        for source, one, two, alignment in zip(sentences, first, second, first_alignments, strict=True)
    ]


def hop_options(options: TranslationOptions, source: str, target: str, count: int = 1) -> TranslationOptions:
    """The options of one hop: its languages, `count` hypotheses, no minimum (the pivot abstains on the product)."""
    return options.replace(
        source_lang=source if options.split_sentences else None,  # the languages' rules: the configs' then
        target_lang=target,
        num_return_sequences=count,
        num_beams=max(options.num_beams or 1, count) if options.num_beams else None,
        min_confidence=None,
        confidence=options.calibrated,
        formality=options.formality if target != PIVOT else "default",
    )


def _first_alignments(engine: Engine, options, sentences, english, first) -> list[Alignment | None]:
    """The first hop's alignment of each sentence to its best English hypothesis: the decode's (html), else made now
    for the sentences whose glossary terms are to be carried; None where there is none."""
    found = [hypotheses.alignments[0] if hypotheses.alignments and hypotheses else None for hypotheses in first]
    wanted = [
        i
        for i, (source, text) in enumerate(zip(sentences, english))
        if found[i] is None and text and _terms_in(source, options)
    ]
    if wanted and has_offsets(engine.tokenizer):
        aligner = Aligner(engine, hop_options(options, options.source_lang, PIVOT))
        for i, alignment in zip(wanted, aligner([sentences[i] for i in wanted], [english[i] for i in wanted])):
            found[i] = alignment
    return found


def _terms_in(sentence: str, options: TranslationOptions) -> list[tuple[int, int, str]]:
    """(start, end, target) of each glossary term with a target found in `sentence` (`glossary.find_terms`)."""
    found = find_terms(sentence, options.glossary, options.glossary_ignore_case)
    return [(start, end, target) for start, end, target in found if target is not None]


def carried_terms(
    sentences: list[str], english: list[str], alignments: list[Alignment | None], options: TranslationOptions
) -> Glossary:
    """The second hop's glossary: each source term's English words (those its words are aligned to, from the first
    to the last, punctuation at the edges left out) with the term's target; a term aligned to nothing is not
    carried. Of two targets for the same English words, the first found wins."""
    carried: dict[str, str] = {}
    for sentence, text, alignment in zip(sentences, english, alignments):
        if not alignment:
            continue
        starts = [match.span() for match in re.finditer(r"\S+", sentence)]
        words = text.split()
        for start, end, target in _terms_in(sentence, options):
            covered = {i for i, (a, b) in enumerate(starts) if a < end and start < b}
            aligned = sorted(j for i, j in alignment if i in covered)
            if not aligned:
                continue
            phrase = _EDGE.sub("", " ".join(words[aligned[0] : aligned[-1] + 1]))
            if phrase:
                carried.setdefault(phrase, target)
    return tuple(carried.items())


def compose(first: Alignment | None, second: Alignment | None) -> Alignment | None:
    """Source word i aligned to target word k wherever i is aligned to an English word j aligned to k."""
    if first is None or second is None:
        return None
    through = {}
    for j, k in second:
        through.setdefault(j, []).append(k)
    return sorted({(i, k) for i, j in first for k in through.get(j, ())})


def _joined(source: str, first: Decoded, second: Decoded, first_alignment, options: TranslationOptions) -> Decoded:
    """One sentence's pivoted hypotheses: the second hop's, scored, aligned and flagged as the module says."""
    head = first[0][1] if first else None
    hypotheses = [(text, None if score is None or head is None else score + head) for text, score in second]
    alignments = (
        [compose(first_alignment, alignment) or [] for alignment in second.alignments]
        if second.alignments is not None and first_alignment is not None
        else None
    )
    flags = joined_flags(first.flags, second.flags)
    if hypotheses and options.glossary:
        missed = [
            target
            for _, _, target in _terms_in(source, options)
            if not term_used(hypotheses[0][0], target, rules_for(options.target_lang))
            and target not in flags.terms_missed
        ]
        flags.terms_missed += tuple(missed)
    confidence = flags.confidence
    if hypotheses and options.min_confidence is not None and confidence is not None:
        if confidence < options.min_confidence:
            hypotheses = [(source, score) for _, score in hypotheses]
            alignments = [decoder.unchanged(source)] * len(hypotheses) if alignments is not None else None
            flags.abstained = True
    if not options.scores:
        hypotheses = [(text, None) for text, _ in hypotheses]
    return Decoded(hypotheses, alignments, flags)


def joined_flags(first: Flags, second: Flags) -> Flags:
    """A pivoted sentence's flags: the spans of the source as the first hop carried them, with what either hop
    repaired, removed or lost; both hops' guards and re-decodes; the second hop's terms and register; the product
    of the confidences (None unless both hops have one); `pivot` set."""
    spans = dataclasses.replace(
        first.spans,
        repaired=first.spans.repaired + second.spans.repaired,
        removed=first.spans.removed + second.spans.removed,
        lost=first.spans.lost + second.spans.lost,
    )
    known = first.confidence is not None and second.confidence is not None
    return dataclasses.replace(
        second,
        spans=spans,
        confidence=first.confidence * second.confidence if known else None,
        guards=first.guards + tuple(guard for guard in second.guards if guard not in first.guards),
        redecoded=first.redecoded or second.redecoded,
        terms_missed=second.terms_missed,
        pivot=True,
    )


__all__ = ["PIVOT", "Pivot", "carried_terms", "compose", "decode", "hop_options", "joined_flags"]
