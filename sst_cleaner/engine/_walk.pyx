# cython: language_level=3
"""The text blocks walk (:func:`sst_cleaner.engine._segment.text_blocks`) and the count of
a container's like children (``PageContext.like_siblings``) over libxml2's nodes, through
lxml's public C API.

The pure-Python walk asks lxml for an event tuple, an element proxy and a new string for
each tag, text and tail of every element, twice per element: on a typical page that is
most of the cost of cutting it into blocks. Here the walk follows the tree's pointers and
makes Python objects only for what the caller keeps: a proxy for an element only where
a block opens, ``annotate`` is called or ``elements`` is asked for, a text or tail only
where one is there. The result is the pure-Python walk's, block for block; a tree this
walk does not cover (a comment, processing instruction or entity reference below the
root, which the page preparation removes) returns None and the caller walks it in Python.
"""

from lxml.includes cimport etreepublic as cetree
from lxml.includes cimport tree
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport strcmp

from sst_cleaner.engine._dom import BLOCK_TAGS, normalize_space
from sst_cleaner.engine._segment import TextBlock

cetree.import_lxml__etree()

#: a parent with more element children than this gets a table of their steps
cdef Py_ssize_t _WIDE_PARENT = 32

cdef enum:
    _PLAIN = 0
    _BLOCK = 1
    _ANCHOR = 2


cdef inline bint _is_element(tree.xmlNode* c) noexcept nogil:
    return c.type == tree.XML_ELEMENT_NODE


cdef bint _only_elements(tree.xmlNode* c_root) noexcept nogil:
    """Whether every element-like node below ``c_root`` (what lxml's walk yields) is an
    element: comments, processing instructions and entity references are not covered."""
    cdef tree.xmlNode* c = c_root.children
    cdef int t
    while c is not NULL:
        t = c.type
        if t == tree.XML_COMMENT_NODE or t == tree.XML_PI_NODE or t == tree.XML_ENTITY_REF_NODE:
            return False
        if t == tree.XML_ELEMENT_NODE and c.children is not NULL:
            c = c.children
            continue
        while c is not NULL and c.next is NULL:
            c = c.parent
            if c is c_root:
                return True
        if c is NULL:
            return True
        c = c.next
    return True


cdef inline tree.xmlNode* _first_element(tree.xmlNode* c) noexcept nogil:
    while c is not NULL and not _is_element(c):
        c = c.next
    return c


cdef inline bint _has_element_child(tree.xmlNode* c) noexcept nogil:
    return _first_element(c.children) is not NULL


cdef tuple _style_attributes(tree.xmlNode* c, frozenset names):
    """:func:`sst_cleaner.engine._segment.style_attributes` of the element ``c``: its
    attributes are read from libxml2's list, a value only for a name in ``names``."""
    cdef tree.xmlAttr* a = c.properties
    cdef list found = None
    while a is not NULL:
        if a.type == tree.XML_ATTRIBUTE_NODE:
            name = cetree.namespacedName(<tree.xmlNode*>a)
            if name in names:
                value = cetree.attributeValue(c, a)
                if value:
                    if found is None:
                        found = []
                    found.append((name, value))
        a = a.next
    if found is None:
        return ()
    if len(found) > 1:
        found.sort()
    return tuple(found)


def text_blocks(root, annotate=None, list elements=None, nodes=None, frozenset style_attrs=None, dict same=None):
    """:func:`sst_cleaner.engine._segment.text_blocks` (see there), or None for a tree
    this walk does not cover. An element found in ``same`` gets its state from there, and
    a proxy only if it opens a block or ``elements`` is asked for."""
    cdef cetree._Element r
    if not isinstance(root, cetree._Element):
        return None
    r = <cetree._Element>root
    cdef tree.xmlNode* c_root = r._c_node
    if c_root is NULL or not _is_element(c_root) or not _only_elements(c_root):
        return None
    cdef cetree._Document doc = r._doc
    cdef frozenset block_tags = BLOCK_TAGS
    cdef bint annotating = annotate is not None
    cdef bint keeping = elements is not None
    cdef bint recording = keeping and nodes is not None
    cdef list keep_tags = None, keep_texts = None, keep_tails = None
    if recording:
        keep_tags, keep_texts, keep_tails = nodes[0], nodes[1], nodes[2]

    cdef bint with_attrs = annotating and style_attrs is not None
    if not annotating:
        root_state = None
    elif with_attrs:
        root_state = annotate(root, None, cetree.namespacedName(c_root), _style_attributes(c_root, style_attrs))
    else:
        root_state = annotate(root, None)
    cdef list cur_parts = []
    cdef list cur = [root, cur_parts, root_state, 0, 0]
    cdef list opened = [cur]
    cdef list stack = [cur]
    cdef list states = [root_state]
    cdef list tails = []
    cdef Py_ssize_t anchor_depth = 0
    # the kind of every open element below the root (C: it never leaves the walk)
    cdef Py_ssize_t depth = 0, cap = 64
    cdef unsigned char* kinds = <unsigned char*>malloc(cap)
    cdef unsigned char* grown
    if kinds is NULL:
        raise MemoryError()
    cdef tree.xmlNode* c
    cdef tree.xmlNode* nxt
    cdef unsigned char kind
    cdef object el, tag, text, tail, state, attrs
    try:
        text = cetree.textOf(c_root)
        if text:
            cur_parts.append(text)
        c = _first_element(c_root.children)
        while c is not NULL:
            # -- the element's start
            tag = cetree.namespacedName(c)
            text = cetree.textOf(c)
            tail = cetree.tailOf(c)
            tails.append(tail)
            el = None
            if keeping:
                el = cetree.elementFactory(doc, c)
                elements.append(el)
                if recording:
                    keep_tags.append(tag)
                    keep_texts.append(text)
                    keep_tails.append(tail)
            if depth == cap:
                cap *= 2
                grown = <unsigned char*>realloc(kinds, cap)
                if grown is NULL:
                    raise MemoryError()
                kinds = grown
            if tag in block_tags:
                if el is None:
                    el = cetree.elementFactory(doc, c)
                if not annotating:
                    state = None
                elif with_attrs:
                    attrs = _style_attributes(c, style_attrs)
                    state = None if same is None else same.get((states[-1], tag, attrs))
                    if state is None:
                        state = annotate(el, states[-1], tag, attrs)
                else:
                    state = annotate(el, states[-1])
                states.append(state)
                kinds[depth] = _BLOCK
                cur_parts.append("\n")  # a nested block breaks the parent's line
                cur_parts = []
                cur = [el, cur_parts, state, 0, 0]
                opened.append(cur)
                stack.append(cur)
            else:
                if annotating and _has_element_child(c):
                    if with_attrs:
                        attrs = _style_attributes(c, style_attrs)
                        state = None if same is None else same.get((states[-1], tag, attrs))
                        if state is None:
                            if el is None:
                                el = cetree.elementFactory(doc, c)
                            state = annotate(el, states[-1], tag, attrs)
                        states.append(state)
                    else:
                        if el is None:
                            el = cetree.elementFactory(doc, c)
                        states.append(annotate(el, states[-1]))
                else:
                    states.append(None)
                if tag == "a":
                    kinds[depth] = _ANCHOR
                    anchor_depth += 1
                    cur[4] += 1
                else:
                    kinds[depth] = _PLAIN
                    if tag == "br":
                        cur_parts.append("\n")
            depth += 1
            if text:
                cur_parts.append(text)
                if anchor_depth:
                    cur[3] += len(text.strip())
            # -- down to the first child, else the ends of this element and of every
            # ancestor whose last element it closes
            if _has_element_child(c):
                c = _first_element(c.children)
                continue
            while True:
                depth -= 1
                states.pop()
                kind = kinds[depth]
                if kind == _ANCHOR:
                    anchor_depth -= 1
                elif kind == _BLOCK:
                    stack.pop()
                    cur = stack[-1]
                    cur_parts = cur[1]
                tail = tails.pop()
                if tail:
                    cur_parts.append(tail)
                    if anchor_depth:
                        cur[3] += len(tail.strip())
                nxt = _first_element(c.next)
                if nxt is not NULL:
                    c = nxt
                    break
                c = c.parent
                if c is c_root:
                    c = NULL
                    break
    finally:
        free(kinds)
    cdef list out = []
    join = "".join
    cdef list parts
    for block in opened:
        parts = block[1]
        if not parts:
            continue
        text = normalize_space(join(parts))
        if not text:
            continue
        out.append(TextBlock(block[0], text, block[2], min(len(text), block[3]), block[4]))
    return out


cdef object _class_of(tree.xmlNode* c):
    """``element.get("class")``: the value of its ``class`` attribute in no namespace."""
    cdef tree.xmlAttr* a = c.properties
    while a is not NULL:
        if a.type == tree.XML_ATTRIBUTE_NODE and a.ns is NULL and strcmp(<const char*>a.name, b"class") == 0:
            return cetree.attributeValue(c, a)
        a = a.next
    return None


def child_kinds(parent, dict agg):
    """The like siblings among ``parent``'s children, as
    :meth:`~sst_cleaner.engine.methods.sitestats._page_context.PageContext.like_siblings`
    counts them (see there): ``(tag, class) -> [children, their chars]`` and each child
    -> its kind's list; None for an element this module does not walk."""
    if not isinstance(parent, cetree._Element):
        return None
    cdef cetree._Element p = <cetree._Element>parent
    cdef tree.xmlNode* c = p._c_node.children
    cdef cetree._Document doc = p._doc
    cdef dict kinds = {}
    cdef list acc
    while c is not NULL:
        if c.type == tree.XML_ELEMENT_NODE:
            ch = cetree.elementFactory(doc, c)
            k = (cetree.namespacedName(c), _class_of(c))
            a = agg.get(ch)
            acc = kinds.get(k)
            if acc is None:
                acc = kinds[k] = [1, a[0] if a is not None else 0]
            else:
                acc[0] += 1
                acc[1] += a[0] if a is not None else 0
            kinds[ch] = acc
        c = c.next
    return kinds


def child_steps(parent):
    """:func:`sst_cleaner.engine._dom._child_steps` (see there) over libxml2's nodes; None
    for an element this module does not walk."""
    if not isinstance(parent, cetree._Element):
        return None
    cdef cetree._Element p = <cetree._Element>parent
    cdef tree.xmlNode* c = p._c_node.children
    cdef cetree._Document doc = p._doc
    cdef dict steps = {}, first = {}, seen = {}
    cdef Py_ssize_t n
    while c is not NULL:
        if c.type == tree.XML_ELEMENT_NODE:
            child = cetree.elementFactory(doc, c)
            t = cetree.namespacedName(c)
            n = seen.get(t, 0) + 1
            seen[t] = n
            if n == 1:
                steps[child] = t
                first[t] = child
            else:
                if n == 2:
                    steps[first[t]] = f"{t}[1]"
                steps[child] = f"{t}[{n}]"
        c = c.next
    return steps


cdef inline bint _same_name(tree.xmlNode* a, tree.xmlNode* b) noexcept nogil:
    """Whether two elements have the same tag (name and namespace), as ``.tag`` tells."""
    if strcmp(<const char*>a.name, <const char*>b.name) != 0:
        return False
    if a.ns is NULL or b.ns is NULL:
        return a.ns is b.ns
    if a.ns.href is NULL or b.ns.href is NULL:
        return a.ns.href is b.ns.href
    return strcmp(<const char*>a.ns.href, <const char*>b.ns.href) == 0


cdef object _own_step(tree.xmlNode* c):
    """``c``'s step among its parent's element children, by the rule of ``child_steps``,
    counted over its siblings alone."""
    cdef Py_ssize_t n = 1
    cdef bint indexed = False
    cdef tree.xmlNode* s = c.prev
    while s is not NULL:
        if s.type == tree.XML_ELEMENT_NODE and _same_name(s, c):
            n += 1
        s = s.prev
    indexed = n > 1
    s = c.next
    while not indexed and s is not NULL:
        if s.type == tree.XML_ELEMENT_NODE and _same_name(s, c):
            indexed = True
        s = s.next
    t = cetree.namespacedName(c)
    return f"{t}[{n}]" if indexed else t


cdef bint _wide(tree.xmlNode* p) noexcept nogil:
    """More element children than _WIDE_PARENT: their steps are worth one table."""
    cdef Py_ssize_t n = 0
    cdef tree.xmlNode* c = p.children
    while c is not NULL:
        if c.type == tree.XML_ELEMENT_NODE:
            n += 1
            if n > _WIDE_PARENT:
                return True
        c = c.next
    return False


def element_path(el, dict paths, dict steps):
    """:meth:`sst_cleaner.engine._dom.PreparedPage.xpath_of` over libxml2's nodes, with
    its memos: ``paths`` (element -> path) and ``steps`` (parent -> its children's steps,
    made for wide parents only: a narrow one's siblings are counted for each step);
    None for an element this module does not walk."""
    if not isinstance(el, cetree._Element):
        return None
    hit = paths.get(el)
    if hit is not None:
        return hit
    cdef cetree._Document doc = (<cetree._Element>el)._doc
    cdef tree.xmlNode* c
    cdef tree.xmlNode* p
    cdef list chain = []  # el and its ancestors up to the first one with a known path
    cdef Py_ssize_t i
    node = el
    prefix = ""
    top = None  # the first ancestor with a known path
    while True:
        chain.append(node)
        p = (<cetree._Element>node)._c_node.parent
        if p is NULL or p.type != tree.XML_ELEMENT_NODE:
            break
        node = cetree.elementFactory(doc, p)
        got = paths.get(node)
        if got is not None:
            prefix = got
            top = node
            break
    for i in range(len(chain) - 1, -1, -1):
        node = chain[i]
        c = (<cetree._Element>node)._c_node
        p = c.parent
        if p is NULL or p.type != tree.XML_ELEMENT_NODE:
            step = cetree.namespacedName(c)
        else:
            parent = chain[i + 1] if i + 1 < len(chain) else top
            table = steps.get(parent)
            if table is None and _wide(p):
                table = steps[parent] = child_steps(parent)
            step = table[node] if table is not None else _own_step(c)
        prefix = prefix + "/" + step
        paths[node] = prefix
    return prefix


def document_elements(el):
    """The number of elements in ``el``'s whole document (XPath's
    ``count(/descendant::*)``), counted over libxml2's nodes without a node set; None for
    an element this module does not walk."""
    if not isinstance(el, cetree._Element):
        return None
    cdef tree.xmlNode* c_doc = <tree.xmlNode*>(<cetree._Element>el)._c_node.doc
    if c_doc is NULL:
        return None
    cdef Py_ssize_t n = 0
    cdef tree.xmlNode* c = c_doc.children
    while c is not NULL:
        if c.type == tree.XML_ELEMENT_NODE:
            n += 1
            if c.children is not NULL:
                c = c.children
                continue
        while c.next is NULL:
            c = c.parent
            if c is NULL or c is c_doc:
                return n
        c = c.next
    return n


cdef inline tree.xmlNode* _next_node(tree.xmlNode* c, tree.xmlNode* c_root) noexcept nogil:
    """The node after ``c`` in document order within ``c_root``'s subtree (an element's
    children first), NULL past its end."""
    if c.type == tree.XML_ELEMENT_NODE and c.children is not NULL:
        return c.children
    if c is c_root:
        return NULL
    while c.next is NULL:
        c = c.parent
        if c is c_root or c is NULL:
            return NULL
    return c.next


cdef inline bint _named(tree.xmlNode* c, tuple names):
    """Whether ``c``, an element, has one of ``names`` (bytes) as its tag, in no namespace
    (as lxml's ``iter(*names)`` matches them)."""
    if c.ns is not NULL:
        return False
    for name in names:
        if strcmp(<const char*>c.name, <const char*>(<bytes>name)) == 0:
            return True
    return False


cdef bint _marked(tree.xmlNode* c, tuple attrs, str value):
    """Whether one of the attributes ``attrs`` (bytes names, no namespace) of the element
    ``c`` has exactly ``value``, as ``element.get(name) == value``."""
    cdef tree.xmlAttr* a = c.properties
    while a is not NULL:
        if a.type == tree.XML_ATTRIBUTE_NODE and a.ns is NULL:
            for name in attrs:
                if strcmp(<const char*>a.name, <const char*>(<bytes>name)) == 0:
                    if cetree.attributeValue(c, a) == value:
                        return True
                    break
        a = a.next
    return False


def find_elements(root, tuple names=None, tuple attrs=None, str value=None, Py_ssize_t limit=-1):
    """The elements of ``root``'s subtree, ``root`` first, in document order, that have
    one of the tags ``names`` (bytes) or, with ``attrs``, one of those attributes (bytes
    names) equal to ``value``; at most ``limit`` of them (all when negative). Proxies are
    made only for those: what ``[el for el in root.iter(*names)]`` gives, or the elements
    of ``root.iter()`` whose ``get(name) == value`` for a name of ``attrs``. None for an
    element this module does not walk."""
    if not isinstance(root, cetree._Element):
        return None
    cdef cetree._Element r = <cetree._Element>root
    cdef tree.xmlNode* c_root = r._c_node
    cdef tree.xmlNode* c = c_root
    cdef cetree._Document doc = r._doc
    cdef list out = []
    while c is not NULL:
        if c.type == tree.XML_ELEMENT_NODE and (
            (names is not None and _named(c, names)) or (attrs is not None and _marked(c, attrs, value))
        ):
            if len(out) == limit:
                break
            out.append(cetree.elementFactory(doc, c))
        c = _next_node(c, c_root)
    return out


cdef bint _hiding_style(const unsigned char* value):
    """Whether an inline style hides its element, as ``_dom._HIDING_ATTRS`` reads it: with
    a "y" or "Y", and holding ``display:none`` or ``visibility:hidden`` once the spaces
    (space, tab, newline, return) are removed and the letters of those two words are
    lower-cased (ASCII only: the UTF-8 bytes of other characters never match)."""
    cdef const unsigned char* p = value
    cdef bint has_y = False
    while p[0]:
        if p[0] == b'y' or p[0] == b'Y':
            has_y = True
            break
        p += 1
    if not has_y:
        return False
    cdef bytearray key = bytearray()
    cdef unsigned char ch
    p = value
    while p[0]:
        ch = p[0]
        p += 1
        if ch == b' ' or ch == b'\t' or ch == b'\n' or ch == b'\r':
            continue
        if ch in b"ABDEHILNOPSTVY":
            ch += 32
        key.append(ch)
    return b"display:none" in key or b"visibility:hidden" in key


cdef int _hiding_attribute(tree.xmlNode* c):
    """0 if no attribute of the element ``c`` hides it, else what the first one that does
    is: 1 for ``hidden`` or a hiding inline style, 2 for ``aria-hidden="true"``."""
    cdef tree.xmlAttr* a = c.properties
    cdef const char* name
    cdef tree.xmlNode* t
    cdef const unsigned char* value
    cdef bytes copy
    while a is not NULL:
        if a.type == tree.XML_ATTRIBUTE_NODE and a.ns is NULL:
            name = <const char*>a.name
            if strcmp(name, b"hidden") == 0:
                return 1
            if strcmp(name, b"style") == 0 or strcmp(name, b"aria-hidden") == 0:
                # the value's UTF-8 is its one text node's (libxml2's own functions are
                # not exported by lxml's build: read the node, or ask lxml otherwise)
                t = a.children
                if t is NULL:
                    value = b""
                elif t.next is NULL and t.type == tree.XML_TEXT_NODE and t.content is not NULL:
                    value = <const unsigned char*>t.content
                else:
                    copy = cetree.attributeValue(c, a).encode("utf-8")
                    value = <const unsigned char*>(<char*>copy)
                if name[0] == b's':
                    if _hiding_style(value):
                        return 1
                elif strcmp(<const char*>value, b"true") == 0:
                    return 2
        a = a.next
    return 0


def hiding_elements(root):
    """The elements of ``root``'s subtree (``root`` first, document order) an attribute
    hides, each once, as ``(element, by_aria)``: what ``_dom._HIDING_ATTRS`` selects,
    grouped by element, ``by_aria`` telling whether the element's first hiding attribute
    is ``aria-hidden``. None for an element this module does not walk."""
    if not isinstance(root, cetree._Element):
        return None
    cdef cetree._Element r = <cetree._Element>root
    cdef tree.xmlNode* c_root = r._c_node
    cdef tree.xmlNode* c = c_root
    cdef cetree._Document doc = r._doc
    cdef list out = []
    cdef int kind
    while c is not NULL:
        if c.type == tree.XML_ELEMENT_NODE and c.properties is not NULL:
            kind = _hiding_attribute(c)
            if kind:
                out.append((cetree.elementFactory(doc, c), kind == 2))
        c = _next_node(c, c_root)
    return out


cdef bint _text_holds_run(const unsigned char* p, const unsigned char* bits, Py_ssize_t* run, Py_ssize_t longest) noexcept nogil:
    """Whether the UTF-8 text ``p`` brings the count ``run`` of consecutive characters
    set in ``bits`` (code points below 0x20000) past ``longest``; ``run`` goes on from
    the text before when the two are one of lxml's texts."""
    cdef unsigned int cp
    cdef unsigned char b
    while p[0]:
        b = p[0]
        if b < 0x80:
            run[0] = 0
            p += 1
            continue
        # a lead byte whose sequence is cut short (libxml2 keeps UTF-8 whole: never
        # expected) is stepped over alone, so the NUL after the text is never passed
        if (p[1] & 0xC0) != 0x80 or (b >= 0xE0 and (p[2] & 0xC0) != 0x80) or (b >= 0xF0 and (p[3] & 0xC0) != 0x80):
            run[0] = 0
            p += 1
            continue
        if b < 0xE0:
            cp = ((b & 0x1F) << 6) | (p[1] & 0x3F)
            p += 2
        elif b < 0xF0:
            cp = ((b & 0x0F) << 12) | ((p[1] & 0x3F) << 6) | (p[2] & 0x3F)
            p += 3
        else:
            cp = ((b & 0x07) << 18) | ((p[1] & 0x3F) << 12) | ((p[2] & 0x3F) << 6) | (p[3] & 0x3F)
            p += 4
        if cp < 0x20000 and (bits[cp >> 3] >> (cp & 7)) & 1:
            run[0] += 1
            if run[0] > longest:
                return True
        else:
            run[0] = 0
    return False


def holds_run(root, bytes bits, Py_ssize_t longest):
    """Whether a text of ``root``'s subtree (an element's text or tail: adjacent text
    nodes together, as lxml reads them) holds more than ``longest`` characters in a row
    of those set in ``bits`` (``_dom._NONSTARTER_BITS``); None for an element this module
    does not walk. The UTF-8 bytes are libxml2's own: no str is made."""
    if not isinstance(root, cetree._Element) or len(bits) < 0x20000 // 8:
        return None
    cdef cetree._Element r = <cetree._Element>root
    cdef tree.xmlNode* c_root = r._c_node
    cdef tree.xmlNode* c = c_root.children
    cdef const unsigned char* table = <const unsigned char*>(<char*>bits)
    cdef Py_ssize_t run = 0
    while c is not NULL:
        if c.type == tree.XML_TEXT_NODE or c.type == tree.XML_CDATA_SECTION_NODE:
            if c.content is not NULL and _text_holds_run(<const unsigned char*>c.content, table, &run, longest):
                return True
        else:
            run = 0
            if c.type == tree.XML_ELEMENT_NODE and c.children is not NULL:
                c = c.children
                continue
        while c.next is NULL:
            run = 0
            c = c.parent
            if c is c_root or c is NULL:
                return False
        c = c.next
    return False
