#!/usr/bin/env bash
# One-time (and idempotent) set-up of a fresh Debian 12 machine for this project: system packages, the project's
# virtual environment with pinned Python requirements, and the lab's Podman configuration.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# System packages: the lab (podman, runc, debootstrap), the real peers the tests run (OpenIPMI, iperf3),
# the browser for the report test, what ansible-test and the lab need, and promtool/amtool for the health rules'
# tests (Debian's prometheus and prometheus-alertmanager packages), and the Java runtime ansible-rulebook's rule
# engine (drools-jpy) runs on.
APT_PACKAGES=(podman runc debootstrap openssh-client openipmi ipmitool iperf3 chromium git python3-venv bc shellcheck qemu-system-x86 qemu-utils prometheus prometheus-alertmanager openjdk-17-jre-headless)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

stamp=$ROOT/.venv/.requirements.sha256
wanted=$(cat "$ROOT/requirements.txt" "$ROOT/constraints.txt" | sha256sum | cut -c1-64)
if [[ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]]; then
    echo "setup: installing Python requirements into .venv"
    [[ -x $ROOT/.venv/bin/python ]] || python3 -m venv "$ROOT/.venv"
    "$ROOT/.venv/bin/pip" install -q --disable-pip-version-check -r "$ROOT/requirements.txt" -c "$ROOT/constraints.txt"
    echo "$wanted" >"$stamp"
fi

# systemd in every lab container takes inotify instances; the default 128 per user is exhausted by about twenty
# containers, and new ones then hang at boot ("Failed to create inotify object: Too many open files").
sysctl_conf=/etc/sysctl.d/90-gpufabric-lab.conf
if [[ ! -f $sysctl_conf ]]; then
    printf 'fs.inotify.max_user_instances = 8192\nfs.inotify.max_user_watches = 524288\n' >"$sysctl_conf"
    sysctl -q -p "$sysctl_conf"
fi

"$ROOT/scripts/lab.sh" host-setup
# shellcheck source=scripts/env.sh
source "$ROOT/scripts/env.sh"
echo "setup: done"
