# shellcheck shell=bash
# Sourced by the project's scripts: the project's virtual environment and collection path, whatever the caller's
# working directory.
ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
# GPUFABRIC_VENV selects another environment (scripts/compat.sh: one per ansible-core release).
VENV=${GPUFABRIC_VENV:-$ROOT/.venv}
export PATH=$VENV/bin:$PATH
export ANSIBLE_CONFIG=$ROOT/ansible.cfg
export ANSIBLE_COLLECTIONS_PATH=$ROOT/.build/collections
export ANSIBLE_ROLES_PATH=$ROOT/roles
# The collection is found through this link, so that the working tree is what runs.
if [[ ! -e $ROOT/.build/collections/ansible_collections/gpufabric/core ]]; then
    mkdir -p "$ROOT/.build/collections/ansible_collections/gpufabric"
    ln -sfn "$ROOT" "$ROOT/.build/collections/ansible_collections/gpufabric/core"
fi
# The fact cache of the lab in use (scripts/lab.sh removes it with the lab): labs reuse host names.
export ANSIBLE_CACHE_PLUGIN_CONNECTION=$ROOT/.cache/facts/${GPUFABRIC_LAB_NAME:-gpufabric-lab}
