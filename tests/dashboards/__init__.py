"""Tests of the Grafana dashboards: lint, links, variables, ConfigMaps, and no "No data" on a real Prometheus."""
