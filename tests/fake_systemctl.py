"""A stand-in for systemctl and the units of one directory, their state in a JSON file (this machine runs no systemd).

Called in-process as the run function module_utils take (argv to (rc, stdout, stderr)), or as an executable
`systemctl` on PATH for the module run by Ansible (install()). It keeps what systemctl reports and what matters to
the controller: whether each unit is enabled and active, the unit text systemd has loaded (read at daemon-reload, or
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
    """systemd with the units whose files lie in unit_file's directory; unit_file's unit is the main one, whose
    state state() shows at its top level (enabled, active, loaded, running) beside calls and failing."""

    def __init__(self, state_file, unit_file, enabled=False, active=False, failing=()):
        self.state_file, self.unit_file = Path(state_file), Path(unit_file)
        self.main = self.unit_file.name
        if not self.state_file.exists():
            self.save({"units": {self.main: self._unit_state(enabled, active)}, "failing": list(failing),
                       "calls": []})

    @staticmethod
    def _unit_state(enabled=False, active=False):
        return {"enabled": enabled, "active": active, "loaded": None, "running": None}

    def state(self):
        state = json.loads(self.state_file.read_text())
        return dict(state["units"].get(self.main, self._unit_state()), calls=state["calls"],
                    failing=state["failing"], units=state["units"])

    def unit(self, name):
        """The state of one unit (enabled, active, loaded, running)."""
        return self.state()["units"].get(name, self._unit_state())

    def save(self, state):
        self.state_file.write_text(json.dumps(state))

    def actions(self):
        """The calls that are not queries."""
        return [call for call in self.state()["calls"] if call.split()[0] not in QUERIES]

    def _unit_text(self, name):
        path = self.unit_file.parent / name
        return path.read_text() if path.exists() else None

    def __call__(self, argv):
        assert argv[0] == "systemctl", argv
        state = json.loads(self.state_file.read_text())
        state["calls"].append(" ".join(argv[1:]))
        verb, name = argv[1], argv[-1]
        unit = state["units"].setdefault(name, self._unit_state())
        answer = (0, "", "")
        if verb == "is-enabled":
            answer = (0 if unit["enabled"] else 1), "", ""
        elif verb == "is-active":
            answer = (0 if unit["active"] else 3), "", ""
        elif verb in state["failing"]:
            answer = 1, "", "Job for %s failed because the control process exited with error code." % name
        elif verb in ("daemon-reload", "daemon-reexec"):
            del state["units"][name]
            for known, other in state["units"].items():
                other["loaded"] = self._unit_text(known)
        elif verb == "reset-failed":
            pass
        elif verb == "show":
            # Only what the collection asks: -p NAME --value UNIT.
            answer = 0, ("n/a\n" if unit["active"] else "\n"), ""
        elif self._unit_text(name) is None:
            answer = (5 if verb in ("stop", "start", "restart") else 1), "", "Unit %s not found." % name
        elif verb in ("enable", "disable"):
            unit["enabled"] = verb == "enable"
        elif verb in ("start", "restart"):
            # systemd reads a unit it has never loaded on demand; a changed one only at daemon-reload.
            unit["loaded"] = unit["loaded"] if unit["loaded"] is not None else self._unit_text(name)
            if verb == "restart" or not unit["active"]:
                unit["running"] = unit["loaded"]
            unit["active"] = True
        elif verb == "stop":
            unit["active"] = False
        elif verb == "reload":
            # systemd refuses to reload a unit that is not running.
            answer = (0, "", "") if unit["active"] else (1, "", "Unit %s cannot be reloaded because it is inactive." % name)
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
