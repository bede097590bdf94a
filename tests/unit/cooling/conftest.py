"""Build the controller package the way the cooling role installs it, and start real BMC simulators.

The package is assembled in a temporary directory from roles/cooling/files/gpufabric_cooling and
the module_utils listed in roles/cooling/vars/main.yml, laid out by host_program as the cooling_config
module lays them out on hosts. ipmi_sim (OpenIPMI) and sushy-static are started when installed; tests needing them skip
with the reason otherwise.
"""

import importlib
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufabric.core.plugins.module_utils.hostio import host_program as hp

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "cooling"
HERE = Path(__file__).resolve().parent


def role_vars():
    return yaml.safe_load((ROLE / "vars" / "main.yml").read_text())


@pytest.fixture(scope="session")
def cooling_pkg(tmp_path_factory):
    """The installed controller package, imported from a copy laid out like /usr/local/lib/gpufabric-cooling."""
    lib = tmp_path_factory.mktemp("lib")
    variables = role_vars()
    program = {name: (ROLE / "files" / "gpufabric_cooling" / name).read_text() for name in variables["__cooling_package_files"]}
    module_utils = {name: (ROOT / "plugins" / "module_utils" / name).read_text() for name in variables["__cooling_module_utils"]}
    for entry in hp.entries(str(lib), module_utils, program, "gpufabric_cooling"):
        Path(entry["path"]).parent.mkdir(parents=True, exist_ok=True)
        Path(entry["path"]).write_text(entry["content"])
    sys.path.insert(0, str(lib))
    try:
        # The module_utils resolve to the collection's own (the same files, already imported by the test session).
        modules = {name: importlib.import_module("gpufabric_cooling." + name) for name in ("backends", "controller", "failsafe")}
        modules.update({"cooling_" + name: importlib.import_module(hp.DOTTED + ".cooling." + name)
                        for name in ("curve", "policy", "sensors")})
        modules["lib"] = lib
        yield modules
    finally:
        sys.path.remove(str(lib))


def free_port(kind=socket.SOCK_STREAM):
    with socket.socket(socket.AF_INET, kind) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _read_cooling_fixture(name):
    text = (HERE / "fixtures" / name).read_bytes().decode("utf-8", errors="replace")
    return text.split("\n", 1)[1] if text.startswith("# source:") else text


@pytest.fixture
def cooling_fixture():
    """Read a capture kept in tests/unit/cooling/fixtures, without its line-1 provenance header.

    These outputs (ipmitool, Redfish, nvidia-smi) are not in the shared fixture set; each file's
    first line says where it was captured or published.
    """
    return _read_cooling_fixture


IPMI_USER, IPMI_PASSWORD = "admin", "lab-secret"


@pytest.fixture
def ipmi_sim(tmp_path):
    """A real OpenIPMI ipmi_sim BMC on 127.0.0.1 with CPU/inlet temperature and fan sensors read from files."""
    if not shutil.which("ipmi_sim") or not shutil.which("ipmitool"):
        pytest.skip("ipmi_sim/ipmitool not installed (Debian packages openipmi, ipmitool)")
    port = free_port(socket.SOCK_DGRAM)
    values = {"cpu_temp": tmp_path / "cpu_temp", "inlet_temp": tmp_path / "inlet_temp", "fan1": tmp_path / "fan1"}
    values["cpu_temp"].write_text("45\n")
    values["inlet_temp"].write_text("30\n")
    values["fan1"].write_text("60\n")
    template = (ROLE.parent.parent / "molecule" / "cooling" / "files" / "bmc.emu").read_text()
    (tmp_path / "bmc.emu").write_text(template.replace("/var/lib/gpufabric-bmc", str(tmp_path)))
    lan = (ROLE.parent.parent / "molecule" / "cooling" / "files" / "lan.conf").read_text()
    (tmp_path / "lan.conf").write_text(lan.replace("0.0.0.0 623", "127.0.0.1 %d" % port).replace("LAB_PASSWORD", IPMI_PASSWORD))
    (tmp_path / "state").mkdir()
    process = subprocess.Popen(
        ["ipmi_sim", "-n", "-c", str(tmp_path / "lan.conf"), "-f", str(tmp_path / "bmc.emu"), "-s", str(tmp_path / "state")],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    password_file = tmp_path / "ipmi.pass"
    password_file.write_text(IPMI_PASSWORD + "\n")
    os.chmod(password_file, 0o600)
    settings = {"host": "127.0.0.1", "port": port, "user": IPMI_USER, "password_file": str(password_file),
                "interface": "lanplus", "cipher_suite": 3, "timeout": 1, "retries": 1}
    base = ["ipmitool", "-I", "lanplus", "-C", "3", "-H", "127.0.0.1", "-p", str(port), "-U", IPMI_USER, "-f", str(password_file)]
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        probe = subprocess.run(base + ["-N", "1", "-R", "1", "sdr", "elist", "full"], capture_output=True, text=True, check=False)
        if probe.returncode == 0 and "degrees C" in probe.stdout:
            break
        time.sleep(0.5)
    else:
        process.kill()
        pytest.fail("ipmi_sim did not answer on port %d" % port)
    yield {"settings": settings, "values": values, "process": process, "ipmitool": base}
    if process.poll() is None:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def sushy_static(tmp_path):
    """sushy-static serving a copy of the scenario's Redfish mockup (Thermal, ThermalEquipment, LeakDetection)."""
    binary = Path(sys.executable).parent / "sushy-static"
    if not binary.exists():
        pytest.skip("sushy-tools not installed in this Python environment")
    mockup = tmp_path / "mockup"
    shutil.copytree(ROOT / "molecule" / "cooling" / "files" / "redfish-mockup", mockup)
    port = free_port()
    # sushy-static prints each request's headers and body: the log shows what a Redfish fan write sent.
    log = tmp_path / "sushy-static.log"
    with open(log, "w", encoding="utf-8") as output:
        process = subprocess.Popen([str(binary), "-m", str(mockup), "-i", "127.0.0.1", "-p", str(port)],
                                   stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                                   env=dict(os.environ, PYTHONUNBUFFERED="1"))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            time.sleep(0.3)
    else:
        process.kill()
        pytest.fail("sushy-static did not listen on port %d" % port)
    yield {"url": "http://127.0.0.1:%d" % port, "mockup": mockup, "process": process, "log": log}
    process.terminate()
    process.wait(timeout=10)
