"""One module or subpackage per paper: ``sst`` (Yi, Liu & Li, KDD 2003, and informative
sentences over its nodes), ``sitestats`` (the site statistics and the default method
that combines the papers' evidence), ``cetd`` (Sun, Song & Liao), ``infodiscoverer``
(Lin & Ho, KDD 2002) and ``wisdom`` (Kao, Ho & Chen, TKDE 2005). Each registers itself
with :func:`sst_cleaner.engine.register_method` when imported."""
