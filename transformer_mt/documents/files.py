"""Files as software text lives in them, translated and written back in their own format.

- gettext `.po`/`.pot` through polib: each message's msgid (and msgid_plural) translated into msgstr (the plural
  forms: the singular's translation first, the plural's for the others); entries already translated are kept
  unless `overwrite`; every entry this writes is marked fuzzy, for a translator's review; with `contexts`, each
  message's msgctxt (and, asked for, else its `#.` comments) is given as its context (read by a model trained with
  context as the second segment).
- XLIFF 1.2 and 2.0 (`documents.xliff`): each `<source>` translated into its `<target>`, its inline elements put
  back around their words' translation or kept where the sentence puts them.
- HTML as the server's `format: "html"` translates it (`transformer_mt.text.markup`): each sentence whole, its inline
  tags put back around their words' translation; attributes and untranslated elements kept, the text escaped, and
  each start tag written back as the source wrote it (`as_written`: its attributes' order, quotes and entities).
  A .po message that is HTML (`<b>%s</b>`, `<a href="%s" target="_blank">here</a>`) is translated the same way.

`translate_texts(texts, format)` does the translating for all three: texts in, their translations out, in order;
`format` is "text" or "html" (`TranslationOptions.format`).

Placeholders (`%s`, `%(name)s`, `{0}`, `{name}`, `%1$s`) and tags are checked: a translation that does not hold the
same ones as its source is counted, and in a `.po` file gets a translator comment saying so (the entry is fuzzy
either way; `documents.review`). `translate_file` returns what it did: entries translated, kept, and those whose
placeholders differ.
"""

import os
import re
from collections.abc import Callable

from ..quality import Flags, Translation, together
from ..text.html_fragments import HTML_INLINE, as_written, holds_markup
from ..text.sentences import rewrap
from ..translation import translate
from . import FormatError, accelerators, in_contexts
from . import text as lines
from .review import PLACEHOLDERS_DIFFER, TAG, FileReport, entry_flags, is_trusted, placeholders_kept
from .xliff import translate_xliff


FORMATS = {
    ".po": "po",
    ".pot": "po",
    ".xlf": "xliff",
    ".xliff": "xliff",
    ".html": "html",
    ".htm": "html",
    ".txt": "text",
    ".md": "markdown",
    ".markdown": "markdown",
    ".srt": "srt",
    ".vtt": "vtt",
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".docx": "docx",
    ".pptx": "pptx",
    ".odt": "odt",
    ".odp": "odp",
    ".epub": "epub",
}
STRUCTURED = set(FORMATS.values()) - {"text"}  # the command translates a text file line by line, with its columns


# where a file's contexts come from (`contexts=`): "msgctxt" a .po message's msgctxt and an XLIFF unit's resname or
# note, "comments" a .po message's `#.` comments where it has no msgctxt, "keys" a JSON/YAML value's key path
CONTEXT_SOURCES = ("msgctxt", "comments", "keys")
DEFAULT_CONTEXTS = frozenset({"msgctxt"})  # what the models were trained with; the others measured or untried
TRANSLATORS = re.compile(r"^translators?\s*:\s*", re.IGNORECASE)  # xgettext --add-comments=TRANSLATORS: boilerplate
COMMENT = "transformer-mt:"  # begins the .po translator comment that carries a translation's flags


def file_format(path: str) -> str | None:
    """The structured format of a file by its extension (a value of `FORMATS`), else None: a text file, which the
    translate command reads one text a line (and `translate_file` translates line by line too)."""
    kind = FORMATS.get(os.path.splitext(path)[1].lower())
    return kind if kind in STRUCTURED else None


def translate_file(
    input_path: str,
    output_path: str,
    translate_texts: Callable[..., list[str]],
    overwrite: bool = False,
    trusted_above: float | None = None,
    contexts=frozenset(),
) -> FileReport:
    """Translate `input_path` into `output_path` in the same format (`translate_bytes` on the file's bytes)."""
    kind = FORMATS.get(os.path.splitext(input_path)[1].lower())
    if kind is None:
        raise ValueError(f"{input_path}: not a file format translate_file reads ({', '.join(FORMATS)})")
    with open(input_path, "rb") as f:
        data, report = translate_bytes(f.read(), kind, translate_texts, overwrite, trusted_above, contexts)
    with open(output_path, "wb") as f:
        f.write(data)
    return report


def translate_bytes(
    data: bytes,
    kind: str,
    translate_texts: Callable[..., list[str]],
    overwrite: bool = False,
    trusted_above: float | None = None,
    contexts=frozenset(),
) -> tuple[bytes, FileReport]:
    """A file's bytes in the format `kind` (a value of `FORMATS`) translated with `translate_texts(texts, format)`
    (texts in, their translations out, in order; `format` "text" or "html"; a `quality.Translation` brings its
    flags: confidence, guards, spans, abstention), and what was done. `overwrite`: translate .po entries and XLIFF
    units already translated too. `trusted_above`: a confidence above which a .po entry is not marked fuzzy and an
    XLIFF unit is "translated" rather than for review. `contexts`: the `CONTEXT_SOURCES` a text's context is read
    from (`translate_texts(texts, format, context=...)`, one call per distinct context; for a model trained with
    context): "msgctxt" a .po message's msgctxt and an XLIFF unit's resname (or first note), "comments" a .po
    message's `#.` comments where it has no msgctxt, "keys" each JSON/YAML value's key path. A file its format's
    parser cannot read is a `documents.FormatError` naming the format and the reason."""
    if isinstance(contexts, (str, bool)):
        raise ValueError(f"contexts is a set of {', '.join(CONTEXT_SOURCES)}, got {contexts!r}")
    if unknown := set(contexts) - set(CONTEXT_SOURCES):
        raise ValueError(f"contexts are read from {', '.join(CONTEXT_SOURCES)}, got {', '.join(sorted(unknown))}")
    if trusted_above is not None and not 0 <= trusted_above <= 1:
        raise ValueError(f"trusted_above is a confidence in [0, 1], got {trusted_above}")
    if kind == "po":
        return _translate_po(data, translate_texts, overwrite, trusted_above, contexts)
    if kind == "xliff":
        return translate_xliff(data, translate_texts, overwrite, trusted_above, "msgctxt" in contexts)
    if kind == "html":
        return _translate_html(data, translate_texts)
    if kind in FORMATS.values():
        report = FileReport(kind)
        keyed = {"contexts": "keys" in contexts} if kind in ("json", "yaml") else {}  # key paths as contexts
        translated = _document_translator(kind)(data, _checked(translate_texts, report), **keyed)
        report.translated = translated.translated
        return translated.data, report
    raise ValueError(f"kind must be one of {', '.join(sorted(set(FORMATS.values())))}, got {kind!r}")


def _document_translator(kind: str):
    """The `documents` module's entry for `kind` (each needs its format's library: the [files] extra)."""
    from . import docx, epub, markdown, odp, odt, pptx, strings, subtitles

    return {
        "text": lines.translate,
        "markdown": markdown.translate,
        "srt": subtitles.translate_srt,
        "vtt": subtitles.translate_vtt,
        "json": strings.translate_json,
        "yaml": strings.translate_yaml,
        "docx": docx.translate,
        "pptx": pptx.translate,
        "odt": odt.translate,
        "odp": odp.translate,
        "epub": epub.translate,
    }[kind]


def _checked(translate_texts, report: FileReport):
    """`translate_texts`, counting in `report` the texts left untranslated below the minimum confidence and those
    whose translation lost a placeholder or protected span (an HTML fragment's by its text)."""

    def translate(texts: list[str], format: str = "text", **context) -> list[str]:
        translations = translate_texts(texts, format, **context)
        if format == "html":
            from ..text.markup import html_text  # BeautifulSoup: the [files] extra
        for source, translation in zip(texts, translations, strict=True):
            report.abstained += bool(getattr(translation, "flags", None) and translation.flags.abstained)
            if format == "html":
                source, translation = html_text(source), html_text(translation)
            if not placeholders_kept(source, translation):
                report.placeholders_differ.append(source)
        return translations

    return translate


def _translate_mixed(texts: list[str], translate_texts) -> list[str]:
    """Each text translated, those that are HTML fragments as HTML (their tags then as they wrote them), in one call
    for each kind."""
    markup = [holds_markup(text) for text in texts]
    fragments = [t for t, m in zip(texts, markup) if m]
    restored = [
        Translation(as_written(source, translation), getattr(translation, "flags", None))
        for source, translation in zip(fragments, translate_texts(fragments, "html") if fragments else [], strict=True)
    ]
    done = {True: iter(restored), False: iter(translate_texts([t for t, m in zip(texts, markup) if not m], "text"))}
    return [next(done[m]) for m in markup]


def _translate_lines(texts: list[str], translate_texts) -> list[str]:
    """`_translate_mixed`, a plain text's lines and tab-separated columns each on its own (a .po message's "\n" is
    a line break the program prints, its "\t" a column: read as one sentence, two lines were merged and words lost,
    and a tab came back as "Caractère"), joined by the same breaks and tabs with each piece's surrounding whitespace,
    the pieces' flags together."""
    parts = [re.split(r"([\n\t])", text) if not holds_markup(text) else [text] for text in texts]
    read = [piece.strip() for pieces in parts for piece in pieces[::2] if piece.strip()]
    found = iter(_translate_mixed(read, translate_texts))
    joined = []
    for pieces in parts:
        if len(pieces) == 1:
            joined.append(next(found) if pieces[0].strip() else pieces[0])
            continue
        done = [(piece, next(found) if k % 2 == 0 and piece.strip() else None) for k, piece in enumerate(pieces)]
        text = "".join(rewrap(piece, translation) if translation is not None else piece for piece, translation in done)
        flags = [getattr(translation, "flags", None) or Flags() for _, translation in done if translation is not None]
        joined.append(Translation(text, together(flags)))
    return joined


def po_context(entry, contexts=DEFAULT_CONTEXTS) -> str | None:
    """A .po message's context for the model from `contexts` (`CONTEXT_SOURCES`): its msgctxt; for a message without
    one, its extracted comments (`#.`, lines joined, a leading "Translators:" dropped); else None."""
    if entry.msgctxt:
        return entry.msgctxt if "msgctxt" in contexts else None
    if "comments" not in contexts:
        return None
    comment = " ".join(line.strip() for line in entry.comment.splitlines() if line.strip())
    return TRANSLATORS.sub("", comment).strip() or None


def _translate_po(data: bytes, translate_texts, overwrite, trusted_above, contexts) -> tuple[bytes, FileReport]:
    import polib

    charset = re.search(rb"charset=([\w.-]+)", data[:4096])
    encoding = charset[1].decode("ascii") if charset and charset[1].upper() != b"CHARSET" else "utf-8"
    try:
        catalogue = polib.pofile(data.decode(encoding).removeprefix("\ufeff"), wrapwidth=0)
    except (LookupError, UnicodeDecodeError, OSError) as error:  # polib's syntax errors are OSErrors
        raise FormatError("po", str(error)) from None
    report = FileReport("po")
    todo = []
    for entry in catalogue:
        if entry.obsolete or not entry.msgid:
            continue
        done = entry.msgstr or any(entry.msgstr_plural.values())
        if done and not overwrite:
            report.kept += 1
            continue
        todo.append(entry)
    texts = [
        text for entry in todo for text in ([entry.msgid, entry.msgid_plural] if entry.msgid_plural else [entry.msgid])
    ]
    # a message's leading and trailing whitespace ("Name: ", "Usage: %s\n") belongs to the program: kept as it is;
    # its one keyboard accelerator ("&Save", "_Open") is taken out and put back (`accelerators`)
    taken = [accelerators.take_out(text.strip()) if not holds_markup(text) else (text.strip(), None) for text in texts]
    found = in_contexts(
        [text for text, _ in taken],
        [po_context(entry, contexts) for entry in todo for _ in range(2 if entry.msgid_plural else 1)],
        translate_texts,
        _translate_lines,
    )
    found = [
        Translation(accelerators.put_back(translation, marked), getattr(translation, "flags", None))
        for translation, (_, marked) in zip(found, taken)
    ]
    translations = iter([(rewrap(text, translation), translation) for text, translation in zip(texts, found)])
    for entry in todo:
        done = [next(translations) for _ in range(2 if entry.msgid_plural else 1)]
        flags = entry_flags([translation for _, translation in done])
        entry.tcomment = "\n".join(line for line in entry.tcomment.splitlines() if not line.startswith(COMMENT))
        if flags.comment():
            entry.tcomment = "\n".join(filter(None, [entry.tcomment, f"{COMMENT} {flags.comment()}"]))
        if flags.abstained:  # left for a translator: nothing written, nothing fuzzy
            report.abstained += 1
            continue
        singular, plural = done[0][0], done[-1][0]
        if entry.msgid_plural:
            forms = sorted(entry.msgstr_plural) or [0, 1]
            entry.msgstr_plural = {form: singular if form == 0 else plural for form in forms}
            pairs = [(entry.msgid, singular), (entry.msgid_plural, plural)]
        else:
            entry.msgstr = singular
            pairs = [(entry.msgid, singular)]
        if is_trusted(flags, trusted_above):
            if "fuzzy" in entry.flags:
                entry.flags.remove("fuzzy")
        elif "fuzzy" not in entry.flags:
            entry.flags.append("fuzzy")  # machine translated: for review
        if not all(placeholders_kept(source, target) for source, target in pairs):
            report.placeholders_differ.append(entry.msgid)
            if PLACEHOLDERS_DIFFER not in entry.tcomment:
                entry.tcomment = "\n".join(filter(None, [entry.tcomment, PLACEHOLDERS_DIFFER]))
            if "fuzzy" not in entry.flags:
                entry.flags.append("fuzzy")
        report.translated += 1
    return catalogue.__unicode__().encode(catalogue.encoding), report


def _translate_html(data: bytes, translate_texts) -> tuple[bytes, FileReport]:
    try:
        document = data.decode("utf-8-sig")  # a byte-order mark is no text to translate
    except UnicodeDecodeError as error:
        raise FormatError("html", f"it is not UTF-8 ({error})") from None
    from ..text.markup import HtmlDocuments  # BeautifulSoup: the [files] or [serve] extra

    translation = as_written(document, translate_texts([document], "html")[0])
    return translation.encode("utf-8"), FileReport("html", translated=len(HtmlDocuments([document]).texts))


def translate_document(
    model,
    tokenizer,
    input_path: str,
    output_path: str,
    overwrite: bool = False,
    trusted_above: float | None = None,
    **options,
) -> FileReport:
    """`translate_file` with `translation.translate(model, tokenizer, texts, **options)` (engine, beams, sentence
    splitting, confidence, min_confidence, ...): a .po, XLIFF or HTML file translated from Python."""
    return translate_file(
        input_path,
        output_path,
        lambda texts, format="text": translate(model, tokenizer, texts, **{**options, "format": format}),
        overwrite,
        trusted_above,
    )


__all__ = [
    "CONTEXT_SOURCES",
    "DEFAULT_CONTEXTS",
    "FORMATS",
    "PLACEHOLDERS_DIFFER",
    "FileReport",
    "HTML_INLINE",
    "TAG",
    "as_written",
    "file_format",
    "holds_markup",
    "placeholders_kept",
    "translate_bytes",
    "translate_document",
    "translate_file",
]
