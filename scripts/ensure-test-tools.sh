#!/usr/bin/env bash
# The tests drive real programs where users have them (an Alertmanager for the alert tests,
# Chromium for the web page tests, a Kafka protocol peer that the Kafka tests compile from
# packages/testkit/src/kafka/mock-cluster.c against librdkafka's mock cluster, jq for the tests that
# pipe `keyscope analyze` into it as the README does, curl and jq for docs/tutorial.md's shell blocks,
# libfaketime for the Kafka test that runs the roles on the lab recordings' clock).
# This installs the missing ones from Debian's packages when it can (root with apt-get), and
# otherwise says exactly what to install — so `pnpm test` works on a fresh Debian machine.
set -euo pipefail

# A file each package installs: a program, or for a library the header the tests compile against.
declare -A file_of=(
  [prometheus-alertmanager]=/usr/bin/prometheus-alertmanager
  [chromium]=/usr/bin/chromium
  [librdkafka-dev]=/usr/include/librdkafka/rdkafka_mock.h
  [gcc]=/usr/bin/gcc
  [pkg-config]=/usr/bin/pkg-config
  [jq]=/usr/bin/jq
  [curl]=/usr/bin/curl
  [libfaketime]=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1
)

missing=()
for package in "${!file_of[@]}"; do
  [ -e "${file_of[$package]}" ] || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing test tools: ${missing[*]}" >&2
  apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >&2
else
  echo "the tests need these Debian packages: ${missing[*]}" >&2
  echo "install them with: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
