"""What the zip formats (.docx, .pptx, .odt, .odp, .epub) share: a package of XML parts, read with limits and written
back with every member it did not change as it was, and paragraphs taken apart into HTML fragments and rebuilt.

A paragraph is read into nodes: text (a `str`), `Formatting` nodes (formatting or a link around content:
`<span data-run="k">` in the fragment) and `Code`s (a tab, a break, a field, an image, a note: an empty
`<code data-run="k">`, which the html step keeps verbatim where the sentence puts it). All paragraphs of a
document go to `translate_texts` in one call, format "html"; each translation is read back into nodes, which the
format writes into its paragraph: each span a copy of its formatting around the translated words, each code the
very element it was.

Refused before anything is parsed (`FormatError`): a file that is not a zip, or lacks the format's main part, or
whose members exceed the limits below (a zip bomb); every part is parsed without entities, DTDs or the network, and
a part whose DOCTYPE declares entities is refused (XML entity expansion).
"""

import collections
import dataclasses
import html
import io
import re
import zipfile
import zlib
from collections.abc import Callable, Iterable
from typing import Protocol

from bs4 import BeautifulSoup, NavigableString
from lxml import etree

from . import FormatError, Translated, TranslateTexts


MAX_MEMBERS = 10_000  # a long deck holds a few thousand parts; more is no office document
MAX_UNCOMPRESSED = 100 * 2**20  # 100 MiB of members in all, by their headers (zipfile reads no more than declared)
MAX_RATIO = 100  # a member inflating to over 100 times its compressed size is a zip bomb: XML deflates 5-20 times,
RATIO_CHECKED_ABOVE = 2**20  # ... once it is over 1 MiB (a small part may compress as well as it likes)
PARSER = dict(resolve_entities=False, no_network=True, huge_tree=False, load_dtd=False)
UNREADABLE = (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError, OSError, ValueError)


@dataclasses.dataclass
class Formatting:
    """Formatting or a link around content: `<span data-run="k">` in the fragment; `shell` is what the format
    rebuilds around the translated content (a run's properties, the hyperlink element)."""

    shell: object
    content: list


@dataclasses.dataclass
class Code:
    """Elements kept as they are where the sentence puts them: `<code data-run="k">`; `shell`, for a format whose
    codes sit inside runs, is the run's properties."""

    elements: list
    shell: object = None

    def place(self, parent: etree._Element) -> etree._Element:
        """The elements moved to the end of `parent` (their tails, read as text before, dropped); the last."""
        for element in self.elements:
            element.tail = None
            parent.append(element)
        return self.elements[-1]


class Paragraph(Protocol):
    """A paragraph of one format, read into `nodes` (str, Formatting, Code) and written back from translated ones."""

    nodes: list

    def write(self, nodes: list) -> None: ...


@dataclasses.dataclass(frozen=True)
class Format:
    """Where a format's text is: its name (for errors), its main part, the parts translated (by member name), the
    paragraphs of a part (its paragraph elements, or whatever else `paragraph` reads as one), and how a paragraph is
    read."""

    name: str
    main: str
    parts: re.Pattern
    paragraphs: Callable[[etree._Element], Iterable[object]]
    paragraph: Callable[[object], Paragraph]
    check: Callable[[zipfile.ZipFile], None] = lambda package: None  # refuses a package of another kind


def translate_package(data: bytes, translate_texts: TranslateTexts, format: Format) -> Translated:
    """`data` (a zip package of `format`) with the text of every paragraph of its translated parts translated in
    one call; the members holding no translated paragraph are written back as they were."""
    package = open_package(data, format.name, format.main)
    format.check(package)
    found = []  # (part, paragraph) of every paragraph with text, read before any is written (a text box is in one)
    roots = {}
    for name in package.namelist():
        if format.parts.fullmatch(name):
            roots[name] = parse_part(package, name, format.name)
            found += [(name, format.paragraph(element)) for element in format.paragraphs(roots[name])]
    found = [(name, paragraph) for name, paragraph in found if has_text(paragraph.nodes)]
    fragments = [as_html(paragraph.nodes) for _, paragraph in found]
    translations = translate_texts([fragment for fragment, _ in fragments], "html") if found else []
    for (_, paragraph), (_, items), translation in zip(found, fragments, translations, strict=True):
        paragraph.write(from_html(str(translation), items))
    changed = {name: serialized(roots[name]) for name, _ in found}
    return Translated(repackaged(package, changed, format.name), len(found))


def open_package(data: bytes, format: str, main: str) -> zipfile.ZipFile:
    """The zip package `data`, refused (FormatError) when it is no zip, lacks `main`, or exceeds the limits."""
    try:
        package = zipfile.ZipFile(io.BytesIO(data))
        members = package.infolist()
    except UNREADABLE as error:
        raise FormatError(format, f"not a zip package ({error})") from None
    names = [member.filename for member in members]
    if len(members) > MAX_MEMBERS:
        raise FormatError(format, f"{len(members)} zip members, over the limit of {MAX_MEMBERS}")
    if len(set(names)) < len(names):
        raise FormatError(format, "two zip members of one name")
    total = sum(member.file_size for member in members)
    if total > MAX_UNCOMPRESSED:
        raise FormatError(format, f"{total} bytes uncompressed, over the limit of {MAX_UNCOMPRESSED}")
    for member in members:
        if member.file_size > RATIO_CHECKED_ABOVE and member.file_size > MAX_RATIO * max(1, member.compress_size):
            raise FormatError(format, f"{member.filename} inflates over {MAX_RATIO} times its size (a zip bomb)")
    if main not in names:
        raise FormatError(format, f"no {main} in the package")
    return package


def mimetype_check(format: str, mimetype: str, kind: str) -> Callable[[zipfile.ZipFile], None]:
    """A `Format.check` that refuses a package whose `mimetype` member names a type other than `mimetype` (`kind`
    says what `format` is, for the error); a package without one passes."""

    def check(package: zipfile.ZipFile) -> None:
        if "mimetype" in package.namelist():
            found = read_member(package, "mimetype", format).decode("ascii", "replace").strip()
            if not found.startswith(mimetype):
                raise FormatError(format, f"a package of type {found!r}, not {kind}")

    return check


def read_member(package: zipfile.ZipFile, name: str, format: str) -> bytes:
    try:
        return package.read(name)
    except UNREADABLE as error:  # corrupt or truncated data, an unknown compression, encryption
        raise FormatError(format, f"{name} cannot be read ({error})") from None


def parse_part(package: zipfile.ZipFile, name: str, format: str) -> etree._Element:
    """The XML part `name`, parsed without entities, DTDs or the network; one declaring entities is refused."""
    try:
        root = etree.fromstring(read_member(package, name, format), etree.XMLParser(**PARSER))
    except etree.XMLSyntaxError as error:
        raise FormatError(format, f"{name} is not well-formed XML ({error})") from None
    dtd = root.getroottree().docinfo.internalDTD
    if dtd is not None and any(True for _ in dtd.iterentities()):
        raise FormatError(format, f"{name} declares XML entities (refused: entity expansion)")
    return root


def serialized(root: etree._Element) -> bytes:
    tree = root.getroottree()
    return etree.tostring(tree, xml_declaration=True, encoding="UTF-8", standalone=tree.docinfo.standalone)


def repackaged(package: zipfile.ZipFile, changed: dict[str, bytes], format: str) -> bytes:
    """The package with the `changed` members' new bytes; every member in its place, name, date and compression,
    the others' bytes as they were."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as written:
        written.comment = package.comment
        for member in package.infolist():
            copy = zipfile.ZipInfo(member.filename, member.date_time)
            copy.compress_type, copy.create_system = member.compress_type, member.create_system
            copy.external_attr, copy.comment = member.external_attr, member.comment
            data = changed.get(member.filename)
            written.writestr(copy, read_member(package, member.filename, format) if data is None else data)
    return out.getvalue()


def fill(parent: etree._Element, nodes: list) -> None:
    """`nodes` written at the end of `parent`: text after what is there, each span a new element of its shell's tag
    and attributes around its content, each code's elements moved in."""
    last = None  # the element whose tail the next text is
    for node in nodes:
        if isinstance(node, str):
            if last is None:
                parent.text = (parent.text or "") + node
            else:
                last.tail = (last.tail or "") + node
        elif isinstance(node, Code):
            last = node.place(parent)
        else:
            last = etree.SubElement(parent, node.shell.tag, dict(node.shell.attrib))
            fill(last, node.content)


def local(element) -> str | None:
    """An element's name without its namespace; None for a comment or processing instruction."""
    return etree.QName(element).localname if isinstance(element.tag, str) else None


def has_text(nodes: list) -> bool:
    return any(
        node.strip() if isinstance(node, str) else isinstance(node, Formatting) and has_text(node.content)
        for node in nodes
    )


def text_lengths(nodes: list, shell=None, lengths: collections.Counter | None = None) -> collections.Counter:
    """How many characters of text each shell's spans hold (text outside every span counts for `shell`)."""
    lengths = collections.Counter() if lengths is None else lengths
    for node in nodes:
        if isinstance(node, str):
            lengths[shell] += len(node.strip())
        elif isinstance(node, Formatting):
            text_lengths(node.content, node.shell, lengths)
    return lengths


def as_html(nodes: list) -> tuple[str, list]:
    """The HTML fragment of a paragraph's nodes, and its spans and codes by their number k."""
    items = []

    def render(nodes: list) -> str:
        parts = []
        for node in nodes:
            if isinstance(node, str):
                parts.append(html.escape(node, quote=False))
                continue
            items.append(node)
            if isinstance(node, Formatting):
                parts.append(f'<span data-run="{len(items) - 1}">{render(node.content)}</span>')
            else:
                parts.append(f'<code data-run="{len(items) - 1}"></code>')
        return "".join(parts)

    return render(nodes), items


def from_html(fragment: str, items: list) -> list:
    """The nodes a translated fragment describes: its text, each span around its translated content, each code
    where the sentence put it. A code the translation lost is put at the end: a note or an image is never lost;
    a tag it made up keeps only its text."""
    placed = set()

    def read(children) -> list:
        nodes = []
        for child in children:
            if isinstance(child, NavigableString):
                nodes.append(str(child))
                continue
            k = child.get("data-run", "")
            item = items[int(k)] if k.isdigit() and int(k) < len(items) and int(k) not in placed else None
            if isinstance(item, Formatting) and child.name == "span":
                placed.add(int(k))
                nodes.append(Formatting(item.shell, read(child.children)))
            elif isinstance(item, Code) and child.name == "code":
                placed.add(int(k))
                nodes.append(item)
            else:
                nodes += read(child.children)
        return nodes

    nodes = read(BeautifulSoup(fragment, "html.parser").children)
    return nodes + [item for k, item in enumerate(items) if isinstance(item, Code) and k not in placed]


__all__ = [
    "Code",
    "Format",
    "MAX_MEMBERS",
    "MAX_RATIO",
    "MAX_UNCOMPRESSED",
    "Paragraph",
    "Formatting",
    "fill",
    "mimetype_check",
    "translate_package",
]
