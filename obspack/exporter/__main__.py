"""``python -m obspack.exporter``: the exporter command on its own, without the rest of the obspack CLI."""

import typer

from obspack.exporter.command import exporter

typer.run(exporter)
