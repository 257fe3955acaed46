from typing import Any, Callable, Optional

from sst_cleaner.engine._segment import TextBlock

def text_blocks(
    root: Any,
    annotate: Optional[Callable[..., Any]] = None,
    elements: Optional[list] = None,
    nodes: Optional[tuple[list, list, list]] = None,
    style_attrs: Optional[frozenset] = None,
    same: Optional[dict] = None,
) -> Optional[list[TextBlock]]: ...
def child_kinds(parent: Any, agg: dict) -> Optional[dict]: ...
def child_steps(parent: Any) -> Optional[dict]: ...
def element_path(el: Any, paths: dict, steps: dict) -> Optional[str]: ...
def find_elements(
    root: Any,
    names: Optional[tuple[bytes, ...]] = None,
    attrs: Optional[tuple[bytes, ...]] = None,
    value: Optional[str] = None,
    limit: int = -1,
) -> Optional[list]: ...
def hiding_elements(root: Any) -> Optional[list[tuple[Any, bool]]]: ...
def holds_run(root: Any, bits: bytes, longest: int) -> Optional[bool]: ...
