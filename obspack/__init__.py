"""obspack: an observability pack for vLLM inference on Kubernetes GPU nodes."""

__version__ = "0.1.0"
