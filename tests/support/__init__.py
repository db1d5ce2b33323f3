"""Shared test support: external tools, synthetic data."""
