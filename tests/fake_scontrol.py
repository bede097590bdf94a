"""A stand-in for scontrol on a machine without Slurm, at the process boundary of gpufabric.core.slurm_node_state.

It prints a real captured `scontrol show node` (tests/fixtures/slurm, kept in a state file beside it) and applies
`scontrol update NodeName=N State=DRAIN|RESUME [Reason=...]` to it as slurmctld does: DRAIN adds the DRAIN flag
to the State line and sets `Reason=<reason> [root@<time>]` (one leading and one trailing double quote stripped, as
scontrol's update_node.c does), RESUME removes the flag and the reason line. Every call is logged. The Molecule
scenario `health` (its remediation half) runs the module against Debian's real slurmctld; this is for the module's own unit tests.
    install(directory, capture_text) -> the directory to put first on PATH
"""

import json
import os
import re
import sys
import time
from pathlib import Path


def install(directory, capture_text, fail_update=False):
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "scontrol-state.json").write_text(json.dumps({"text": capture_text, "calls": [],
                                                               "fail_update": fail_update}))
    script = directory / "scontrol"
    script.write_text("#!%s\nimport sys\nsys.path.insert(0, %r)\nimport fake_scontrol\n"
                      "sys.exit(fake_scontrol.main(%r, sys.argv[1:]))\n"
                      % (sys.executable, str(Path(__file__).resolve().parent), str(directory / "scontrol-state.json")))
    script.chmod(0o755)
    return directory


def calls(directory):
    return json.loads((Path(directory) / "scontrol-state.json").read_text())["calls"]


def _records(text):
    records, current = [], []
    for line in text.split("\n"):
        if line.startswith("NodeName=") and current:
            records.append(current)
            current = []
        current.append(line)
    records.append(current)
    return records


def _update(text, node, state, reason):
    out = []
    for record in _records(text):
        if not record[0].startswith("NodeName=%s " % node):
            out.append(record)
            continue
        lines = [line for line in record if not line.strip().startswith("Reason=")]
        for index, line in enumerate(lines):
            match = re.search(r"State=(\S+)", line)
            if match:
                flags = [flag for flag in match.group(1).split("+") if flag != "DRAIN"]
                new = "+".join(flags + (["DRAIN"] if state == "DRAIN" else []))
                lines[index] = line[:match.start(1)] + new + line[match.end(1):]
        if state == "DRAIN":
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
            at = next(i for i, line in enumerate(lines) if not line.strip()) if "" in lines else len(lines)
            lines.insert(at, "   Reason=%s [root@%s]" % (reason, stamp))
        out.append(lines)
    return "\n".join("\n".join(record) for record in out)


def main(state_file, argv):
    state = json.loads(Path(state_file).read_text())
    state["calls"].append(argv)
    Path(state_file).write_text(json.dumps(state))
    if argv[:2] == ["show", "node"]:
        sys.stdout.write(state["text"])
        return 0
    if argv[:1] == ["update"]:
        if state.get("fail_update"):
            sys.stderr.write("slurm_update error: Access/permission denied\n")
            return 1
        fields = dict(arg.split("=", 1) for arg in argv[1:])
        names = [record[0].split()[0].split("=", 1)[1] for record in _records(state["text"]) if record[0]]
        if fields.get("NodeName") not in names:
            sys.stderr.write("slurm_update error: Invalid node name specified\n")
            return 1
        reason = fields.get("Reason", "")
        reason = reason[1:] if reason.startswith('"') else reason
        reason = reason[:-1] if reason.endswith('"') else reason
        state["text"] = _update(state["text"], fields["NodeName"], fields["State"].upper(), reason)
        Path(state_file).write_text(json.dumps(state))
        return 0
    sys.stderr.write("fake scontrol: %s not supported\n" % " ".join(argv))
    return 2


if __name__ == "__main__":
    sys.exit(main(os.environ["FAKE_SCONTROL_STATE"], sys.argv[1:]))
