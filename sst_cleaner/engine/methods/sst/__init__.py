"""Site Style Tree noise elimination (Yi, Liu & Li, KDD 2003): the page style tree
(:mod:`.page_style_tree`), the site style tree (:mod:`.site_style_tree`) and its JSON
form (:mod:`.style_tree_json`), their public names also importable from
:mod:`.style_tree`; node importance (:mod:`.importance`), mapping a page onto the site
tree (:mod:`.mapping`), the ``sst`` method (:mod:`.sst`) and informative sentences over
SST nodes (:mod:`.sentences`)."""
