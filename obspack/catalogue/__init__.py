"""Facts about the source series obspack reads, kept as data so rules, config checks and docs share them."""
