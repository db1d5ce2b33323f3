"""Before a release publishes anything: one version everywhere.

obspack/__init__.py's __version__ is the single source. The tag must be v<version>; helm/obspack/Chart.yaml's
version and appVersion must equal it; and the chart's default exporter image must be the one the release
workflow pushes, ghcr.io/<owner>/obspack-exporter, with its tag left to the appVersion. On success it prints
`version=`, `image=` and `charts=` lines for $GITHUB_OUTPUT; otherwise each problem on stderr, exit 1.

    python .github/scripts/release_check.py --tag v0.1.0 --owner obspack

Standard library and PyYAML only, and obspack is not imported: it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
VERSION_FILE = ROOT / "obspack" / "__init__.py"
CHART = ROOT / "helm" / "obspack"
LAYOUT = "obspack/pack/chart/layout.py"  # where the chart's default image is declared
# SemVer without build metadata: what Python packaging, Helm and an OCI tag all accept as the same text.
SEMVER = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.]+)?$")
OWNER = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$")


def package_version() -> str:
    found = re.search(r'^__version__ = "([^"\n]+)"$', VERSION_FILE.read_text(encoding="utf-8"), re.MULTILINE)
    if not found:
        raise SystemExit(f"release check: no __version__ = \"...\" line in {VERSION_FILE.relative_to(ROOT)}")
    return found.group(1)


def problems(tag: str, owner: str) -> tuple[dict[str, str], list[str]]:
    """(outputs, problems): no problems when the release may go ahead."""
    version = package_version()
    found: list[str] = []
    if not SEMVER.match(version):
        found.append(f"version {version!r} is not MAJOR.MINOR.PATCH[-PRERELEASE], which Helm and OCI tags need")
    if tag != f"v{version}":
        found.append(f"tag {tag!r} is not v{version}, the version in obspack/__init__.py")
    if not OWNER.match(owner):
        found.append(f"repository owner {owner!r} is not a GitHub account name")
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text(encoding="utf-8"))
    for key in ("version", "appVersion"):
        if str(chart.get(key)) != version:
            found.append(
                f"helm/obspack/Chart.yaml {key} is {chart.get(key)!r}, not {version!r}: run scripts/render-chart.sh"
            )
    image = yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8"))["exporter"]["image"]
    pushed = f"ghcr.io/{owner.lower()}/obspack-exporter"
    if image["repository"] != pushed:
        found.append(
            f"the chart's default exporter image is {image['repository']}, but this workflow pushes {pushed}: "
            f"set EXPORTER_IMAGE in {LAYOUT} and run scripts/render-chart.sh"
        )
    if image["tag"] not in ("", None):
        found.append(f"the chart's default image tag is {image['tag']!r}: leave it empty, so that it is the appVersion")
    outputs = {"version": version, "image": pushed, "charts": f"oci://ghcr.io/{owner.lower()}/charts"}
    return outputs, found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tag", required=True, help="the pushed tag, e.g. v0.1.0 (github.ref_name)")
    parser.add_argument("--owner", required=True, help="the repository owner (github.repository_owner)")
    args = parser.parse_args(argv)
    outputs, found = problems(args.tag, args.owner)
    for problem in found:
        print(f"release check: {problem}", file=sys.stderr)
    if found:
        return 1
    for key, value in outputs.items():
        print(f"{key}={value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
