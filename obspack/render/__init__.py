"""From the model to files: `build(cfg)` makes the pack in memory, `write` puts it on disk atomically."""
