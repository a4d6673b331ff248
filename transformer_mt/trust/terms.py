"""A glossary's terms followed by the trust step (`follow_terms`): each sentence's translation checked for the target
terms of the glossary terms its source holds, and where it misses one, in turn: more beams and the first hypothesis
that uses more of them (`redecode`), the term put in the place of the model's own word for it (`place_term`), the
term forced in as the last words of a new decode's forced beginning (`decode_other`)."""

import re

from ..engines.inputs import Hypotheses
from ..options import TranslationOptions
from ..quality import Calibration, Flags
from ..text.casing import fold, restore
from ..text.glossary import annotate, place_term, term_used
from ..text.languages import LanguageRules
from ..text.spans import mask, protected_ranges, unmask
from .decoded import Decoded, guards_fired, has_offsets, languages_for, sentence_features


TERM_BEAMS = 8  # the beams (and hypotheses) a sentence that missed a glossary term is decoded again with
TERM_PLACES = 12  # the places a term still missed is forced at, each one decode


def follow_terms(
    decoder,
    sentences: list[str],
    hypotheses: list[Hypotheses],
    flags: list[Flags],
    options: TranslationOptions,
    calibration: Calibration | None,
    prefixes: list[str | None] | None,
) -> None:
    """Each sentence's glossary terms checked (`flags[i].terms_missed`) and, unless the guards are off or the
    translation is a sample, followed where missed: decoded again with more beams, placed, forced (in that order,
    each on what the one before left missed); `hypotheses` and `flags` changed in place."""
    for i, record in enumerate(decoder.sentences):  # the markup's alignments travel with a translation a term changes
        if record.alignments is not None and not isinstance(hypotheses[i], Decoded):
            hypotheses[i] = Decoded(hypotheses[i], record.alignments, flags[i])
    found = [found_terms(record, options) for record in decoder.sentences]
    wanted = [tuple(dict.fromkeys(target for _, target in terms)) for terms in found]
    target = languages_for(decoder.engine, options).target
    for i, sentence in enumerate(hypotheses):
        flags[i].terms_missed = missed(sentence[0][0], wanted[i], target) if sentence else ()
    if options.guards and not options.do_sample:
        engine = decoder.engine
        _redecode_terms(engine, sentences, hypotheses, flags, wanted, options, calibration, decoder.redecode)
        _place_terms(engine, sentences, hypotheses, flags, found, options, decoder.decode_other)
        _force_terms(decoder, sentences, hypotheses, flags, found, wanted, options, calibration, prefixes)


def missed(translation: str, wanted: tuple[str, ...], rules: LanguageRules) -> tuple[str, ...]:
    """The target terms of `wanted` that `translation` does not use (`glossary.term_used`, by `rules`: the
    translation's language's)."""
    return tuple(target for target in wanted if not term_used(translation, target, rules))


def _redecode_terms(
    engine,
    sentences: list[str],
    hypotheses: list[Hypotheses],
    flags: list[Flags],
    wanted: list[tuple[str, ...]],
    options: TranslationOptions,
    calibration: Calibration | None,
    redecode,
) -> None:
    """The sentences whose best translation misses a glossary term decoded again with TERM_BEAMS beams, and the
    first of those hypotheses that uses more of the terms (all, if one does) and sets off no guard taken in its
    place, in `hypotheses` and `flags` (its confidence computed again); `flags[i].terms_redecoded` says which. The
    model follows the annotation in most sentences; where it keeps its own word in the best hypothesis, the term
    is often in another one."""
    todo = [i for i in range(len(sentences)) if flags[i].terms_missed]
    if not todo or getattr(engine.generation_config, "early_stopping", None) is not True:
        return  # n-best needs beam search, which CTranslate2 decodes only as generate(early_stopping=True) does
    beams = max(TERM_BEAMS, options.beams(engine.generation_config))
    languages = languages_for(engine, options)
    nbest = redecode(
        todo,
        options.replace(
            num_beams=beams,
            num_return_sequences=beams,
            guards=False,
            min_confidence=None,
            alignments=False,
            scores=True,
        ),
    )
    for i, sentence in zip(todo, nbest, strict=True):
        counts = [len(missed(text, wanted[i], languages.target)) for text, _ in sentence]
        ranks = [
            k
            for k in sorted(range(len(sentence)), key=lambda k: (counts[k], k))
            if counts[k] < len(flags[i].terms_missed)
            and not guards_fired(sentences[i], [sentence[k]], Flags(confidence=1.0), calibration, languages)
        ]
        if not ranks:
            continue
        k = ranks[0]
        order = [k] + [rank for rank in range(len(sentence)) if rank != k]
        chosen = [sentence[rank] for rank in order][: options.num_return_sequences]
        alignments = [sentence.alignments[rank] for rank in order][: len(chosen)] if sentence.alignments else None
        flags[i].terms_missed, flags[i].terms_redecoded = missed(chosen[0][0], wanted[i], languages.target), True
        if calibration is not None and chosen[0][1] is not None:
            features_of = sentence_features(engine, [sentences[i]], [chosen[0][0]], [chosen[0][1]])[0]
            flags[i].confidence = calibration.confidence(features_of)
        hypotheses[i] = Decoded(chosen, alignments, flags[i])


def _place_terms(
    engine,
    sentences: list[str],
    hypotheses: list[Hypotheses],
    flags: list[Flags],
    found: list[list[tuple[str, str]]],
    options: TranslationOptions,
    decode,
) -> None:
    """In the best translation of each sentence that still misses a glossary term (`found`: each sentence's terms
    as found and their targets), the model's own word for the term (the term translated alone) replaced by the
    required target term (`glossary.place_term`), as a lost span is put back; each term placed so is named in
    `flags[i].terms_placed`, one that cannot be placed stays in `terms_missed`."""
    todo = [i for i in range(len(sentences)) if flags[i].terms_missed and hypotheses[i] and hypotheses[i][0][0]]
    if not todo or not has_offsets(engine.tokenizer):
        return
    terms = {i: [(term, target) for term, target in found[i] if target in flags[i].terms_missed] for i in todo}
    rules = languages_for(engine, options).target
    alone = sorted({term for sentence_terms in terms.values() for term, _ in sentence_terms})
    plain = options.replace(
        glossary=(),
        guards=False,
        min_confidence=None,
        num_return_sequences=1,
        scores=False,
        format="text",
        alignments=False,
    )
    own = {
        term: sentence[0][0] if sentence else ""
        for term, sentence in zip(alone, decode(alone, plain, [f"glossary term {term!r}" for term in alone]))
    }
    alignments = engine.align_pairs([sentences[i] for i in todo], [hypotheses[i][0][0] for i in todo], options)
    for i, alignment in zip(todo, alignments, strict=True):
        text, protected = hypotheses[i][0][0], protected_ranges(sentences[i])
        for term, target in terms[i]:
            placed = place_term(sentences[i], text, alignment, term, own[term], target, rules, protected)
            if placed != text and term_used(placed, target, rules):
                text = placed
                flags[i].terms_placed += (target,)
        if text == hypotheses[i][0][0]:
            continue
        flags[i].terms_missed = missed(text, flags[i].terms_missed, rules)
        aligned = getattr(hypotheses[i], "alignments", None)
        realigned = engine.align_pairs([sentences[i]], [text], options) + aligned[1:] if aligned else None
        hypotheses[i] = Decoded([(text, hypotheses[i][0][1]), *hypotheses[i][1:]], realigned, flags[i])


def _force_terms(
    decoder,
    sentences: list[str],
    hypotheses: list[Hypotheses],
    flags: list[Flags],
    found: list[list[tuple[str, str]]],
    wanted: list[tuple[str, ...]],
    options: TranslationOptions,
    calibration: Calibration | None,
    prefixes: list[str | None] | None,
) -> None:
    """Each glossary term the best translation of a sentence still misses forced in, one term a round, each term
    tried once: the translation's words up to a place, then the term, given to the engine as the forced beginning
    of a new translation (the model writes the rest, inflecting around the term), at each of the TERM_PLACES places
    nearest to where the term stands in the source (by its share of the words), and of those translations that miss
    fewer of the terms and set off no guard the translation did not, the one the model scores best (`score_pairs`)
    taken; the terms it brings in are named in `flags[i].terms_forced`. Constrained beam search is in neither
    engine, a forced beginning in both. A sentence given a forced beginning of its own is left as it is."""
    engine, decode = decoder.engine, decoder.decode_other
    languages = languages_for(engine, options)

    def guards(i: int, sentence: Hypotheses) -> set[str]:
        return set(guards_fired(sentences[i], sentence, Flags(confidence=1.0), calibration, languages))

    tried = {
        i: set()
        for i in range(len(sentences))
        if flags[i].terms_missed and hypotheses[i] and hypotheses[i][0][0] and not (prefixes and prefixes[i])
    }
    while todo := [i for i in tried if set(flags[i].terms_missed) - tried[i]]:
        candidates = _forced_beginnings(decoder, todo, tried, sentences, hypotheses, flags, found)
        plain = options.replace(
            fold_case=False, guards=False, min_confidence=None, num_return_sequences=1, scores=False, alignments=False
        )
        outputs = decode(
            [source for _, source, _, _ in candidates],
            plain,
            [f"sentence {i + 1} with a glossary term forced" for i, *_ in candidates],
            [prefix for *_, prefix in candidates],
        )
        written = [
            (candidate, sentence[0][0])
            for candidate, sentence in zip(candidates, outputs)
            if sentence and sentence[0][0]
        ]
        scores = (
            engine.score_pairs(
                [source for (_, source, _, _), _ in written], [output for _, output in written], options=plain
            )
            if written
            else []
        )
        best, fired = {}, {i: guards(i, hypotheses[i]) for i in todo}
        for ((i, _, case, _), output), score in zip(written, scores, strict=True):
            text = restore(output, case, languages.target)
            left = missed(text, wanted[i], languages.target)
            if (
                len(left) < len(flags[i].terms_missed)
                and guards(i, [(text, None)]) <= fired[i]
                and (i not in best or score.score > best[i][1].score)
            ):
                best[i] = (text, score, left)
        for i, (text, score, left) in best.items():
            flags[i].terms_forced += tuple(target for target in flags[i].terms_missed if target not in left)
            flags[i].terms_placed = tuple(target for target in flags[i].terms_placed if target not in left)
            flags[i].terms_missed = left
            scored = hypotheses[i][0][1] is not None
            if calibration is not None and scored:
                flags[i].confidence = calibration.confidence(
                    sentence_features(engine, [sentences[i]], [text], [score.score])[0]
                )
            aligned = getattr(hypotheses[i], "alignments", None)
            realigned = engine.align_pairs([sentences[i]], [text], options) + aligned[1:] if aligned else None
            hypotheses[i] = Decoded([(text, score.score if scored else None), *hypotheses[i][1:]], realigned, flags[i])


def _forced_beginnings(
    decoder,
    todo: list[int],
    tried: dict[int, set],
    sentences: list[str],
    hypotheses: list[Hypotheses],
    flags: list[Flags],
    found: list[list[tuple[str, str]]],
) -> list[tuple[int, str, str, str]]:
    """For each sentence of `todo`, its next missed term not `tried` yet (then marked tried) forced at each of its
    `_places`: (the sentence, its source as the first decode showed it to the engine, folded, its case ("normal":
    as it is), the forced beginning)."""
    candidates = []
    for i in todo:
        record, case = decoder.sentences[i], decoder.sentences[i].case or "normal"
        target = next(target for target in flags[i].terms_missed if target not in tried[i])
        tried[i].add(target)
        translation = fold(hypotheses[i][0][0], case)
        term = next(term for term, required in found[i] if required == target)
        for start in _places(sentences[i], translation, term):
            head = translation[:start].rstrip()
            beginning = f"{head} {target}" if head else target[:1].upper() + target[1:]
            candidates.append((i, record.folded, case, beginning))
    return candidates


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


__all__ = ["TERM_BEAMS", "TERM_PLACES", "annotated", "follow_terms", "found_terms", "missed"]
