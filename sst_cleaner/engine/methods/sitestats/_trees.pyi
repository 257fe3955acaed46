from typing import Any

def leaf_indices(
    rows: list,
    n_cols: int,
    feature: Any,
    threshold: Any,
    n_trees: int,
    stride: int,
    depth: int,
    n_leaves: int,
    n_internal: int,
    out: Any,
) -> None: ...
