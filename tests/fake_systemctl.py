"""A stand-in for systemctl and one unit, its state in a JSON file (this machine runs no systemd).

Called in-process as the run function module_utils take (argv to (rc, stdout, stderr)), or as an executable
`systemctl` on PATH for the module run by Ansible (install()). It keeps what systemctl reports and what matters to
the controller: whether the unit is enabled and active, the unit text systemd has loaded (read at daemon-reload, or
on demand for a unit never loaded) and the text the running service was started from, and every call made. The
Molecule scenario drives the same code against the containers' real systemd.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
QUERIES = ("is-enabled", "is-active")


class FakeSystemd:
    def __init__(self, state_file, unit_file, enabled=False, active=False, failing=()):
        self.state_file, self.unit_file = Path(state_file), Path(unit_file)
        if not self.state_file.exists():
            self.save({"enabled": enabled, "active": active, "loaded": None, "running": None,
                       "failing": list(failing), "calls": []})

    def state(self):
        return json.loads(self.state_file.read_text())

    def save(self, state):
        self.state_file.write_text(json.dumps(state))

    def actions(self):
        """The calls that are not queries."""
        return [call for call in self.state()["calls"] if call.split()[0] not in QUERIES]

    def _unit_text(self):
        return self.unit_file.read_text() if self.unit_file.exists() else None

    def __call__(self, argv):
        assert argv[0] == "systemctl", argv
        state = self.state()
        state["calls"].append(" ".join(argv[1:]))
        verb, unit = argv[1], argv[-1]
        answer = (0, "", "")
        if verb == "is-enabled":
            answer = (0 if state["enabled"] else 1), "", ""
        elif verb == "is-active":
            answer = (0 if state["active"] else 3), "", ""
        elif verb in state["failing"]:
            answer = 1, "", "Job for %s failed because the control process exited with error code." % unit
        elif verb in ("daemon-reload", "daemon-reexec"):
            state["loaded"] = self._unit_text()
        elif self._unit_text() is None:
            answer = (5 if verb in ("stop", "start", "restart") else 1), "", "Unit %s not found." % unit
        elif verb in ("enable", "disable"):
            state["enabled"] = verb == "enable"
        elif verb in ("start", "restart"):
            # systemd reads a unit it has never loaded on demand; a changed one only at daemon-reload.
            state["loaded"] = state["loaded"] if state["loaded"] is not None else self._unit_text()
            if verb == "restart" or not state["active"]:
                state["running"] = state["loaded"]
            state["active"] = True
        elif verb == "stop":
            state["active"] = False
        elif verb == "reload":
            # systemd refuses to reload a unit that is not running.
            answer = (0, "", "") if state["active"] else (1, "", "Unit %s cannot be reloaded because it is inactive." % unit)
        else:
            answer = 1, "", "Unknown command verb %s." % verb
        self.save(state)
        return answer

    def install(self, directory):
        """Write an executable `systemctl` into directory that answers from this state; returns the directory."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        script = directory / "systemctl"
        script.write_text(
            "#!%s\nimport sys\nsys.path.insert(0, %r)\nfrom fake_systemctl import FakeSystemd\n"
            "rc, out, err = FakeSystemd(%r, %r)(['systemctl'] + sys.argv[1:])\n"
            "sys.stdout.write(out)\nsys.stderr.write(err)\nsys.exit(rc)\n"
            % (sys.executable, str(HERE), str(self.state_file), str(self.unit_file)))
        os.chmod(script, 0o755)
        return directory
