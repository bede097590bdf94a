"""Helpers for the tests that drive the project's own tools (ansible-lint, ansible-test, Molecule, AWX checks)."""

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOG_DIR = ROOT / ".cache" / "test-logs"
# The Molecule scenario on QEMU VMs (scripts/vmlab.sh), whose image and snapshot scripts/test.sh builds in the
# background (tests/conftest.py runs it last on its worker).
VM_SCENARIOS = {"kernel"}


def run_logged(name, argv, timeout, env=None, cwd=ROOT):
    """Run argv, keep its full output in .cache/test-logs/<name>.log, and return (returncode, output)."""
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    merged_env = dict(os.environ, **(env or {}))
    proc = subprocess.run(argv, cwd=cwd, env=merged_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=timeout, check=False)
    (LOG_DIR / f"{name}.log").write_text(proc.stdout)
    return proc.returncode, proc.stdout


def tail(text, lines=60):
    return "\n".join(text.splitlines()[-lines:])
