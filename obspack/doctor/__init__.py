"""`obspack doctor`: does the pack a config renders fit the data of a live Prometheus-compatible API?

The pipeline (run.py `diagnose`), one module per step:

    api.py        read-only HTTP client: auth, TLS, timeouts, bounded concurrency
    backends.py   which backend answers (Prometheus, Thanos Query, Mimir, VictoriaMetrics), what it allows
    needs.py      what the pack reads, from its rendered PromQL: trees of selectors and records
    checks.py     every raw selector checked in stages (present, gone since, label or value never there)
    deployed.py   the pack's rule groups on the server: loaded, healthy, fast enough, the same as the render
    fit.py        records judged through their rules, alerts that cannot fire, panels that would be empty
    sources.py    the sources' shape (vLLM versions, DCGM label mode, ...); knowledge.py holds the facts
    targets.py    scrape targets of the sources that are down
    advice.py     config changes and actions that fix what was found
    report.py     the report as text and JSON; findings.py the problem/note records it is made of
"""
