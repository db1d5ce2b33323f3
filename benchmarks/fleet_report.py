"""Stub."""
from __future__ import annotations
import dataclasses, json
def section(results, settings, total, proposals):
    return "stub"
def as_json(results, settings, total):
    def conv(o):
        if dataclasses.is_dataclass(o):
            d = dataclasses.asdict(o)
            return d
        return o
    out = []
    for r in results:
        d = dataclasses.asdict(r)
        out.append(d)
    return {"settings": dataclasses.asdict(settings), "total_s": total, "sizes": out}
def write_section(path, section):
    pass
