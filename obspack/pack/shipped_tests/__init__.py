"""The promtool unit tests the pack ships in OUT/tests/: one incident per alert (alerts.py) and the SLO
burn scenarios (slos.py), built with the config's own thresholds and label names, their label values
moved into what the selectors accept (satisfy.py), their samples at the step short windows need
(sampling.py)."""
