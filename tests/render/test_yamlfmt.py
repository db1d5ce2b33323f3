"""The YAML writer gives the same bytes with libyaml's emitter and with PyYAML's pure-Python one, so the
pack is the same on a machine whose PyYAML lacks libyaml."""

from __future__ import annotations

import pytest
import yaml

from obspack.render import yamlfmt
from tests.support.packs import CONFIGS, pack


@pytest.mark.skipif(not hasattr(yaml, "CSafeDumper"), reason="PyYAML without libyaml: only one emitter here")
@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_both_emitters_write_the_same_rule_files(config: str) -> None:
    p = pack(config)
    docs = [{"groups": [g.to_dict() for g in p.recording_groups]}, {"groups": [g.to_dict() for g in p.alert_groups]}]
    docs += [data for _, data in p.rule_tests] + [p.alertmanager]
    odd = {
        "multi\nline  \nwith trailing spaces": ["ünïcode ☃", "x: y", "- z", "'q'", '"d"', "#c", "", " lead"],
        "scalars": [0, -1.5, 1e-09, float("inf"), True, None, "1", "true", "null", "0o7", "~"],
        "empty": [{}, [], ""],
        "nested": (("a", 1), ("b", [2])),  # a tuple: PyYAML's own representer, its items through ours
    }
    for doc in [*docs, odd]:
        assert yamlfmt.dump(doc) == yamlfmt.dump(doc, dumper=yamlfmt.PureDumper)


def test_an_object_met_twice_is_written_twice_without_anchors() -> None:
    labels = {"severity": "page"}
    text = yamlfmt.dump({"groups": [{"labels": labels}, {"labels": labels}]})
    assert text == "groups:\n- labels:\n    severity: page\n- labels:\n    severity: page\n"
    assert yaml.safe_load(text) == {"groups": [{"labels": labels}, {"labels": labels}]}
