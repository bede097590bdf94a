#!/usr/bin/env bash
# Every test, as one pytest session so that one summary line counts them all:
# unit tests, the browser check of the report, then ansible-lint (production), ansible-test sanity on every
# ansible-core release of the declared range, ansible-doc, the packaging test, the changelog, the AWX checks, every
# Molecule scenario and the lab tests (tests/integration/). Extra arguments go to pytest. Each stage prints its time.
# Three workers: the scenarios that depend on timers or rates on one, the rest on two others at a lower priority
# (tests/conftest.py says which and why).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
started=$SECONDS
# Each stage's time, for the table printed at the end (scripts/test_table.py, with the tests' own times).
STAGES=$ROOT/.cache/test-logs/stages.tsv
mkdir -p "$(dirname "$STAGES")"
rm -f "$STAGES" "$ROOT/.cache/test-logs/test-timings.json" "$ROOT/.cache/test-logs/vmstat.log"
stage() {
    local name=$1 start=$SECONDS rc=0
    shift
    "$@" || rc=$?
    # stderr: a stage whose output is discarded still reports its time.
    echo "test.sh: stage '$name' took $((SECONDS - start)) s (exit $rc)" >&2
    printf '%s\t%d\t%d\n' "$name" "$((SECONDS - start))" "$rc" >>"$STAGES"
    return "$rc"
}
stage setup "$ROOT/scripts/setup.sh"
# The machine's CPU use every 10 s while the tests run (the table's last line: how busy the two cores were).
vmstat -n 10 >"$ROOT/.cache/test-logs/vmstat.log" 2>/dev/null &
vmstat=$!
# The VM lab's image and the saved snapshot the kernel scenario restores, made in the background from here on:
# beside the container images, then at the background worker's priority beside the first tests. The first VM
# scenario's `vmlab.sh up` waits for them (vmlab.sh's build lock) instead of building them on the foreground worker,
# where they cost about 7 minutes. A lab name and ports of its own; it leaves nothing running. Should it fail, that
# scenario builds them itself.
# shellcheck disable=SC2317  # run through stage, below
vm_snapshot() {
    mkdir -p "$ROOT/.cache/test-logs"
    GPUFABRIC_VMLAB_NAME=snapshot GPUFABRIC_VMLAB_SSH_PORT=22900 GPUFABRIC_VMLAB_LINK_PORT=22920 \
        GPUFABRIC_VMLAB_BOOT_TIMEOUT=1200 nice -n 10 "$ROOT/scripts/vmlab.sh" snapshot 2 \
        >/dev/null 2>"$ROOT/.cache/test-logs/vmlab-snapshot.log"
}
stage "VM image and snapshot (in the background)" vm_snapshot &
vm_snapshot=$!
# The container images, also in the background while the first tests run: every release a scenario's platforms or
# the site test name, then the Debian 13 controller of the newest ansible-core lines (scripts/compat.sh). A scenario
# that needs one before it is built waits for its build (scripts/lab.sh image, from .config/molecule/create.yml).
# shellcheck disable=SC2317  # run through stage, below
lab_images() {
    local release
    for release in bookworm trixie forky; do
        stage "lab image $release (in the background)" env GPUFABRIC_LAB_RELEASE=$release "$ROOT/scripts/lab.sh" image \
            >/dev/null
    done
    stage "controller image (in the background)" "$ROOT/scripts/lab.sh" controller-image >/dev/null
}
lab_images &
lab_images=$!
# shellcheck source=scripts/env.sh
source "$ROOT/scripts/env.sh"
cd "$ROOT"
rc=0
stage pytest pytest -p no:cacheprovider -o console_output_style=count --durations=40 -n 3 --dist loadgroup \
    tests/unit tests/browser tests/integration "$@" || rc=$?
# Long done by now; nothing of them outlives this script.
wait "$vm_snapshot" || true
wait "$lab_images" || true
kill "$vmstat" 2>/dev/null || true
printf '%s\t%d\t%d\n' "all stages" "$((SECONDS - started))" "$rc" >>"$STAGES"
echo
python3 "$ROOT/scripts/test_table.py" || true
echo "test.sh: all stages took $((SECONDS - started)) s"
exit "$rc"
