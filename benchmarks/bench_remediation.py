"""The remediation loop's two targets, measured in the Molecule scenario `health`'s lab: a rail cut on node2 ->
the node drained in Slurm (target: at most 60 s), the cable back -> the node in service again, re-verified (target:
at most 3 min). Three runs, median and each run printed; a figure, not a test.

What the clock covers: from the cable pulled (leaf-b's swp2 down) to `scontrol show node` showing the drain (the
sampler, Prometheus's scrape and the health rules' `for:`, Alertmanager's grouping and webhook, ansible-rulebook, the
playbook, the lock, scontrol); from the cable back to the node IDLE (the alert resolved, Alertmanager's group
interval, the playbook, the action window of the lab - 20 s from the drain -, the verify role's sweep over the rail,
the resume). The lab's intervals: molecule/health/molecule.yml.
    python3 benchmarks/bench_remediation.py     (scripts/bench.sh, `make bench`, runs it with the others)
"""

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Molecule keeps the scenario's state here, so that this script finds the lab's addresses and inventory.
os.environ["MOLECULE_EPHEMERAL_DIRECTORY"] = str(ROOT / ".cache" / "bench-remediation")
os.environ["MOLECULE_INVENTORY_FILE"] = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "inventory",
                                                     "ansible_inventory.yml")
sys.path.insert(0, str(ROOT / "molecule" / "health" / "tests"))

import remediation_lab as lab  # noqa: E402  pylint: disable=wrong-import-position

HOST, RAIL = "health-node2", "rail1"
RUNS = 3
PORT = 15380  # molecule.yml: remediation_webhook_port, where Alertmanager posts


def molecule(*args):
    result = subprocess.run(["molecule", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        sys.stderr.write(result.stdout[-4000:] + result.stderr[-4000:])
        raise SystemExit("molecule %s failed (%d)" % (" ".join(args), result.returncode))


def one_run(number):
    node = lab.NODES[HOST][0]
    started = time.monotonic()
    lab.cable(HOST, RAIL, up=False)
    lab.poll("%s drained" % node, lambda: lab.nodes()[node]["drained"], 300, interval=0.5)
    drained = time.monotonic() - started
    started = time.monotonic()
    lab.cable(HOST, RAIL, up=True)
    lab.poll("%s back in service" % node, lambda: lab.nodes()[node]["state"] == "IDLE", 600, interval=0.5)
    back = time.monotonic() - started
    print("run %d: fault -> drained %.1f s, fault removed -> back in service %.1f s" % (number, drained, back),
          flush=True)
    lab.poll("no alert left for %s" % HOST, lambda: not lab.active_alerts(host=HOST, alertname="GpufabricPortDown"), 60)
    return drained, back


def main():
    os.environ.setdefault("ANSIBLE_FORCE_COLOR", "false")
    started = time.monotonic()
    book = None
    try:
        molecule("converge", "-s", "health")
        book = lab.Rulebook(PORT, str(lab.LAB / "rulebook-bench.log")).start()
        results = [one_run(number) for number in range(1, RUNS + 1)]
        drained = statistics.median(result[0] for result in results)
        back = statistics.median(result[1] for result in results)
        print("median of %d: fault -> drained %.1f s (target 60 s, %.2f of it); fault removed -> back in service "
              "%.1f s (target 180 s, %.2f of it)" % (RUNS, drained, drained / 60, back, back / 180))
    finally:
        if book:
            book.stop()
        molecule("destroy", "-s", "health")
        print("bench_remediation: %.0f s in all (the lab's set-up included)" % (time.monotonic() - started))


if __name__ == "__main__":
    main()
