"""Shared test support: the external tools (a missing one skips the test, or fails it in CI), the kit's
Prometheus and VictoriaMetrics with those tools, rule chains and rendered packs. The synthetic fleets and
the process kit are in obspack/demo, which the benchmarks use too."""
