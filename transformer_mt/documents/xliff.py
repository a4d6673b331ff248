"""XLIFF 1.2 and 2.0 through lxml: each `<source>` translated into its `<target>` (created when missing), the state
set (1.2 `state="needs-review-translation"`, 2.0 `state="translated"`, or "initial" with a needs-review substate);
units already translated kept unless `overwrite`. A source with inline elements is translated whole, as HTML is: the
elements around text (`<g>`, `<mrk>`, `<pc>`) put back around their words' translation, the inline codes (`<x/>`,
`<bx/>`, `<ex/>`, `<ph>`, `<bpt>`, `<ept>`, `<it>`; 2.0 `<ph/>`, `<sc/>`, `<ec/>`) and comments kept as they are,
where the sentence puts them. A unit's flags go into a transformer-mt note. For a model trained with context, a
unit's resname (2.0: its unit's name) or else its first note is given as its context (`context_of`)."""

from . import FormatError, in_contexts
from .review import FileReport, entry_flags, is_trusted, placeholders_kept


NOTE = "transformer-mt"  # names the XLIFF note that carries a translation's flags


def translate_xliff(
    data: bytes, translate_texts, overwrite, trusted_above, contexts=False
) -> tuple[bytes, FileReport]:
    """An XLIFF file's bytes translated with `translate_texts` (as `files.translate_bytes` takes them), and what was
    done; with `contexts`, each unit's `context_of` given as its context."""
    from lxml import etree

    try:
        root = etree.fromstring(data, etree.XMLParser(resolve_entities=False, no_network=True))
    except etree.XMLSyntaxError as error:
        raise FormatError("xliff", str(error)) from None
    if not _local(root.tag) == "xliff":
        raise FormatError("xliff", f"its root element is <{_local(root.tag)}>, not <xliff>")
    tree = root.getroottree()
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
    fragments = [_as_html(source) for _, source, _ in todo]
    translations = in_contexts(
        [fragment for fragment, _ in fragments],
        [context_of(unit, tag, version) if contexts else None for unit, _, _ in todo],
        translate_texts,
        lambda texts, translate: translate(texts, "html") if texts else [],
    )
    for (unit, source, target), (_, codes), translation in zip(todo, fragments, translations, strict=True):
        flags = entry_flags([translation])
        _note(unit, tag, version, flags.comment())
        if flags.abstained:  # left for a translator
            report.abstained += 1
            continue
        new = _from_html(translation, source, tag("target"), codes)
        if target is not None:
            unit.replace(target, new)
        else:
            source.addnext(new)
        trusted = is_trusted(flags, trusted_above)
        if version == "2.0":
            unit.set("state", "translated" if trusted else "initial")
            if not trusted:
                unit.set("subState", "transformer-mt:needs-review")
        else:
            new.set("state", "translated" if trusted else "needs-review-translation")
        source_text = "".join(source.itertext())  # inline elements are copied as they are: check the text
        if not placeholders_kept(source_text, "".join(new.itertext())):
            report.placeholders_differ.append(source_text)
        report.translated += 1
    return etree.tostring(tree, encoding="utf-8", xml_declaration=True), report


def context_of(unit, tag, version: str) -> str | None:
    """What says which sense a unit's source means: its `resname` (1.2's trans-unit) or its unit's `name` (2.0), else
    its first note that is not this package's own; None when it has neither."""
    holder = unit.getparent() if version == "2.0" else unit  # 2.0: the segment's unit holds the name and the notes
    name = holder.get("resname" if version == "1.2" else "name")
    if name and name.strip():
        return name.strip()
    notes = holder.find(tag("notes")) if version == "2.0" else holder
    for note in [] if notes is None else notes.iterchildren(tag("note")):
        if NOTE not in (note.get("from"), note.get("category")) and (note.text or "").strip():
            return note.text.strip()
    return None


def _note(unit, tag, version: str, comment: str) -> None:
    """The unit's transformer-mt note (1.2: `<note from="transformer-mt">` in the trans-unit; 2.0: a `<note
    category="transformer-mt">` in the unit's `<notes>`), replacing one written before; none when `comment` is
    empty."""
    from lxml import etree

    holder = unit if version == "1.2" else unit.getparent()
    notes = holder.find(tag("notes")) if version == "2.0" else holder
    for old in [] if notes is None else list(notes.iterchildren(tag("note"))):
        if NOTE in (old.get("from"), old.get("category")):
            notes.remove(old)
    if not comment:
        return
    if notes is None:
        notes = etree.Element(tag("notes"))
        holder.insert(0, notes)
    note = etree.SubElement(notes, tag("note"), {"from" if version == "1.2" else "category": NOTE})
    note.text = comment


WRAPPING = {"g", "mrk", "pc"}  # XLIFF's inline elements around text; every other one is a code, kept as it is


def _local(tag) -> str | None:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else None  # None: a comment or processing instruction


def _as_html(source) -> tuple[str, list]:
    """A `<source>`'s content as an HTML fragment for `format="html"`, and its inline elements in document order:
    each wrapping one as `<span data-xliff="k">` around its content, each code (and comment) as an empty
    `<code data-xliff="k">`, which the html step keeps verbatim where the sentence puts it."""
    import html

    elements = []

    def render(node) -> str:
        parts = [html.escape(node.text or "", quote=False)]
        for child in node:
            k = len(elements)
            elements.append(child)
            if _local(child.tag) in WRAPPING and child.get("translate") != "no":
                parts.append(f'<span data-xliff="{k}">{render(child)}</span>')
            else:
                parts.append(f'<code data-xliff="{k}"></code>')
            parts.append(html.escape(child.tail or "", quote=False))
        return "".join(parts)

    return render(source), elements


def _from_html(fragment: str, source, target_tag: str, elements: list):
    """The `<target>` named `target_tag` that `fragment` (the translation of `_as_html(source)`) describes: its text,
    each wrapping element rebuilt around its translated content, each code a copy of the source's."""
    import copy

    from bs4 import BeautifulSoup, NavigableString

    def fill(element, nodes) -> None:
        last = None
        for node in nodes:
            if isinstance(node, NavigableString):
                if last is None:
                    element.text = (element.text or "") + str(node)
                else:
                    last.tail = (last.tail or "") + str(node)
                continue
            original = elements[int(node["data-xliff"])]
            if node.name == "code":
                new = copy.deepcopy(original)
                new.tail = None
            else:
                new = original.makeelement(original.tag, dict(original.attrib))
                fill(new, node.children)
            element.append(new)
            last = new

    target = source.makeelement(target_tag, {})
    fill(target, BeautifulSoup(fragment, "html.parser").children)
    return target


__all__ = ["NOTE", "WRAPPING", "translate_xliff"]
