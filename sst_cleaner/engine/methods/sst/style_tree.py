"""The style trees of Yi, Liu & Li (KDD 2003, 3.2) under one name: the public names of
:mod:`.page_style_tree` (the page style tree, element keys), :mod:`.site_style_tree`
(style and element nodes, the SST, matching and merging) and :mod:`.style_tree_json`
(the SST's JSON form).

These lived in this one module before it was split; code outside the ``sst`` package
(``sitestats.site_stats``) and code written against the old layout import them from
here, so the names stay. The package itself imports from the modules that define them.
``REF_FEATURES`` is not here: it is a switch read by :mod:`.page_style_tree`, and setting
a copy of it here would change nothing.
"""

from __future__ import annotations

from sst_cleaner.engine.methods.sst.page_style_tree import (
    ROOT_KEY,
    STYLE_ATTRS,
    TEXT_KEY,
    PageNode,
    build_page_tree,
    element_key,
    fast_features,
    iter_page_nodes,
    key_attr,
    key_tag,
    normalise_attr_value,
)
from sst_cleaner.engine.methods.sst.site_style_tree import (
    MERGE_EPOCH,
    ElementNode,
    SiteStyleTree,
    StyleNode,
    feature_num,
    find_style,
    lcs_pairs,
    prune_features,
    resolve,
    tolerant_accept,
)
from sst_cleaner.engine.methods.sst.style_tree_json import (
    TREE_FORMAT,
    TREE_VERSION,
    TreeFormatError,
    tree_from_dict,
    tree_to_dict,
)

__all__ = [
    "MERGE_EPOCH",
    "ROOT_KEY",
    "STYLE_ATTRS",
    "TEXT_KEY",
    "TREE_FORMAT",
    "TREE_VERSION",
    "ElementNode",
    "PageNode",
    "SiteStyleTree",
    "StyleNode",
    "TreeFormatError",
    "build_page_tree",
    "element_key",
    "fast_features",
    "feature_num",
    "find_style",
    "iter_page_nodes",
    "key_attr",
    "key_tag",
    "lcs_pairs",
    "normalise_attr_value",
    "prune_features",
    "resolve",
    "tolerant_accept",
    "tree_from_dict",
    "tree_to_dict",
]
