"""The site style tree's JSON form: :func:`tree_to_dict` writes it,
:func:`tree_from_dict` reads it back and validates it (a stored tree may come from an
untrusted file)."""

from __future__ import annotations

import math

from sst_cleaner.engine.methods.sst.site_style_tree import (
    ElementNode,
    SiteStyleTree,
    StyleNode,
    prune_features,
    resolve,
)

TREE_FORMAT = "sst-site-style-tree"
TREE_VERSION = 1


class TreeFormatError(ValueError):
    """The stored SST is malformed."""


def tree_to_dict(sst: SiteStyleTree) -> dict:
    """The SST as plain JSON data (no importance: it is recomputed after loading)::

        {"format": "sst-site-style-tree", "version": 1,
         "match": "exact"|"tolerant", "tolerance": 0.6, "max_features": 400,
         "n_pages": N, "principal": false,
         "keys": ["#root", "body|class=home", "div|id=main", ...],   # (TAG, Attr) keys
         "elements": [[key, m, leaf_n, [style, ...], {feature: [S, T, df]}, rest_n, rest_num], ...],
         "styles":   [[n, [element, ...], [occ, ...]], ...]}

    Element 0 is the virtual root; ``key``, ``style`` and ``element`` are indices into
    the lists. An element node shared by two style nodes (3.6 merge) is listed once.
    Features: ``S`` total count, ``T`` = sum c ln c, ``df`` pages (see ElementNode);
    at most ``max_features`` per element (highest df kept, the rest summarised in
    ``rest_n``/``rest_num``).
    """
    keys: dict[str, int] = {}
    el_index: dict[int, int] = {}
    st_index: dict[int, int] = {}
    elements: list = []
    styles: list = []
    order: list[ElementNode] = []
    stack = [resolve(sst.root)]
    # assign indices in pre-order (iterative)
    while stack:
        e = resolve(stack.pop())
        if id(e) in el_index:
            continue
        el_index[id(e)] = len(order)
        order.append(e)
        for S in reversed(e.styles):
            if id(S) not in st_index:
                st_index[id(S)] = len(styles)
                styles.append(S)
            stack.extend(reversed(S.resolved()))
    for e in order:
        if len(e.feats) > sst.max_features:
            prune_features(e, sst.max_features)
        k = keys.setdefault(e.key, len(keys))
        feats = {f: [st[0], round(st[1], 6), st[2]] for f, st in e.feats.items()}
        elements.append([k, e.m, e.leaf_n, [st_index[id(S)] for S in e.styles], feats, e.rest_n, round(e.rest_num, 6)])
    style_rows = [[S.n, [el_index[id(resolve(x))] for x in S.elements], list(S.occ)] for S in styles]
    return {
        "format": TREE_FORMAT,
        "version": TREE_VERSION,
        "match": sst.match,
        "tolerance": sst.tolerance,
        "max_features": sst.max_features,
        "n_pages": sst.n_pages,
        "principal": sst.principal,
        "keys": list(keys),
        "elements": elements,
        "styles": style_rows,
    }


def _int(v: object, lo: int = 0) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        raise TreeFormatError(f"expected an integer >= {lo}, got {v!r}")
    return v


def _num(v: object) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise TreeFormatError(f"expected a number, got {v!r}")
    return float(v)


def tree_from_dict(data: object) -> SiteStyleTree:
    """Rebuild an SST from :func:`tree_to_dict` output, validating everything (the data
    may come from an untrusted file): indices in range, counts non-negative, and the
    element/style graph acyclic."""
    if not isinstance(data, dict) or data.get("format") != TREE_FORMAT:
        raise TreeFormatError("not a stored site style tree")
    if data.get("version") != TREE_VERSION:
        raise TreeFormatError(f"unsupported SST version {data.get('version')!r}")
    match = data.get("match")
    if match not in ("exact", "tolerant"):
        raise TreeFormatError(f"bad match {match!r}")
    keys, elements, styles = data.get("keys"), data.get("elements"), data.get("styles")
    if not isinstance(keys, list) or not isinstance(elements, list) or not isinstance(styles, list):
        raise TreeFormatError("keys, elements and styles must be lists")
    if not elements or not all(isinstance(k, str) for k in keys):
        raise TreeFormatError("bad keys or no elements")
    sst = SiteStyleTree(
        match, _num(data.get("tolerance", 0.6)), _int(data.get("max_features", 400), 1), data.get("principal") is True
    )
    sst.n_pages = _int(data.get("n_pages", 0))
    nodes: list[ElementNode] = []
    style_refs: list[list[int]] = []
    for row in elements:
        e, refs = _element_from_row(row, keys)
        nodes.append(e)
        style_refs.append(refs)
    built = [_style_from_row(row, nodes) for row in styles]
    for e, refs in zip(nodes, style_refs):
        for i in refs:
            if i >= len(built):
                raise TreeFormatError("style index out of range")
            S = built[i]
            e.styles.append(S)
            e.style_index.setdefault(S.keys, S)
    _check_acyclic(nodes[0])
    sst.root = nodes[0]
    sst.version = 1
    return sst


def _element_from_row(row: object, keys: list) -> tuple[ElementNode, list[int]]:
    """An element node from its row, and the indices of its style nodes (linked once
    every style node is built)."""
    if not isinstance(row, list) or len(row) != 7:
        raise TreeFormatError("bad element row")
    k = _int(row[0])
    if k >= len(keys):
        raise TreeFormatError("key index out of range")
    e = ElementNode(keys[k])
    e.m, e.leaf_n = _int(row[1]), _int(row[2])
    if not isinstance(row[3], list) or not isinstance(row[4], dict):
        raise TreeFormatError("bad element row")
    refs = [_int(i) for i in row[3]]
    for f, st in row[4].items():
        if not isinstance(st, list) or len(st) != 3:
            raise TreeFormatError("bad feature statistics")
        e.feats[f] = [_int(st[0]), _num(st[1]), _int(st[2])]
    e.rest_n, e.rest_num = _int(row[5]), _num(row[6])
    return e, refs


def _style_from_row(row: object, nodes: list[ElementNode]) -> StyleNode:
    """A style node from its row; element 0 (the virtual root) is nobody's child."""
    if (
        not isinstance(row, list)
        or len(row) != 3
        or not isinstance(row[1], list)
        or not isinstance(row[2], list)
        or len(row[1]) != len(row[2])
    ):
        raise TreeFormatError("bad style row")
    idx = [_int(i) for i in row[1]]
    if any(i >= len(nodes) or i == 0 for i in idx):
        raise TreeFormatError("element index out of range")
    return StyleNode([nodes[i] for i in idx], _int(row[0]), [_int(o) for o in row[2]])


def _check_acyclic(root: ElementNode) -> None:
    """Raise unless the element/style graph below ``root`` is acyclic (a cycle would make
    every walk endless). Iterative depth-first search: 1 = on the path, 2 = done."""
    state: dict[int, int] = {}
    stack: list[tuple[ElementNode, bool]] = [(root, False)]
    while stack:
        e, done = stack.pop()
        if done:
            state[id(e)] = 2
            continue
        s = state.get(id(e))
        if s == 2:
            continue
        if s == 1:
            raise TreeFormatError("the stored tree has a cycle")
        state[id(e)] = 1
        stack.append((e, True))
        for S in e.styles:
            for c in S.elements:
                cs = state.get(id(c))
                if cs == 1:
                    raise TreeFormatError("the stored tree has a cycle")
                if cs is None:
                    stack.append((c, False))
