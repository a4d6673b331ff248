"""The trust step after the engine (`judge`; `transformer_mt.quality` says what each part means): each sentence's
best translation given its calibrated confidence, checked by the guards, decoded once more with a fallback search
when a guard fires (no n-gram of 3 tokens repeated, a repetition penalty, twice the beams, through the same steps),
flagged with confidence 0 when it still fires, and left untranslated when its confidence is below
`options.min_confidence`; a glossary's terms checked and followed where the translation misses one (more beams, the
term in the place of the model's own word, the term forced in). `transformer_mt.steps` runs it after the steps
around the engine, and hands it the `steps.Decoder` it decodes again through (`redecode`: the same sentences with
other options; `decode_other`: other sentences) and whose records say how each sentence was shown to the engine.
"""

import logging
import re

from .engines.alignment import check_tokenizer
from .engines.inputs import Hypotheses
from .options import OptionError, TranslationOptions
from .quality import Calibration, Flags, features, is_copy, is_loop
from .text.casing import fold, restore
from .text.glossary import annotate, place_term, term_used
from .text.spans import mask, protected_ranges, unmask
from .tokenization import target_side


logger = logging.getLogger(__name__)


class Decoded(list):
    """A sentence's hypotheses (a `Hypotheses` list) as `decode` gives them, or a text's as `translate_texts` does,
    with what is known of them: the word alignment of each to the sentence (`alignments`, with `format="html"`, so
    that `assemble` can place the inline markup; else None) and the `quality.Flags` of the best one (its protected
    spans, confidence, guards, re-decode, abstention)."""

    def __init__(self, hypotheses: Hypotheses, alignments: list | None = None, flags: Flags | None = None):
        super().__init__(hypotheses)
        self.alignments, self.flags = alignments, flags or Flags()


def has_offsets(tokenizer) -> bool:
    """Whether the tokenizer gives character offsets, which word alignments need (a converted Opus-MT model's
    SentencePiece tokenizer does not: its translations keep what the model wrote)."""
    try:
        check_tokenizer(tokenizer)
    except ValueError:
        return False
    return True



FALLBACK_NO_REPEAT = 3  # the re-decode forbids repeating any 3 tokens
FALLBACK_REPETITION_PENALTY = 1.2  # and makes every token already written less likely
# A re-decode is kept when no guard fires on it and its confidence keeps at least this share of the first's: on the
# validation splits, the shipped models' loops re-decoded so gained 50 (help-text) and 58 (broader) sentence chrF
# points in all, leaving 2 of 11 and 10 of 24 loops; demanding the same confidence (share 1) left 10 and 21.
FALLBACK_CONFIDENCE_KEPT = 0.5
TERM_BEAMS = 8  # the beams (and hypotheses) a sentence that missed a glossary term is decoded again with
TERM_PLACES = 12  # the places a term still missed is forced at, each one decode


def calibration_of(engine, options: TranslationOptions) -> Calibration | None:
    """The engine's calibration when the options need one (a confidence, a minimum) or the guards can use it; an
    OptionError naming the option when one is needed and the model has none that fits its weights."""
    calibration = engine.calibration
    if calibration is None and options.calibrated:
        option = "min_confidence" if options.min_confidence is not None else "confidence"
        why = engine.calibration_problem or "the model holds no calibration.json"
        raise OptionError(option, f"needs the model's calibrated confidence, and {why}: fit one with "
                                  "transformer-mt-score --model MODEL --calibrate DATA")
    return calibration


def sentence_features(engine, sources: list[str], outputs: list[str], scores: list[float]) -> list[dict]:
    """The calibration's inputs for each (source, output, score): what `quality.features` reads."""
    source_lengths = [len(ids) for ids in engine.tokenizer(sources)["input_ids"]] if sources else []
    output_lengths = [len(ids) for ids in target_side(engine.tokenizer)(outputs)["input_ids"]] if outputs else []
    return [features(source, output, source_length, output_length, score)
            for source, output, score, source_length, output_length
            in zip(sources, outputs, scores, source_lengths, output_lengths)]


def judge(decoder, sentences: list[str], hypotheses: list[Hypotheses], flags: list[Flags],
          options: TranslationOptions, names: list[str], prefixes: list[str | None] | None = None) -> list[Hypotheses]:
    """`hypotheses` (with scores when a calibration is used) after the trust step: `flags` filled in place (the
    confidence, the guards still firing, a re-decode, an abstention); `decoder` (a `steps.Decoder` over these
    sentences' records) decodes some of them again with other options (`redecode(indices, options)`) and other
    sentences (`decode_other`: a glossary term alone, a sentence with a term forced in). A re-decoded translation
    replaces the first when no guard fires on it and, with a calibration, its confidence keeps
    FALLBACK_CONFIDENCE_KEPT of the first's (a fallback search can trade a loop for garbage); else the first stays,
    flagged with the guards it set off and confidence 0. A sample (`do_sample`) is flagged, never decoded again: it
    is what was asked for, and its seed must give it again."""
    engine, redecode, decode = decoder.engine, decoder.redecode, decoder.decode_other
    calibration = calibration_of(engine, options)
    hypotheses = list(hypotheses)
    if calibration is not None:
        rated = [i for i, sentence in enumerate(hypotheses) if sentence and sentence[0][1] is not None]
        found = sentence_features(engine, [sentences[i] for i in rated], [hypotheses[i][0][0] for i in rated],
                                  [hypotheses[i][0][1] for i in rated])
        for i, values in zip(rated, found):
            flags[i].confidence = calibration.confidence(values)
    if options.guards:
        fired = {i: _fired(sentences[i], hypotheses[i], flags[i], calibration) for i in range(len(sentences))}
        fired = {i: guards for i, guards in fired.items() if guards}
        if fired and options.do_sample:  # a sample is what was asked for (and a seed must give it again): flagged
            for i, guards in fired.items():
                flags[i].guards = guards
        elif fired:
            again = sorted(fired)
            redecoded = redecode(again, _fallback(engine, options))
            for i, sentence in zip(again, redecoded, strict=True):
                still = _fired(sentences[i], sentence, sentence.flags, calibration)
                worse = calibration is not None and sentence.flags.confidence is not None \
                    and flags[i].confidence is not None \
                    and sentence.flags.confidence < FALLBACK_CONFIDENCE_KEPT * flags[i].confidence
                if still or worse:  # the first translation stays, flagged
                    flags[i].guards, flags[i].redecoded = fired[i], True
                    flags[i].confidence = 0.0 if calibration is not None else None
                else:
                    hypotheses[i], flags[i] = sentence, sentence.flags
                    flags[i].redecoded = True
            logger.warning(f"{len(fired)} translation(s) looped, copied the source or had an unlikely length and "
                           f"were decoded again; {sum(bool(flags[i].guards) for i in fired)} still did (flagged): "
                           + ", ".join(f"{names[i]} ({'/'.join(fired[i])})" for i in again))
    if options.glossary:
        found = [found_terms(record, options) for record in decoder.sentences]
        wanted = [tuple(dict.fromkeys(target for _, target in terms)) for terms in found]
        for i, sentence in enumerate(hypotheses):
            flags[i].terms_missed = _missed(sentence[0][0], wanted[i]) if sentence else ()
        if options.guards and not options.do_sample:
            _follow_terms(engine, sentences, hypotheses, flags, wanted, options, calibration, redecode)
            _place_terms(engine, sentences, hypotheses, flags, found, options, decode)
            _force_terms(decoder, sentences, hypotheses, flags, found, wanted, options, calibration, prefixes)
    if options.min_confidence is not None:
        for i, sentence in enumerate(hypotheses):
            if sentence and flags[i].confidence is not None and flags[i].confidence < options.min_confidence:
                hypotheses[i] = [(sentences[i], score) for _, score in sentence]
                flags[i].abstained = True
    return hypotheses


def _missed(translation: str, wanted: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(target for target in wanted if not term_used(translation, target))


def _follow_terms(engine, sentences: list[str], hypotheses: list[Hypotheses], flags: list[Flags],
                  wanted: list[tuple[str, ...]], options: TranslationOptions, calibration: Calibration | None,
                  redecode) -> None:
    """The sentences whose best translation misses a glossary term decoded again with TERM_BEAMS beams, and the
    first of those hypotheses that uses more of the terms (all, if one does) and sets off no guard taken in its
    place, in `hypotheses` and `flags` (its confidence computed again); `flags[i].terms_redecoded` says which. The
    model follows the annotation in most sentences; where it keeps its own word in the best hypothesis, the term
    is often in another one."""
    missed = [i for i in range(len(sentences)) if flags[i].terms_missed]
    if not missed or getattr(engine.generation_config, "early_stopping", None) is not True:
        return  # n-best needs beam search, which CTranslate2 decodes only as generate(early_stopping=True) does
    beams = max(TERM_BEAMS, options.beams(engine.generation_config))
    nbest = redecode(missed, options.replace(num_beams=beams, num_return_sequences=beams, guards=False,
                                             min_confidence=None, alignments=False, scores=True))
    for i, sentence in zip(missed, nbest, strict=True):
        counts = [len(_missed(text, wanted[i])) for text, _ in sentence]
        ranks = [k for k in sorted(range(len(sentence)), key=lambda k: (counts[k], k))
                 if counts[k] < len(flags[i].terms_missed)
                 and not _fired(sentences[i], [sentence[k]], Flags(confidence=1.0), calibration)]
        if not ranks:
            continue
        k = ranks[0]
        order = [k] + [rank for rank in range(len(sentence)) if rank != k]
        chosen = [sentence[rank] for rank in order][: options.num_return_sequences]
        alignments = [sentence.alignments[rank] for rank in order][: len(chosen)] if sentence.alignments else None
        flags[i].terms_missed, flags[i].terms_redecoded = _missed(chosen[0][0], wanted[i]), True
        if calibration is not None and chosen[0][1] is not None:
            features_of = sentence_features(engine, [sentences[i]], [chosen[0][0]], [chosen[0][1]])[0]
            flags[i].confidence = calibration.confidence(features_of)
        hypotheses[i] = Decoded(chosen, alignments, flags[i])


def _place_terms(engine, sentences: list[str], hypotheses: list[Hypotheses], flags: list[Flags],
                 found: list[list[tuple[str, str]]], options: TranslationOptions, decode) -> None:
    """In the best translation of each sentence that still misses a glossary term (`found`: each sentence's terms
    as found and their targets), the model's own word for the term (the term translated alone) replaced by the
    required target term (`glossary.place_term`), as a lost span is put back; each term placed so is named in
    `flags[i].terms_placed`, one that cannot be placed stays in `terms_missed`."""
    missed = [i for i in range(len(sentences)) if flags[i].terms_missed and hypotheses[i] and hypotheses[i][0][0]]
    if not missed or not has_offsets(engine.tokenizer):
        return
    terms = {i: [(term, target) for term, target in found[i] if target in flags[i].terms_missed] for i in missed}
    alone = sorted({term for sentence_terms in terms.values() for term, _ in sentence_terms})
    plain = options.replace(glossary=(), guards=False, min_confidence=None, num_return_sequences=1, scores=False,
                            format="text", alignments=False)
    own = {term: sentence[0][0] if sentence else "" for term, sentence in zip(alone, decode(
        alone, plain, [f"glossary term {term!r}" for term in alone]))}
    alignments = engine.align_pairs([sentences[i] for i in missed], [hypotheses[i][0][0] for i in missed], options)
    for i, alignment in zip(missed, alignments, strict=True):
        text, protected = hypotheses[i][0][0], protected_ranges(sentences[i])
        for term, target in terms[i]:
            placed = place_term(sentences[i], text, alignment, term, own[term], target, protected)
            if placed != text and term_used(placed, target):
                text = placed
                flags[i].terms_placed += (target,)
        if text == hypotheses[i][0][0]:
            continue
        flags[i].terms_missed = _missed(text, flags[i].terms_missed)
        aligned = getattr(hypotheses[i], "alignments", None)
        realigned = engine.align_pairs([sentences[i]], [text], options) + aligned[1:] if aligned else None
        hypotheses[i] = Decoded([(text, hypotheses[i][0][1]), *hypotheses[i][1:]], realigned, flags[i])


def _force_terms(decoder, sentences: list[str], hypotheses: list[Hypotheses], flags: list[Flags],
                 found: list[list[tuple[str, str]]], wanted: list[tuple[str, ...]], options: TranslationOptions,
                 calibration: Calibration | None, prefixes: list[str | None] | None) -> None:
    """Each glossary term the best translation of a sentence still misses forced in, one term a round, each term
    tried once: the translation's words up to a place, then the term, given to the engine as the forced beginning
    of a new translation (the model writes the rest, inflecting around the term), at each of the TERM_PLACES places
    nearest to where the term stands in the source (by its share of the words), and of those translations that miss
    fewer of the terms and set off no guard the translation did not, the one the model scores best (`score_pairs`)
    taken; the terms it brings in are named in `flags[i].terms_forced`. Constrained beam search is in neither
    engine, a forced beginning in both. A sentence given a forced beginning of its own is left as it is."""
    engine, decode = decoder.engine, decoder.decode_other

    def guards(i: int, sentence: Hypotheses) -> set[str]:
        return set(_fired(sentences[i], sentence, Flags(confidence=1.0), calibration))

    tried = {i: set() for i in range(len(sentences)) if flags[i].terms_missed and hypotheses[i]
             and hypotheses[i][0][0] and not (prefixes and prefixes[i])}
    # each sentence as the first decode showed it to the engine (folded), and its case ("normal": as it is)
    shown = [record.folded for record in decoder.sentences]
    cases = [record.case or "normal" for record in decoder.sentences]
    while todo := [i for i in tried if set(flags[i].terms_missed) - tried[i]]:
        candidates = []  # (sentence, source as the engine sees it, its case, the forced beginning)
        for i in todo:
            target = next(target for target in flags[i].terms_missed if target not in tried[i])
            tried[i].add(target)
            translation = fold(hypotheses[i][0][0], cases[i])
            term = next(term for term, required in found[i] if required == target)
            for start in _places(sentences[i], translation, term):
                head = translation[:start].rstrip()
                candidates.append((i, shown[i], cases[i],
                                   f"{head} {target}" if head else target[:1].upper() + target[1:]))
        plain = options.replace(fold_case=False, guards=False, min_confidence=None, num_return_sequences=1,
                                scores=False, alignments=False)
        outputs = decode([source for _, source, _, _ in candidates], plain,
                         [f"sentence {i + 1} with a glossary term forced" for i, *_ in candidates],
                         [prefix for *_, prefix in candidates])
        written = [(candidate, sentence[0][0]) for candidate, sentence in zip(candidates, outputs) if sentence
                   and sentence[0][0]]
        scores = engine.score_pairs([source for (_, source, _, _), _ in written],
                                    [output for _, output in written]) if written else []
        best, fired = {}, {i: guards(i, hypotheses[i]) for i in todo}
        for ((i, _, case, _), output), score in zip(written, scores, strict=True):
            text = restore(output, case)
            missed = _missed(text, wanted[i])
            if len(missed) < len(flags[i].terms_missed) and guards(i, [(text, None)]) <= fired[i] \
                    and (i not in best or score.score > best[i][1].score):
                best[i] = (text, score, missed)
        for i, (text, score, missed) in best.items():
            flags[i].terms_forced += tuple(target for target in flags[i].terms_missed if target not in missed)
            flags[i].terms_placed = tuple(target for target in flags[i].terms_placed if target not in missed)
            flags[i].terms_missed = missed
            scored = hypotheses[i][0][1] is not None
            if calibration is not None and scored:
                flags[i].confidence = calibration.confidence(
                    sentence_features(engine, [sentences[i]], [text], [score.score])[0])
            aligned = getattr(hypotheses[i], "alignments", None)
            realigned = engine.align_pairs([sentences[i]], [text], options) + aligned[1:] if aligned else None
            hypotheses[i] = Decoded([(text, score.score if scored else None), *hypotheses[i][1:]], realigned,
                                    flags[i])


def _places(source: str, translation: str, term: str) -> list[int]:
    """Where in `translation` a term may be forced (the characters its words begin at, and its end unless a full
    stop, question or exclamation mark ends it): the TERM_PLACES places nearest to the share of `source`'s words
    that come before `term` (as found in it)."""
    starts = [match.start() for match in re.finditer(r"\S+", translation)]
    starts += [] if translation.rstrip()[-1:] in (".", "!", "?") else [len(translation)]
    at = source.find(term)
    centre = (len(source[:at].split()) / max(1, len(source.split())) if at >= 0 else 0.5) * (len(starts) - 1)
    return [starts[k] for k in sorted(range(len(starts)), key=lambda k: abs(k - centre))[:TERM_PLACES]]


def found_terms(record, options: TranslationOptions) -> list[tuple[str, str]]:
    """The glossary's terms found in a sentence's source, (as found, target), found once per record
    (`steps.Sentence.terms`, kept by a re-decode)."""
    if record.terms is None:
        record.terms = annotated(record.source, options)[1]
    return record.terms


def annotated(sentence: str, options: TranslationOptions) -> tuple[str, list[tuple[str, str]]]:
    """`sentence` with each glossary term outside its protected spans (a URL's "table.html") annotated
    (`glossary.annotate`), and the (as found, target) terms."""
    masked, spans = mask(sentence)
    annotated, found = annotate(masked, options.glossary, options.glossary_ignore_case)
    return (unmask(annotated, spans)[0] if spans else annotated), found


def _fired(source: str, sentence: Hypotheses, flags: Flags, calibration: Calibration | None) -> tuple[str, ...]:
    """The guards the best hypothesis sets off."""
    if not sentence:
        return ()
    output = sentence[0][0]
    fired = [name for name, test in (("loop", lambda: is_loop(source, output)),
                                     ("copy", lambda: is_copy(source, output, flags.confidence)),
                                     ("length", lambda: calibration is not None
                                      and calibration.off_length(source, output))) if test()]
    return tuple(fired)


def _fallback(engine, options: TranslationOptions) -> TranslationOptions:
    """The re-decode's options: no 3 tokens repeated, a repetition penalty of FALLBACK_REPETITION_PENALTY, twice the
    beams (at least 4) unless sampling or the model's generation config stops beams otherwise than with
    `early_stopping=True` (the models this package writes do; CTranslate2 decodes no other beam search); no guards, no
    minimum (the caller judges the result)."""
    changes = {"no_repeat_ngram_size": options.no_repeat_ngram_size or FALLBACK_NO_REPEAT, "guards": False,
               "min_confidence": None, "repetition_penalty": options.repetition_penalty or FALLBACK_REPETITION_PENALTY}
    if not options.do_sample and getattr(engine.generation_config, "early_stopping", None) is True:
        changes["num_beams"] = max(4, 2 * options.beams(engine.generation_config))  # else greedily (CTranslate2)
    return options.replace(**changes)


__all__ = ["FALLBACK_CONFIDENCE_KEPT", "FALLBACK_NO_REPEAT", "FALLBACK_REPETITION_PENALTY", "TERM_BEAMS",
           "TERM_PLACES", "Decoded", "annotated", "calibration_of", "found_terms", "has_offsets", "judge",
           "sentence_features"]
