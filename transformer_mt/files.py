"""Files as software text lives in them, translated and written back in their own format.

- gettext `.po`/`.pot` through polib: each message's msgid (and msgid_plural) translated into msgstr (the plural
  forms: the singular's translation first, the plural's for the others); entries already translated are kept
  unless `overwrite`; every entry this writes is marked fuzzy, for a translator's review.
- XLIFF 1.2 and 2.0 through lxml: each `<source>` translated into its `<target>` (created when missing), inline
  elements kept as they are (their text translated node by node, as HTML), the state set (1.2 `state=
  "needs-review-translation"`, 2.0 `state="translated"`); units already translated kept unless `overwrite`.
- HTML as the server's `format: "html"` translates it (`transformer_mt.markup`): tags, attributes and untranslated
  elements kept, the text escaped.

Placeholders (`%s`, `%(name)s`, `{0}`, `{name}`, `%1$s`) and tags are checked: a translation that does not hold the
same ones as its source is counted, and in a `.po` file gets a translator comment saying so (the entry is fuzzy
either way). `translate_file` returns what it did: entries translated, kept, and those whose placeholders differ.
"""

import collections
import dataclasses
import os
import re
from collections.abc import Callable

from .sentences import rewrap
from .spans import placeholders
from .translation import translate


FORMATS = {".po": "po", ".pot": "po", ".xlf": "xliff", ".xliff": "xliff", ".html": "html", ".htm": "html"}
TAG = re.compile(r"</?\w+[^>]*>")  # inline markup a message holds (<b>, <a href="%s">)
PLACEHOLDERS_DIFFER = "transformer-mt: the translation's placeholders or tags differ from the source's"


@dataclasses.dataclass
class FileReport:
    format: str
    translated: int = 0
    kept: int = 0
    placeholders_differ: list[str] = dataclasses.field(default_factory=list)


def file_format(path: str) -> str | None:
    """"po", "xliff" or "html" by the file's extension, else None (a text file, one text a line)."""
    return FORMATS.get(os.path.splitext(path)[1].lower())


def placeholders_kept(source: str, translation: str) -> bool:
    """Whether the translation holds the same placeholders and tags as the source (in any order)."""
    def held(text: str) -> collections.Counter:
        return collections.Counter([*placeholders(text), *TAG.findall(text)])

    return held(source) == held(translation)


def translate_file(input_path: str, output_path: str, translate_texts: Callable[[list[str]], list[str]],
                   overwrite: bool = False) -> FileReport:
    """Translate `input_path` (.po, .xliff or .html) into `output_path` in the same format with `translate_texts`
    (texts in, their translations out, in order; called once)."""
    kind = file_format(input_path)
    if kind is None:
        raise ValueError(f"{input_path}: not a file format translate_file reads (.po, .pot, .xlf, .xliff, .html, "
                         ".htm); a plain text file is translated line by line")
    return {"po": _translate_po, "xliff": _translate_xliff, "html": _translate_html}[kind](
        input_path, output_path, translate_texts, overwrite)


def _translate_po(input_path, output_path, translate_texts, overwrite) -> FileReport:
    import polib

    catalogue = polib.pofile(input_path, wrapwidth=0)
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
    texts = [text for entry in todo for text in ([entry.msgid, entry.msgid_plural] if entry.msgid_plural
                                                   else [entry.msgid])]
    # a message's leading and trailing whitespace ("Name: ", "Usage: %s\n") belongs to the program: kept as it is
    translations = iter([rewrap(text, translation) for text, translation in
                         zip(texts, translate_texts([text.strip() for text in texts]))])
    for entry in todo:
        singular = next(translations)
        if entry.msgid_plural:
            plural = next(translations)
            forms = sorted(entry.msgstr_plural) or [0, 1]
            entry.msgstr_plural = {form: singular if form == 0 else plural for form in forms}
            pairs = [(entry.msgid, singular), (entry.msgid_plural, plural)]
        else:
            entry.msgstr = singular
            pairs = [(entry.msgid, singular)]
        if "fuzzy" not in entry.flags:
            entry.flags.append("fuzzy")  # machine translated: for review
        if not all(placeholders_kept(source, target) for source, target in pairs):
            report.placeholders_differ.append(entry.msgid)
            if PLACEHOLDERS_DIFFER not in entry.tcomment:
                entry.tcomment = "\n".join(filter(None, [entry.tcomment, PLACEHOLDERS_DIFFER]))
        report.translated += 1
    catalogue.save(output_path)
    return report


def _translate_xliff(input_path, output_path, translate_texts, overwrite) -> FileReport:
    from lxml import etree

    tree = etree.parse(input_path, etree.XMLParser(resolve_entities=False, no_network=True))
    root = tree.getroot()
    namespace = root.nsmap.get(None, "")
    version = "2.0" if namespace.endswith(":2.0") or root.get("version", "").startswith("2") else "1.2"
    tag = (lambda name: f"{{{namespace}}}{name}") if namespace else (lambda name: name)
    report = FileReport("xliff")
    units = root.iter(tag("segment") if version == "2.0" else tag("trans-unit"))
    todo = []
    for unit in units:
        source, target = unit.find(tag("source")), unit.find(tag("target"))
        if source is None or any(node.get("translate") == "no" for node in (unit, *unit.iterancestors())):
            continue
        if target is not None and "".join(target.itertext()).strip() and not overwrite:
            report.kept += 1
            continue
        todo.append((unit, source, target))
    nodes = [node for _, source, _ in todo for node in _text_nodes(source)]
    translations = iter(translate_texts([text.strip() for _, _, text in nodes]))
    for unit, source, target in todo:
        new = _copy_translated(source, tag("target"), translations)
        if target is not None:
            unit.replace(target, new)
        else:
            source.addnext(new)
        if version == "2.0":
            unit.set("state", "translated")
        else:
            new.set("state", "needs-review-translation")
        source_text = "".join(source.itertext())  # inline elements are copied as they are: check the text
        if not placeholders_kept(source_text, "".join(new.itertext())):
            report.placeholders_differ.append(source_text)
        report.translated += 1
    tree.write(output_path, encoding="utf-8", xml_declaration=True)
    return report


# XLIFF 1.2 inline codes hold the original document's markup, never text to translate
_CODES = {"bpt", "ept", "ph", "it"}


def _local(tag) -> str | None:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else None  # None: a comment or processing instruction


def _text_nodes(element) -> list[tuple]:
    """(element, "text" or "tail", text) for every non-blank text of `element` and its descendants that is text to
    translate: not inside an inline code (bpt, ept, ph, it), a comment, or an element marked translate="no". The
    same order for a source and its copy, which is all that filling needs."""
    found = []

    def visit(node, translatable: bool):
        name = _local(node.tag)
        inside = translatable and name is not None and name not in _CODES and node.get("translate") != "no"
        if inside and node.text and node.text.strip():
            found.append((node, "text", node.text))
        for child in node:
            visit(child, inside)
            if translatable and child.tail and child.tail.strip():
                found.append((child, "tail", child.tail))

    visit(element, True)
    return found


def _copy_translated(source, target_tag: str, translations):
    """A copy of `source` named `target_tag`, each text node replaced by its translation (whitespace kept)."""
    import copy

    new = copy.deepcopy(source)
    new.tag = target_tag
    for key in list(new.attrib):
        del new.attrib[key]
    for node, side, text in _text_nodes(new):
        setattr(node, side, rewrap(text, next(translations)))
    return new


def _translate_html(input_path, output_path, translate_texts, overwrite) -> FileReport:
    from .markup import HtmlDocuments  # BeautifulSoup: the [files] or [serve] extra

    with open(input_path, encoding="utf-8-sig") as f:  # a byte-order mark is no text to translate
        document = HtmlDocuments([f.read()])
    translated = document.fill(translate_texts(document.texts))
    with open(output_path, "w", encoding="utf-8") as f:
        f.write(translated[0])
    return FileReport("html", translated=len(document.texts))


def translate_document(model, tokenizer, input_path: str, output_path: str, overwrite: bool = False,
                       **options) -> FileReport:
    """`translate_file` with `translation.translate(model, tokenizer, texts, **options)` (engine, beams, sentence
    splitting, ...): a .po, XLIFF or HTML file translated from Python."""
    return translate_file(input_path, output_path, lambda texts: translate(model, tokenizer, texts, **options),
                          overwrite)


__all__ = ["FORMATS", "FileReport", "TAG", "file_format", "placeholders_kept", "translate_document", "translate_file"]
