"""Sentences: a text split into the sentences a model translates one at a time, and their translations joined back.

A model trained on sentence pairs writes one sentence for any input; a paragraph given whole comes back as one
sentence, and the rest of its text is lost. Translation therefore splits each text into sentences, translates
them, and joins the translations with the whitespace the source had between its sentences (a newline stays a
newline, a double space a double space).

The segmenter is sentencex (Wikimedia): maintained, with releases in 2026, and rules for about 300 languages
(abbreviations such as "e.g." or "z. B.", numbers such as "3.5"), falling back to a generic rule for others.
pysbd, the usual alternative, has had no release since 2021.
"""

from sentencex import segment


def split(text: str, language: str) -> tuple[list[str], list[str]]:
    """The sentences of `text` (each without surrounding whitespace) and the whitespace between each one and the
    next (one fewer). A blank text has no sentences; a text without a sentence end is one sentence."""
    sentences, separators, gap = [], [], ""
    for piece in segment(language, text):  # pieces keep their whitespace: "".join(pieces) == text
        sentence = piece.strip()
        if not sentence:
            gap += piece
            continue
        gap += piece[: len(piece) - len(piece.lstrip())]
        # sentencex ends a sentence at a full stop before a capital even with no space between; in help text that
        # is a name ("CEILING.PRECISE", "DialogControl.Value"), and prose puts a space after its full stops
        if sentences and not gap and sentences[-1].endswith("."):
            sentences[-1] += sentence
        else:
            if sentences:
                separators.append(gap)
            sentences.append(sentence)
        gap = piece[len(piece.rstrip()) :]
    return sentences, separators


def join(sentences: list[str], separators: list[str]) -> str:
    """`sentences` (translations) joined with the source's `separators` (as `split` returns them), stripped."""
    parts = [sentences[0]] if sentences else []
    for separator, sentence in zip(separators, sentences[1:], strict=True):
        parts += [separator, sentence]
    return "".join(parts).strip()


def rewrap(source: str, translation: str) -> str:
    """`translation` with the leading and trailing whitespace of `source` (an HTML text node's, a .po message's):
    what surrounds a text belongs to its document, not to the model. A blank source stays as it is."""
    if not source.strip():
        return source
    return source[: len(source) - len(source.lstrip())] + translation + source[len(source.rstrip()) :]


def segmenter_language(config, source_lang: str | None = None) -> str:
    """The language to split a model's input by: `source_lang` if given, else the model config's `source_lang`;
    a ValueError naming the model and what to pass when neither is known."""
    language = source_lang or getattr(config, "source_lang", None)
    if not language:
        name = getattr(config, "_name_or_path", "") or "the model"
        raise ValueError(
            f"Splitting the input into sentences needs its language, and {name} has no source_lang in "
            "its config: pass --source_lang (or source_lang=), or --no_split_sentences (or "
            "split_sentences=False) to translate each text as one sequence."
        )
    return language


__all__ = ["join", "rewrap", "segmenter_language", "split"]
