"""`obspack rightsize`: size vLLM pods and vLLM's own knobs from what the fleet did (docs/rightsize.md).

queries.py (the PromQL, one question per quantity for the whole fleet) -> measure.py (asked through the
doctor's read-only client; answers as rows) -> workloads.py (whose pods they are) -> assemble.py (rows to
workloads, with sizing.py's pure rules and histograms.py's quantiles) -> model.py (the frozen result) ->
report.py (text and JSON) and patches.py (kubectl patches, vLLM arguments). run.py joins them; settings.py
checks the command's values.
"""
