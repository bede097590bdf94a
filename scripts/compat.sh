#!/usr/bin/env bash
# The collection against every ansible-core release that meta/runtime.yml declares: for each release line below,
# a virtual environment of its own (.venv-compat/core-X.Y, made once and reused while its pins are unchanged) runs
# `ansible-test sanity` and the unit tests. The newest line is the project's own .venv, tested by scripts/test.sh.
#   scripts/compat.sh            every release line
#   scripts/compat.sh 2.16       one
#   scripts/compat.sh --list     the release lines, one a line
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The newest patch release of each line that runs on this controller's Python; keep in step with meta/runtime.yml.
declare -A CORE_RELEASES=([2.16]=2.16.19 [2.17]=2.17.14 [2.18]=2.18.19)
if [[ ${1:-} == --list ]]; then
    printf '%s\n' "${!CORE_RELEASES[@]}" | sort -V
    exit 0
fi
lines=("$@")
((${#lines[@]})) || mapfile -t lines < <(printf '%s\n' "${!CORE_RELEASES[@]}" | sort -V)

for line in "${lines[@]}"; do
    release=${CORE_RELEASES[$line]:-}
    [[ -n $release ]] || { echo "compat: no ansible-core release line '$line' (known: ${!CORE_RELEASES[*]})" >&2; exit 2; }
    venv=$ROOT/.venv-compat/core-$line
    wanted=$( { echo "ansible-core==$release"; cat "$ROOT/tests/requirements-compat.txt"; } | sha256sum | cut -c1-64)
    if [[ "$(cat "$venv/.requirements.sha256" 2>/dev/null)" != "$wanted" ]]; then
        echo "compat: making $venv (ansible-core $release)"
        rm -rf "$venv"
        python3 -m venv "$venv"
        "$venv/bin/pip" install -q --disable-pip-version-check "ansible-core==$release" -r "$ROOT/tests/requirements-compat.txt"
        echo "$wanted" >"$venv/.requirements.sha256"
    fi
    # The collections galaxy.yml depends on, as the project's .venv has them (the json callback the unit tests read
    # results through is ansible.posix's), where ansible-core looks for installed collections.
    site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    main_site=$("$ROOT/.venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    for dependency in ansible/posix community/general community/crypto; do
        mkdir -p "$site/ansible_collections/${dependency%/*}"
        ln -sfn "$main_site/ansible_collections/$dependency" "$site/ansible_collections/$dependency"
    done
    start=$SECONDS
    echo "compat: ansible-core $release: ansible-test sanity"
    GPUFABRIC_VENV=$venv "$ROOT/scripts/sanity.sh"
    echo "compat: ansible-core $release: unit tests"
    (
        export GPUFABRIC_VENV=$venv
        # shellcheck source=scripts/env.sh
        source "$ROOT/scripts/env.sh"
        cd "$ROOT"
        pytest -q -p no:cacheprovider tests/unit
    )
    echo "compat: ansible-core $release passed in $((SECONDS - start)) s"
done
