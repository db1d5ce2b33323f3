"""The obspack exporter: derives fragmentation, hit ratio and headroom series from vLLM's /metrics.

Pipeline, one module per step: ``scrape`` (fetch one target) -> ``parse`` (pick out the few families
needed) -> ``derive`` (pure formulas) -> ``collector`` (a client_python collector that builds fresh
families on every scrape) -> ``server`` (threaded HTTP). ``window`` holds the only state kept between
scrapes (a bounded counter history per engine) and ``probe_files`` reads what ``obspack.probe`` writes.
"""
