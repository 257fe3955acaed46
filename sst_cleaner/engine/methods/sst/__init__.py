"""Site Style Tree noise elimination (Yi, Liu & Li, KDD 2003): the page and site style
trees (:mod:`.style_tree`), node importance (:mod:`.importance`), mapping a page onto
the site tree (:mod:`.mapping`), the ``sst`` method (:mod:`.sst`) and informative
sentences over SST nodes (:mod:`.sentences`)."""
