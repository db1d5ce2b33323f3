"""The obspack exporter: derives fragmentation, hit ratio and headroom series from vLLM's /metrics.

Pipeline, one module per step: ``scrape`` (fetch one target) -> ``parse`` (pick out the few families
needed) -> ``derive`` (pure formulas) -> ``collector`` (a client_python collector that builds fresh
families on every scrape) -> ``server`` (threaded HTTP). ``command`` checks the options and ``serve`` runs
the serving process without the CLI's libraries. ``window`` holds the only state kept between scrapes (a
bounded counter history per engine) and ``probe_files`` reads what ``obspack.probe`` writes.
"""

DEFAULT_PORT = 10025
"""The port ``obspack exporter`` listens on unless told otherwise. It was free in the Prometheus wiki's
"Default port allocations" list when chosen; 9400, the first default, is dcgm-exporter's, which runs on
the same GPU nodes. The chart and the image use it too; register it on that page with each release."""
