#!/usr/bin/env bash
# Every test, as one pytest session so that one summary line counts them all:
# unit tests, then ansible-lint (production profile), ansible-test sanity, ansible-doc, the changelog, the AWX
# checks and every Molecule scenario (tests/integration/). Extra arguments go to pytest.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$ROOT/scripts/setup.sh"
"$ROOT/scripts/lab.sh" image >/dev/null
# shellcheck source=scripts/env.sh
source "$ROOT/scripts/env.sh"
cd "$ROOT"
exec pytest -p no:cacheprovider -o console_output_style=count tests/unit tests/browser tests/integration "$@"
