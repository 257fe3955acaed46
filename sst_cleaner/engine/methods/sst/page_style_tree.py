"""The page style tree (PST) of one page: a DOM tree as Yi, Liu & Li see it.

Yi, Liu & Li, "Eliminating Noisy Information in Web Pages for Data Mining" (KDD 2003),
section 3.2, with the segment rules of the informative-sentences paper (3.1) and the
second point of 3.6. Here: the (TAG, Attr) key of an element (:func:`element_key`), the
leaf content features, and the tree itself; the site style tree the pages are merged
into is in :mod:`.site_style_tree`.

Page style tree (:func:`build_page_tree`), built once per page in one iterative
post-order walk:

* a virtual root (``#root``, no attributes) sits above BODY (3.1);
* ``Attr`` for today's web (:func:`element_key`): ``class``/``id``/``role`` and the old
  presentational attributes, lower-cased, tokens sorted, digit runs replaced
  (``post-12345`` -> ``post-#``) so that per-page ids do not make every page a style;
  BODY's attributes are ignored (one per page, its classes name the page: slug, author,
  category; with them every page of a WordPress site would be its own style);
* the *leaf element nodes* are the parents of the actual leaf tags (3.6, point 2): an
  element whose element children have no children of their own is a leaf and its
  children's text is its content ("they tend to overly fragment the page" otherwise);
* segment rules (informative-sentences 3.1): runs of sibling leaves with the same tag
  (and ``Attr``: unlike the paper, ``div.byline`` and ``div.body`` stay apart) are
  merged into one (so a list of 7 links and one of 9 are one style), and an element with
  a single child absorbs it (wrapper chains ``div > div > div`` fold into the outer one);
* text directly inside an internal element is a ``#text`` leaf child (the paper's DOM has
  texts as leaves, Fig. 2); elements with no text, image or link under them (spacers,
  ``<br>``, empty ``<div>``) are left out: there is nothing in them to clean and they
  only split styles.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable, Optional

from lxml import etree

from sst_cleaner.engine._text import features, words

#: attributes that describe an element's presentation: today's (class, id, role) and
#: the HTML 3/4 presentational attributes the paper's ``Attr`` meant (bgcolor, width...)
STYLE_ATTRS = frozenset(
    """class id role bgcolor width height align valign border cellpadding cellspacing
    face size color background""".split()
)
#: elements there is one of per page: their class names say which page it is (WordPress
#: and co. put the post slug, author and category on BODY), not how it is laid out
_BARE_TAGS = frozenset(("body", "html"))
ROOT_KEY = "#root"
TEXT_KEY = "#text"
#: longest attribute value looked at (class lists of CSS frameworks can be very long)
_MAX_ATTR_CHARS = 200
#: longest link target / image source kept as a feature
_MAX_REF_CHARS = 200

_norm_cache: dict[str, str] = {}


def normalise_attr_value(value: str) -> str:
    """Public name of the (TAG, Attr) value normaliser, shared with ``site_stats``."""
    return _norm_value(value)


def _norm_value(value: str) -> str:
    """Lower-case, split into tokens, digit runs -> ``#``, sorted unique tokens."""
    hit = _norm_cache.get(value)
    if hit is not None:
        return hit
    toks = set()
    for tok in value[:_MAX_ATTR_CHARS].lower().split():
        buf = []
        in_digits = False
        for ch in tok:
            if ch.isdigit():
                if not in_digits:
                    buf.append("#")
                in_digits = True
            else:
                buf.append(ch)
                in_digits = False
        toks.add("".join(buf))
    out = " ".join(sorted(toks))
    if len(_norm_cache) > 200_000:
        _norm_cache.clear()
    _norm_cache[value] = out
    return out


_key_cache: dict[tuple, str] = {}


def element_key(el: etree._Element, principal: bool = False) -> str:
    """The paper's (TAG, Attr) pair as one string: ``tag`` or ``tag|name=value;...``.

    ``principal=True`` keeps only the *first* class name as written (normalised): blog
    engines append the post's author, categories and tags to the classes of the post
    and comment wrappers (``entry entry-author-jane entry-category-travel``), which
    makes the full class list different on every page; the first name is the role."""
    attrib = el.attrib
    tag = el.tag
    if not attrib or tag in _BARE_TAGS:
        return tag
    raw = (tag, principal, tuple(attrib.items()))
    hit = _key_cache.get(raw)
    if hit is not None:
        return hit
    parts = []
    for name, value in raw[2]:
        if name in STYLE_ATTRS and value and value.strip():
            if principal and name == "class":
                value = value.split()[0]
            parts.append(f"{name}={_norm_value(value)}")
    if parts:
        parts.sort()
        key = tag + "|" + ";".join(parts)
    else:
        key = tag
    if len(_key_cache) > 200_000:
        _key_cache.clear()
    _key_cache[raw] = key
    return key


def key_tag(key: str) -> str:
    cut = key.find("|")
    return key if cut < 0 else key[:cut]


def key_attr(key: str) -> str:
    cut = key.find("|")
    return "" if cut < 0 else key[cut + 1 :]


class PageNode:
    """One node of a page style tree (a DOM node after the segment rules).

    ``tops``: the DOM elements this node stands for (the element, the wrappers folded
    into it, every member of a merged run); their subtrees inherit the node's label.
    ``owner``: for a ``#text`` node, the element whose direct text it is.
    ``feats``: leaf content, ``Counter`` of features (words, ``a:``link, ``img:``src).
    ``actual``: an actual leaf tag of the DOM (no element children).
    """

    __slots__ = ("key", "tag", "children", "feats", "tops", "actual", "owner", "leaf")

    def __init__(
        self,
        key: str,
        tag: str,
        children: Optional[list] = None,
        feats: Optional[Counter] = None,
        tops: Optional[list] = None,
        actual: bool = False,
        owner: Optional[etree._Element] = None,
    ) -> None:
        self.key = key
        self.tag = tag
        self.children: list[PageNode] = children if children is not None else []
        self.feats = feats
        self.tops = tops if tops is not None else []
        self.actual = actual
        self.owner = owner
        self.leaf = feats is not None

    def child_keys(self) -> tuple:
        return tuple(c.key for c in self.children)

    def __repr__(self) -> str:
        kind = "leaf" if self.leaf else f"{len(self.children)} children"
        return f"PageNode({self.key!r}, {kind})"


#: leaf features include link targets and image sources (the paper's "link references,
#: image files"); switchable for experiments
REF_FEATURES = True


def _add_refs(el: etree._Element, feats: Counter) -> None:
    if not REF_FEATURES:
        return
    tag = el.tag
    if tag == "a":
        href = el.get("href")
        if href:
            href = href.strip().split("#", 1)[0][:_MAX_REF_CHARS]
            if href:
                feats["a:" + href] += 1
    elif tag == "img":
        src = el.get("src")
        if src:
            src = src.strip()[:_MAX_REF_CHARS]
            if src:
                feats["img:" + src] += 1


_tok_cache: dict[str, tuple] = {}


def fast_features(text: str) -> list[str]:
    """``text.features`` with a per-token cache: the same list (features() treats every
    token on its own), without re-testing each character for CJK on every page."""
    out: list[str] = []
    cache = _tok_cache
    for tok in words(text):
        f = cache.get(tok)
        if f is None:
            if len(cache) > 500_000:
                cache.clear()
            f = cache[tok] = tuple(features(tok))
        out.extend(f)
    return out


class _NoContent(Counter):
    """Stand-in content of a page tree built for mapping only (no features needed)."""

    def update(self, *args: Any, **kwds: Any) -> None:  # merged runs stay empty
        return None


_NO_CONTENT = _NoContent()


def _leaf_content(text: str, refs: Iterable[etree._Element], content: bool) -> tuple[Counter, bool]:
    """(features of a leaf, whether it has anything at all: text, a link or an image)."""
    has_text = bool(text) and not text.isspace()
    if not content:
        nonempty = has_text
        if not nonempty:
            for el in refs:
                if (el.tag == "a" and el.get("href")) or (el.tag == "img" and el.get("src")):
                    nonempty = True
                    break
        return _NO_CONTENT, nonempty
    feats = Counter(fast_features(text)) if has_text else Counter()
    for el in refs:
        _add_refs(el, feats)
    return feats, has_text or bool(feats)


#: the content of a short childless element, kept by what decides it (its text, and its
#: link or image): a page repeats such leaves (menu links, cells, glyphs) by the
#: hundred, and counting their features anew was most of the cost of building the tree
_CACHED_LEAF_CHARS = 64
_leaf_cache: dict[tuple, tuple[dict, bool]] = {}


def _element_leaf_content(el: etree._Element, text: str, content: bool) -> tuple[Counter, bool]:
    """:func:`_leaf_content` of one childless element (a fresh Counter every time: a
    page tree's leaves are merged into, never shared)."""
    if not content or len(text) > _CACHED_LEAF_CHARS:
        return _leaf_content(text, (el,), content)
    tag = el.tag
    ref = el.get("href") if tag == "a" else el.get("src") if tag == "img" else None
    key = (text, tag == "a", tag == "img", ref, REF_FEATURES)
    hit = _leaf_cache.get(key)
    if hit is None:
        if len(_leaf_cache) >= 50_000:
            _leaf_cache.clear()
        feats, nonempty = _leaf_content(text, (el,), True)
        hit = _leaf_cache[key] = (dict(feats), nonempty)
    out: Counter = Counter()
    dict.update(out, hit[0])  # the same counts in the same order, without Counter's checks
    return out, hit[1]


def build_page_tree(root: etree._Element, content: bool = True, principal: bool = False) -> PageNode:
    """The page style tree of the subtree under ``root`` (normally BODY), below a virtual
    root. One iterative post-order walk (``etree.iterwalk``), so depth does not matter;
    the texts, tails and links a node needs from its children are handed up during the
    walk (no second pass over children). ``content=False`` skips the leaf features (all
    MapSST needs is the structure). ``principal``: keys with the first class name only
    (see :func:`element_key`)."""
    # frame = [kept child PageNodes, all kept children are actual leaves, has element
    #          child, tails of children, texts+tails of children in order, a/img children]
    frames: list[list] = [[[], True, False, [], [], []]]
    for event, el in etree.iterwalk(root, events=("start", "end")):
        tag = el.tag
        if not isinstance(tag, str):
            continue
        if event == "start":
            frames[-1][2] = True
            frames.append([[], True, False, [], [], []])
            continue
        kids, all_actual, has_child, tails, pieces, refs = frames.pop()
        text = el.text
        node = _make_node(el, tag, text, kids, all_actual, has_child, tails, pieces, refs, content, principal)
        parent = frames[-1]
        if node is not None:
            parent[0].append(node)
            if not node.actual:
                parent[1] = False
        tail = el.tail
        if not has_child:
            if text:
                parent[4].append(text)
            if tag == "a" or tag == "img":
                parent[5].append(el)
        if tail:
            parent[3].append(tail)
            parent[4].append(tail)
    top = frames[0][0]
    return PageNode(ROOT_KEY, ROOT_KEY, children=top, tops=[])


def _make_node(
    el: etree._Element,
    tag: str,
    text: Optional[str],
    kids: list,
    all_actual: bool,
    has_child: bool,
    tails: list,
    pieces: list,
    refs: list,
    content: bool = True,
    principal: bool = False,
) -> Optional[PageNode]:
    key = element_key(el, principal)
    if not has_child:
        # an actual leaf tag: its text, link target or image is its content
        feats, nonempty = _element_leaf_content(el, text or "", content)
        if not nonempty:
            return None
        return PageNode(key, tag, feats=feats, tops=[el], actual=True)
    if all_actual:
        # 3.6: the parent of actual leaf tags is the (virtual) leaf; children are content
        full = (text or "") + "".join(pieces)
        refs.append(el)
        feats, nonempty = _leaf_content(full, refs, content)
        if not nonempty:
            return None
        return PageNode(key, tag, feats=feats, tops=[el], actual=False)
    # internal element: direct text becomes a #text leaf child
    direct = (text or "") + "".join(tails)
    children: list[PageNode] = []
    if direct and not direct.isspace():
        feats, _ = _leaf_content(direct, (), content)
        children.append(PageNode(TEXT_KEY, TEXT_KEY, feats=feats, owner=el, actual=True))
    _append_merging_runs(children, kids)
    if len(children) == 1 and children[0].tag != TEXT_KEY:
        # segment rule: a node with one child absorbs it (the outer key names the chain)
        c = children[0]
        c.key = key
        c.tag = tag
        c.tops.append(el)
        c.actual = False
        return c
    return PageNode(key, tag, children=children, tops=[el], actual=False)


def _append_merging_runs(children: list[PageNode], kids: list) -> None:
    """Append ``kids`` to ``children`` under the segment rule: a run of sibling leaves
    with the same tag is one node (their contents and DOM elements pooled). Same (TAG,
    Attr), not only TAG: a byline <div class=byline> next to the article's <div
    class=body> must stay two nodes (lists of <li>/<p> still merge)."""
    for k in kids:
        if k.leaf and children:
            prev = children[-1]
            if prev.leaf and prev.key == k.key and k.tag != TEXT_KEY:
                if len(k.feats) > len(prev.feats):  # type: ignore[arg-type]
                    k.feats.update(prev.feats)
                    prev.feats = k.feats
                else:
                    prev.feats.update(k.feats)  # type: ignore[union-attr]
                prev.tops.extend(k.tops)
                prev.actual = prev.actual and k.actual
                continue
        children.append(k)


def iter_page_nodes(root: PageNode) -> Iterable[PageNode]:
    stack = [root]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))
