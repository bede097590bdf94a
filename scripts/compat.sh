#!/usr/bin/env bash
# The collection against every ansible-core release line that meta/runtime.yml declares, beside the project's own
# .venv (2.19, which scripts/test.sh tests in full): per line, a virtual environment of its own (.venv-compat/core-X.Y,
# made once and reused while its pins are unchanged) runs `ansible-test sanity` and, on the lines in UNIT_LINES, the
# unit tests that exercise ansible-core itself (`pytest -m ansible_core`: its CLI, module runner and plugin APIs;
# tests/unit/conftest.py marks them). The other unit tests are plain Python over module_utils, the same on every line,
# and run once, on .venv.
# A line whose ansible-core needs a newer Python than this machine's (2.20 and later need 3.12; Debian 12 has 3.11)
# runs in the Debian 13 controller container (Python 3.13, `scripts/lab.sh controller-image`), the repository
# mounted at its own path.
#   scripts/compat.sh            every release line
#   scripts/compat.sh 2.16       one
#   scripts/compat.sh --list     the release lines, one a line
#   scripts/compat.sh --playbook LINE NETWORK ARGS...
#                                ansible-playbook ARGS from that line's controller (its environment made as above),
#                                in the controller container on podman network NETWORK when the line needs it
#                                (tests/integration/test_compat.py converges a lab from the newest line)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The newest patch release of each line; keep in step with meta/runtime.yml.
declare -A CORE_RELEASES=([2.16]=2.16.19 [2.17]=2.17.14 [2.18]=2.18.19 [2.20]=2.20.10 [2.21]=2.21.5)
# The oldest controller Python of each line (its Requires-Python).
declare -A CORE_PYTHON=([2.16]=3.10 [2.17]=3.10 [2.18]=3.11 [2.20]=3.12 [2.21]=3.12)
# The lines that also run the ansible_core unit tests (~150 s each here): the oldest, where an API the collection
# uses may not exist yet, and the newest, where one may be deprecated or gone. The lines between run sanity (their own
# validate-modules, pylint and import rules): 2.17 and 2.18 lie between 2.16 and .venv's 2.19, which runs them in
# full, and 2.20 between 2.19 and 2.21.
declare -A UNIT_LINES=([2.16]=1 [2.21]=1)
if [[ ${1:-} == --list ]]; then
    printf '%s\n' "${!CORE_RELEASES[@]}" | sort -V
    exit 0
fi

# Make (or reuse) the line's virtual environment with this machine's python3; prints its directory.
line_venv() {
    local line=$1 release=${CORE_RELEASES[$1]} venv=$ROOT/.venv-compat/core-$1 wanted site main_site
    wanted=$( { echo "ansible-core==$release"; python3 --version; cat "$ROOT/tests/requirements-compat.txt"; } |
        sha256sum | cut -c1-64)
    if [[ "$(cat "$venv/.requirements.sha256" 2>/dev/null)" != "$wanted" ]]; then
        echo "compat: making $venv (ansible-core $release, $(python3 --version))" >&2
        rm -rf "$venv"
        python3 -m venv "$venv"
        "$venv/bin/pip" install -q --disable-pip-version-check "ansible-core==$release" \
            -r "$ROOT/tests/requirements-compat.txt" >&2
        echo "$wanted" >"$venv/.requirements.sha256"
    fi
    # The collections galaxy.yml depends on, as the project's .venv has them (the json callback the unit tests read
    # results through is ansible.posix's), where ansible-core looks for installed collections.
    site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    main_site=$(echo "$(realpath "$ROOT/.venv")"/lib/python3*/site-packages)
    for dependency in ansible/posix community/general community/crypto; do
        mkdir -p "$site/ansible_collections/${dependency%/*}"
        ln -sfn "$main_site/ansible_collections/$dependency" "$site/ansible_collections/$dependency"
    done
    echo "$venv"
}

# The line's tests: sanity, then the unit tests that exercise ansible-core. In the controller container, with the
# collection copy for ansible-test made on the host.
run_line() {
    local line=$1 release=${CORE_RELEASES[$1]} venv start
    venv=$(line_venv "$line")
    start=$SECONDS
    echo "compat: ansible-core $release: ansible-test sanity ($(python3 --version))"
    GPUFABRIC_VENV=$venv "$ROOT/scripts/sanity.sh"
    if [[ -n ${UNIT_LINES[$line]:-} ]]; then
        echo "compat: ansible-core $release: unit tests that exercise ansible-core"
        # A child shell: env.sh's settings for the line's environment stay out of this one.
        # shellcheck disable=SC2016  # expanded by the child shell
        GPUFABRIC_VENV=$venv bash -c 'cd "$1" && source scripts/env.sh && exec pytest -q -p no:cacheprovider -m ansible_core tests/unit' \
            compat "$ROOT"
    else
        echo "compat: ansible-core $release: sanity only (not in UNIT_LINES: the lines around it run the unit tests)"
    fi
    echo "compat: ansible-core $release passed in $((SECONDS - start)) s"
}

# pip's configuration on this host as read-only mounts: its configuration files and every local path they name (CA
# bundle, constraints, wheel directories and file:// indexes). ansible-test installs its sanity requirements with an
# environment of its own, so only configuration files reach that pip.
pip_config_mounts() {
    python3 -m pip config debug 2>/dev/null | python3 -c '
import os, re, sys
paths = set()
for line in sys.stdin:
    found = re.match(r"\s*(/\S+), exists: True$", line)
    if found:
        paths.add(found.group(1))
        continue
    for word in re.split(r"[\s=:\x27]+", line.replace("file://", " ")):
        if word.startswith("/") and os.path.exists(word):
            # A file:// index links its files relative to the index: ../../files/NAME.
            paths.add(os.path.dirname(word.rstrip("/")) if word.rstrip("/").endswith("/simple") else word)
for path in sorted(paths):
    print("-v", "%s:%s:ro" % (path, path))
'
}

# A command of this script (--here LINE, or --playbook-here LINE ARGS) in the Debian 13 controller container: the
# repository and the project's .venv (whose collections a line links) at their own paths, and this host's pip
# configuration, whose index the container reaches through the same network. PODMAN_OPTIONS adds options (a network).
in_controller() {
    local image venv_real
    image=$("$ROOT/scripts/lab.sh" controller-image)
    venv_real=$(realpath "$ROOT/.venv")
    # ansible-test's requirement venvs and pip's cache outlive the container: the next line (or run) on the same
    # Python reuses those whose requirements match, as the lines run on this host share ~/.ansible/test.
    mkdir -p "$ROOT/.cache/controller/ansible-test" "$ROOT/.cache/controller/pip"
    local mounts=(-v "$ROOT:$ROOT" -v "$ROOT/.cache/controller/ansible-test:/root/.ansible/test"
                  -v "$ROOT/.cache/controller/pip:/root/.cache/pip")
    [[ "$venv_real" == "$ROOT/.venv" ]] || mounts+=(-v "$venv_real:$venv_real:ro")
    # shellcheck disable=SC2046,SC2086  # options are separate words
    podman run --rm "${mounts[@]}" $(pip_config_mounts) ${PODMAN_OPTIONS:-} -w "$ROOT" \
        "$image" "$ROOT/scripts/compat.sh" "$@"
}

# A line's tests in the controller container; the copy ansible-test needs is made here, where the git metadata is.
run_line_in_controller() {
    local line=$1 copy
    copy=$(mktemp -d /tmp/gpufabric-compat.XXXXXX)
    # shellcheck disable=SC2064  # expand now: remove this very directory
    trap "rm -rf '$copy'" RETURN
    mkdir -p "$copy/ansible_collections/gpufabric/core"
    # shellcheck disable=SC2016  # expanded by the inner sh
    (cd "$ROOT" && git ls-files -co --exclude-standard -z |
        xargs -0 -r sh -c 'for f; do [ -e "$f" ] || [ -L "$f" ] && printf "%s\0" "$f"; done; exit 0' sh |
        tar --null -T - -cf -) | tar -C "$copy/ansible_collections/gpufabric/core" -xf -
    PODMAN_OPTIONS="-v $copy:$copy -e GPUFABRIC_SANITY_DIR=$copy -e GPUFABRIC_SANITY_PREPARED=1" \
        in_controller --here "$line"
}

# ansible-playbook ARGS from the line's environment, with the project's settings (scripts/env.sh).
run_playbook() {
    local line=$1 venv
    shift
    venv=$(line_venv "$line")
    export GPUFABRIC_VENV=$venv
    # shellcheck source=scripts/env.sh
    source "$ROOT/scripts/env.sh"
    cd "$ROOT"
    echo "compat: ansible-playbook from ansible-core ${CORE_RELEASES[$line]} ($(python3 --version))"
    ansible-playbook "$@"
}

python_at_least() {
    python3 -c 'import sys; sys.exit(sys.version_info[:2] < tuple(map(int, sys.argv[1].split("."))))' "$1"
}

case ${1:-} in
    --here) run_line "$2"; exit 0 ;;
    --playbook-here) shift; run_playbook "$@"; exit ;;
    --playbook)
        line=$2 network=$3
        shift 3
        [[ -n ${CORE_RELEASES[$line]:-} ]] || { echo "compat: no ansible-core release line '$line'" >&2; exit 2; }
        if python_at_least "${CORE_PYTHON[$line]}"; then
            run_playbook "$line" "$@"
        else
            PODMAN_OPTIONS="--network $network -e GPUFABRIC_LAB_NAME=${GPUFABRIC_LAB_NAME:-} -e ANSIBLE_FORCE_COLOR=false" \
                in_controller --playbook-here "$line" "$@"
        fi
        exit
        ;;
esac
lines=("$@")
((${#lines[@]})) || mapfile -t lines < <(printf '%s\n' "${!CORE_RELEASES[@]}" | sort -V)
for line in "${lines[@]}"; do
    [[ -n ${CORE_RELEASES[$line]:-} ]] || { echo "compat: no ansible-core release line '$line' (known: ${!CORE_RELEASES[*]})" >&2; exit 2; }
    if python_at_least "${CORE_PYTHON[$line]}"; then
        run_line "$line"
    else
        echo "compat: ansible-core ${CORE_RELEASES[$line]} needs Python ${CORE_PYTHON[$line]}: in the Debian 13 controller container"
        run_line_in_controller "$line"
    fi
done
