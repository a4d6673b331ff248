"""Paragraphs made of runs, as WordprocessingML (`w:p`, .docx) and DrawingML (`a:p`, .pptx) write them: each run
its properties (`rPr`) and its text (`t`).

The formatting that holds most of a paragraph's text is the paragraph's own: its runs are plain text in the
fragment, and so is any word the translation puts outside every span. A run of other formatting is a `Formatting` (runs
of one formatting side by side are one span); a run that holds no text but spaces is plain text; a wrapper (a
hyperlink, a tracked insertion) is a `Formatting` around its runs, or a `Code` when it holds no text. Whatever else a
run holds (a tab, a break, an image, a note reference) is a `Code` that keeps its run's properties; whatever else
the paragraph holds (a bookmark, a simple field, a content control, math) a `Code` of its own, and so is a complex
field (`fldChar` begin to end, its result included) that ends in the paragraph.
"""

import copy
import dataclasses

from lxml import etree

from .packages import Code, Formatting, has_text, local, text_lengths


@dataclasses.dataclass(frozen=True)
class Props:
    """A run's properties (`rPr`, or None); two runs of one formatting have equal Props."""

    element: etree._Element | None = dataclasses.field(compare=False)
    key: bytes = b""

    @classmethod
    def of(cls, run: etree._Element, tag: str) -> "Props":
        element = run.find(tag)
        return cls(element, b"" if element is None else etree.tostring(element, method="c14n"))


@dataclasses.dataclass(frozen=True)
class Grammar:
    """How one markup language spells a paragraph of runs."""

    namespace: str
    first: frozenset  # the paragraph's (or a wrapper's) properties, kept at its start
    last: frozenset  # kept at its end (DrawingML's endParaRPr)
    wrappers: frozenset  # elements around runs, rebuilt around their translation
    dropped: frozenset  # marks that describe the source text only: spell-check ranges, the last layout's page breaks
    preserve: bool  # text keeps its edge spaces only with xml:space="preserve"
    field: str | None = None  # the run child that begins and ends a complex field: the whole field is one code

    def tag(self, name: str) -> str:
        return f"{{{self.namespace}}}{name}"

    def paragraph(self, element: etree._Element) -> "RunParagraph":
        return RunParagraph(self, element)


XML_SPACE = "{http://www.w3.org/XML/1998/namespace}space"


class RunParagraph:
    """One paragraph of runs: its `nodes` read, and written back from translated ones."""

    def __init__(self, grammar: Grammar, element: etree._Element):
        self.grammar, self.element = grammar, element
        nodes = self._content(element)
        lengths = [(shell, n) for shell, n in text_lengths(nodes).most_common() if isinstance(shell, Props)]
        self.base = lengths[0][0] if lengths else Props(None)  # the first run's on a tie
        self.nodes = self._settled(nodes)

    def _content(self, children, fields: bool = True) -> list:
        """The nodes of a paragraph's (or a wrapper's) children; a complex field, from its begin to its end, one
        code (its result, a page number or a cross-reference, is the field's to update)."""
        nodes, field, depth = [], [], 0  # field: the runs of a field begun and not yet ended (depth: nested ones)
        for child in children:
            if field or (fields and self._begins_field(child)):
                field.append(child)
                depth += self._field_depth(child)
                if depth <= 0:
                    nodes.append(Code(field))
                    field, depth = [], 0
            else:
                nodes += self._node(child)
        if field:  # a field that ends in another paragraph (a table of contents): its runs read as any others
            nodes += self._content(field, fields=False)
        return nodes

    def _node(self, child: etree._Element) -> list:
        grammar, name = self.grammar, local(child)
        if name in grammar.first | grammar.last | grammar.dropped:
            return []
        if name == "r" and child.tag == grammar.tag("r"):
            props = Props.of(child, grammar.tag("rPr"))
            content = []
            for part in child:
                if part.tag == grammar.tag("t"):
                    content.append(part.text or "")
                elif local(part) not in grammar.dropped and part.tag != grammar.tag("rPr"):
                    content.append(Code([part], props))
            return [Formatting(props, content)]
        if name in grammar.wrappers and child.tag == grammar.tag(name):
            return [Formatting(child, self._content(child))]
        return [Code([child])]

    def _begins_field(self, child: etree._Element) -> bool:
        """Whether `child` is a run that begins a complex field (WordprocessingML's `fldChar begin`)."""
        tag = self.grammar.tag(self.grammar.field) if self.grammar.field else None
        first = child.find(tag) if tag and child.tag == self.grammar.tag("r") else None
        return first is not None and first.get(self.grammar.tag("fldCharType")) == "begin"

    def _field_depth(self, child: etree._Element) -> int:
        """How many fields `child` begins, less those it ends."""
        grammar = self.grammar
        kinds = [char.get(grammar.tag("fldCharType")) for char in child.iter(grammar.tag(grammar.field))]
        return kinds.count("begin") - kinds.count("end")

    def _settled(self, nodes: list) -> list:
        """Runs of the paragraph's own formatting, or of spaces only, as plain text; runs of one formatting side by
        side as one span; a wrapper without text as a code."""
        settled = []
        for node in nodes:
            if not isinstance(node, Formatting):
                settled.append(node)
                continue
            content = self._settled(node.content)
            if not isinstance(node.shell, Props):
                settled.append(Formatting(node.shell, content) if has_text(content) else Code([node.shell]))
            elif node.shell == self.base or not has_text(content):
                settled += content
            elif settled and isinstance(settled[-1], Formatting) and settled[-1].shell == node.shell:
                settled[-1].content += content
            else:
                settled.append(Formatting(node.shell, content))
        return settled

    def write(self, nodes: list) -> None:
        grammar = self.grammar
        first = [child for child in self.element if local(child) in grammar.first]
        last = [child for child in self.element if local(child) in grammar.last]
        for child in list(self.element):
            self.element.remove(child)
        self.element.extend(first)
        self._emit(self.element, nodes, self.base)
        self.element.extend(last)

    def _emit(self, parent: etree._Element, nodes: list, props: Props) -> None:
        """`nodes` written into `parent` (the paragraph or a wrapper), text in runs of `props`."""
        grammar = self.grammar
        run = None  # the run written last, which more text or codes of its formatting join
        for node in nodes:
            if isinstance(node, Formatting) and isinstance(node.shell, Props):
                self._emit(parent, node.content, node.shell)
                run = None
            elif isinstance(node, Formatting):
                wrapper = parent.makeelement(node.shell.tag, dict(node.shell.attrib))
                wrapper.extend(copy.deepcopy(child) for child in node.shell if local(child) in grammar.first)
                parent.append(wrapper)
                self._emit(wrapper, node.content, self.base)
                run = None
            elif isinstance(node, Code) and node.shell is None:
                node.place(parent)
                run = None
            elif node:
                own = node.shell if isinstance(node, Code) else props
                if run is None or run[1] != own:
                    run = (etree.SubElement(parent, grammar.tag("r")), own)
                    if own.element is not None:
                        run[0].append(copy.deepcopy(own.element))
                if isinstance(node, Code):
                    node.place(run[0])
                else:
                    self._text(run[0], node)

    def _text(self, run: etree._Element, text: str) -> None:
        element = run[-1] if len(run) and run[-1].tag == self.grammar.tag("t") else None
        if element is None:
            element = etree.SubElement(run, self.grammar.tag("t"))
        element.text = (element.text or "") + text
        if self.grammar.preserve and (element.text != element.text.strip() or "  " in element.text):
            element.set(XML_SPACE, "preserve")


WORDPROCESSING = Grammar(
    namespace="http://schemas.openxmlformats.org/wordprocessingml/2006/main",
    first=frozenset({"pPr", "smartTagPr", "customXmlPr"}),
    last=frozenset(),
    wrappers=frozenset({"hyperlink", "ins", "moveTo", "smartTag", "customXml", "dir", "bdo"}),
    dropped=frozenset({"proofErr", "lastRenderedPageBreak"}),
    preserve=True,
    field="fldChar",
)

DRAWING = Grammar(
    namespace="http://schemas.openxmlformats.org/drawingml/2006/main",
    first=frozenset({"pPr"}),
    last=frozenset({"endParaRPr"}),
    wrappers=frozenset(),
    dropped=frozenset(),
    preserve=False,
)


__all__ = ["DRAWING", "Grammar", "RunParagraph", "WORDPROCESSING"]
