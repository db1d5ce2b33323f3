"""Prometheus rules: the model, the recording rules and the alerts, composed from the config."""
