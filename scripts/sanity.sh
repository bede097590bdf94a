#!/usr/bin/env bash
# Run `ansible-test sanity` (and optionally `ansible-test units`) on a copy of the collection laid out where
# ansible-test needs it: .build/ansible_collections/gpufabric/core. Extra arguments go to ansible-test sanity,
# e.g. `scripts/sanity.sh plugins/modules/topology_facts.py` or `scripts/sanity.sh --test validate-modules`.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/env.sh
source "$ROOT/scripts/env.sh"
# Outside the repository: inside it, ansible-test would ask git for the file list and find the copy ignored.
# A directory of its own per run, so that runs side by side do not delete each other's copy.
if [[ -n "${GPUFABRIC_SANITY_DIR:-}" ]]; then
    base=$GPUFABRIC_SANITY_DIR
else
    base=$(mktemp -d /tmp/gpufabric-ansible-test.XXXXXX)
    # shellcheck disable=SC2064  # expand now: remove this very directory
    trap "rm -rf '$base'" EXIT
fi
DEST=$base/ansible_collections/gpufabric/core
PYTHON_VERSION=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')

# ansible-test downloads a pip bootstrap script from a host this machine cannot reach; this stand-in runs the pip
# that the project's virtual environment already has.
stand_in_dir=$HOME/.ansible/test/cache
mkdir -p "$stand_in_dir"
ansible_test_dir=$(python3 -c 'import ansible_test, os; print(os.path.dirname(ansible_test.__file__))')
grep -hoE "pip='[0-9.]+'" "$ansible_test_dir/_internal/python_requirements.py" | grep -oE '[0-9.]+[0-9]' |
while read -r version; do
    cat >"$stand_in_dir/get_pip_${version//./_}.py" <<PY
# Stand-in for get-pip.py written by gpufabric.core scripts/sanity.sh: installs with the pip of $VENV.
import sys
sys.path.insert(0, "$(python3 -c 'import pip, os; print(os.path.dirname(os.path.dirname(pip.__file__)))')")
import runpy
# get-pip.py options that pip itself does not know.
sys.argv = [sys.argv[0], "install"] + [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
runpy.run_module("pip", run_name="__main__", alter_sys=True)
PY
done

# GPUFABRIC_SANITY_PREPARED=1: the caller made the copy already (scripts/compat.sh, on the host, for a line that runs
# in a container without the repository's git metadata).
if [[ "${GPUFABRIC_SANITY_PREPARED:-0}" != 1 ]]; then
    rm -rf "$DEST"
    mkdir -p "$DEST"
    # Tracked files deleted in the working tree are left out (tar would stop on them).
    # shellcheck disable=SC2016  # expanded by the inner sh
    (cd "$ROOT" && git ls-files -co --exclude-standard -z |
        xargs -0 -r sh -c 'for f; do [ -e "$f" ] || [ -L "$f" ] && printf "%s\0" "$f"; done; exit 0' sh |
        tar --null -T - -cf -) | tar -C "$DEST" -xf -
fi
cd "$DEST"
ansible-test sanity --local --python "$PYTHON_VERSION" --color no "$@"
