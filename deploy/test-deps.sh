#!/usr/bin/env sh
# System packages the test suite needs beyond pip: systemd-python builds against
# libsystemd (pkg-config finds it), and the journald tests write real journal
# files with systemd-journal-remote; systemd-analyze (package systemd) judges the units; the weekly report's
# HTML is rendered in headless chromium. Debian/Ubuntu; installs only what is missing.
set -eu
need=""
for pkg in libsystemd-dev pkg-config systemd systemd-journal-remote chromium; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need="$need $pkg"
done
[ -z "$need" ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
    echo "test-deps: not a Debian system; install$need by hand (the journald and chromium tests skip without them)" >&2
    exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $need >/dev/null
