#!/usr/bin/env sh
# What the test suite needs beyond pip: systemd-python builds against libsystemd (pkg-config finds it), the
# journald tests write real journal files with systemd-journal-remote, systemd-analyze (package systemd) judges
# the units, the weekly report's HTML is rendered in headless chromium, and the JavaScript example (examples/js)
# runs on Node with its locked npm packages; the package prometheus: promtool judges every /metrics and the
# shipped scrape config, and Prometheus itself scrapes a running stack with it; the responder's tests drain and
# resume nodes of a real one-machine Slurm (slurmctld, slurmd and munge from slurm-wlm). Debian/Ubuntu; installs
# only what is missing.
set -eu
need=""
for pkg in libsystemd-dev pkg-config systemd systemd-journal-remote chromium slurm-wlm munge; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need="$need $pkg"
done
command -v node >/dev/null 2>&1 || need="$need nodejs"
command -v npm >/dev/null 2>&1 || need="$need npm"
{ command -v promtool && command -v prometheus; } >/dev/null 2>&1 || need="$need prometheus"
if [ -n "$need" ]; then
    if command -v apt-get >/dev/null 2>&1; then
        sudo=""
        [ "$(id -u)" -eq 0 ] || sudo="sudo"
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $need >/dev/null
    else
        echo "test-deps: not a Debian system; install$need by hand (the tests needing them skip)" >&2
    fi
fi
# npm ci only when node_modules is missing or older than the lock file: it starts from scratch each time.
js="$(dirname "$0")/../examples/js"
if command -v npm >/dev/null 2>&1 && ! [ "$js/node_modules/.package-lock.json" -nt "$js/package-lock.json" ]; then
    npm ci --prefix "$js" --no-audit --no-fund >/dev/null
fi
