"""Site statistics over text blocks and sentences (:mod:`.site_stats`) and the default
method (:mod:`.hybrid`) that scores them, with the other papers' evidence, by a small
learnt scorer."""
