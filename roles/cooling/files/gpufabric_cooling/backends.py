# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Sensor readers and fan writers: IPMI (ipmitool), Redfish (urllib), Linux hwmon, NVML / nvidia-smi.

Every failure raises BackendError with a sentence a person can act on (the BMC's completion code,
the HTTP status, the file that is missing); the controller turns it into fail-safe, never a crash.
"""

from __future__ import annotations

import base64
import ctypes
import glob
import json
import os
import shutil
import ssl
import subprocess
import urllib.error
import urllib.request

from .cooling_sensors import (
    SensorError,
    collection_members,
    parse_hwmon_temperature,
    parse_ipmitool_error,
    parse_ipmitool_sdr,
    parse_nvidia_smi_csv,
    parse_redfish_thermal,
    parse_redfish_thermal_metrics,
    select_ipmi_reading,
    select_redfish_temperature,
)
from .parse_common import ParseError


class BackendError(RuntimeError):
    """Reading a sensor or writing a fan duty failed."""


def _read_secret(path):
    if not path:
        return ""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()
    except OSError as exc:
        raise BackendError("cannot read the password file %s: %s" % (path, exc.strerror)) from None


class Ipmitool:
    """Runs ipmitool against one BMC, over LAN (lanplus) or the local KCS/SSIF device (open)."""

    def __init__(self, settings):
        self.settings = settings
        self.timeout = float(settings.get("timeout", 3))
        # ipmitool reads "-R 0" as "use the default" (about 20 s against a dead BMC), so at least one retry.
        self.retries = max(1, int(settings.get("retries", 1)))

    def base_command(self):
        ipmi = self.settings
        command = [ipmi.get("ipmitool", "ipmitool"), "-I", ipmi.get("interface", "lanplus")]
        if ipmi.get("interface", "lanplus") == "lanplus":
            command += ["-H", str(ipmi["host"]), "-p", str(ipmi.get("port", 623)), "-C", str(ipmi.get("cipher_suite", 3)),
                        "-N", str(int(max(1, self.timeout))), "-R", str(self.retries)]
            if ipmi.get("user"):
                command += ["-U", str(ipmi["user"])]
            if ipmi.get("password_file"):
                # -f keeps the password out of the process list, unlike -P.
                command += ["-f", str(ipmi["password_file"])]
        return command

    def run(self, args):
        command = self.base_command() + list(args)
        if shutil.which(command[0]) is None:
            raise BackendError("ipmitool is not installed (looked for %r)" % command[0])
        # ipmitool's own -N/-R bound a lanplus call; the subprocess timeout is the backstop for a hung process.
        limit = self.timeout * (self.retries + 1) + 5
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=limit, check=False)
        except subprocess.TimeoutExpired:
            raise BackendError("ipmitool %s: no answer within %.0f s" % (" ".join(args), limit)) from None
        if result.returncode != 0:
            error = parse_ipmitool_error(result.stderr or result.stdout)
            if error["completion_code"]:
                raise BackendError("BMC refused ipmitool %s: completion code %s (%s)"
                                   % (" ".join(args), error["completion_code"], error["message"]))
            raise BackendError("ipmitool %s failed (exit %d): %s" % (" ".join(args), result.returncode, error["message"]))
        return result.stdout

    def sdr(self):
        try:
            return parse_ipmitool_sdr(self.run(["sdr", "elist", "full"]))
        except ParseError as exc:
            raise BackendError(str(exc)) from None

    def raw(self, data):
        return self.run(["raw"] + list(data))


class Redfish:
    """A minimal Redfish client over urllib: basic authentication, TLS verification by default."""

    def __init__(self, settings):
        self.settings = settings
        self.base_url = settings["base_url"].rstrip("/")
        self.timeout = float(settings.get("timeout", 5))
        if settings.get("verify_tls", True):
            self.context = ssl.create_default_context(cafile=settings.get("ca_file") or None)
        else:
            # Many BMCs ship self-signed certificates; the operator chose not to verify (verify_tls: false).
            self.context = ssl._create_unverified_context()  # pylint: disable=protected-access
        self._chassis_uri = None
        self._thermal_uri = None

    def _request(self, method, path, body=None):
        url = path if path.startswith("http") else self.base_url + path
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        user = self.settings.get("user")
        if user:
            token = base64.b64encode(("%s:%s" % (user, _read_secret(self.settings.get("password_file")))).encode()).decode()
            request.add_header("Authorization", "Basic " + token)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout, context=self.context if url.startswith("https") else None) as response:
                payload = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read(500).decode("utf-8", "replace").strip()
            raise BackendError("Redfish %s %s: HTTP %d %s %s" % (method, url, exc.code, exc.reason, detail[:200])) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise BackendError("Redfish %s %s: %s" % (method, url, reason)) from None
        if not payload:
            return {}
        try:
            return json.loads(payload)
        except ValueError:
            raise BackendError("Redfish %s %s: the answer is not JSON" % (method, url)) from None

    def get(self, path):
        return self._request("GET", path)

    def patch(self, path, body):
        return self._request("PATCH", path, body)

    def members(self, path):
        try:
            return collection_members(self.get(path))
        except ParseError as exc:
            raise BackendError("%s: %s" % (path, exc)) from None

    def chassis_uri(self):
        if self._chassis_uri:
            return self._chassis_uri
        chassis = self.settings.get("chassis", "auto")
        if chassis != "auto":
            self._chassis_uri = chassis if chassis.startswith("/") else "/redfish/v1/Chassis/" + chassis
            return self._chassis_uri
        members = self.members("/redfish/v1/Chassis")
        if len(members) != 1:
            raise BackendError("Redfish has %d chassis (%s): set chassis to the one whose thermal readings to use"
                               % (len(members), ", ".join(members)))
        self._chassis_uri = members[0]
        return self._chassis_uri

    def temperatures(self):
        """All temperatures of the chassis: ThermalSubsystem/ThermalMetrics when served, else Thermal."""
        try:
            if self._thermal_uri is None:
                self._discover_thermal()
            kind, uri = self._thermal_uri
            doc = self.get(uri)
            parsed = parse_redfish_thermal_metrics(doc) if kind == "metrics" else parse_redfish_thermal(doc)
            return parsed["temperatures"]
        except ParseError as exc:
            self._thermal_uri = None
            raise BackendError(str(exc)) from None
        except BackendError:
            # The BMC may have rebooted into another firmware layout: find the resource again next time.
            self._thermal_uri = None
            raise

    def _discover_thermal(self):
        wanted = self.settings.get("thermal", "auto")
        chassis = self.get(self.chassis_uri())
        subsystem = (chassis.get("ThermalSubsystem") or {}).get("@odata.id")
        if subsystem and wanted in ("auto", "ThermalSubsystem"):
            metrics = (self.get(subsystem).get("ThermalMetrics") or {}).get("@odata.id")
            if metrics:
                self._thermal_uri = ("metrics", metrics)
                return
        thermal = (chassis.get("Thermal") or {}).get("@odata.id")
        if thermal and wanted in ("auto", "Thermal"):
            self._thermal_uri = ("thermal", thermal)
            return
        raise BackendError("Redfish chassis %s serves no %s resource" % (self.chassis_uri(), "thermal" if wanted == "auto" else wanted))


class Sensors:
    """Reads every configured sensor once per cycle; one bulk call per backend."""

    def __init__(self, config):
        self.config = config
        bmc = config.get("bmc") or {}
        self.ipmi = Ipmitool(bmc["ipmi"]) if bmc.get("ipmi") else None
        self.redfish = Redfish(bmc["redfish"]) if bmc.get("redfish") else None
        self.hwmon_root = config.get("hwmon_root", "/sys/class/hwmon")
        self.nvml = Nvml()

    def read(self, wanted):
        """Read the (backend, selector) pairs in wanted; returns {pair: value or BackendError}."""
        results = {}
        bulk = {}
        for backend in sorted({pair[0] for pair in wanted}):
            try:
                bulk[backend] = self._bulk(backend)
            except (BackendError, SensorError) as exc:
                bulk[backend] = BackendError(str(exc))
        for backend, selector in wanted:
            source = bulk[backend]
            if isinstance(source, BackendError):
                results[(backend, selector)] = source
                continue
            try:
                results[(backend, selector)] = source(selector)
            except (BackendError, SensorError, ParseError) as exc:
                results[(backend, selector)] = BackendError(str(exc))
        return results

    def _bulk(self, backend):
        """Return a function selector -> value backed by one read of the backend."""
        if backend == "ipmi":
            readings = self.ipmi.sdr()
            return lambda selector: select_ipmi_reading(readings, selector)
        if backend == "redfish":
            temperatures = self.redfish.temperatures()
            return lambda selector: select_redfish_temperature(temperatures, selector)
        if backend == "hwmon":
            return self._hwmon_temperature
        if backend in ("nvml", "nvidia_smi"):
            temps = self.nvml.temperatures() if backend == "nvml" else nvidia_smi_temperatures()
            return lambda selector: _gpu_temperature(temps, selector)
        raise BackendError("unknown sensor backend %r" % backend)

    def _hwmon_temperature(self, selector):
        path = resolve_hwmon(self.hwmon_root, selector)
        try:
            with open(path, encoding="ascii") as handle:
                return parse_hwmon_temperature(handle.read(), path)
        except OSError as exc:
            raise BackendError("cannot read %s: %s" % (path, exc.strerror)) from None


def resolve_hwmon(root, selector):
    """hwmon selectors: an absolute path, or "<chip name>/<file>" (e.g. "nct6798/temp2_input").

    hwmonN numbers change between boots; the chip name in hwmonN/name does not.
    """
    if selector.startswith("/"):
        return selector
    chip, filename = (selector.split("/", 1) + [""])[:2]
    found = []
    for directory in sorted(glob.glob(os.path.join(root, "hwmon*"))):
        try:
            with open(os.path.join(directory, "name"), encoding="ascii") as handle:
                if handle.read().strip() == chip:
                    found.append(directory)
        except OSError:
            continue
    if not found:
        raise BackendError("no hwmon chip named %r under %s" % (chip, root))
    if len(found) > 1:
        raise BackendError("several hwmon chips named %r under %s (%s): use an absolute path" % (chip, root, ", ".join(found)))
    return os.path.join(found[0], filename)


def _gpu_temperature(temps, selector):
    """selector: a GPU index, or "max" for the hottest GPU."""
    if not temps:
        raise BackendError("no GPU temperature available")
    if selector == "max":
        values = [t for t in temps.values() if t is not None]
        if len(values) != len(temps):
            raise BackendError("GPU temperature unreadable on GPU %s" % ", ".join(str(i) for i, t in temps.items() if t is None))
        return max(values)
    try:
        value = temps[int(selector)]
    except (ValueError, KeyError):
        raise BackendError("no GPU %r (GPUs: %s)" % (selector, ", ".join(str(i) for i in sorted(temps)))) from None
    if value is None:
        raise BackendError("GPU %s reports no temperature" % selector)
    return value


def nvidia_smi_temperatures():
    if shutil.which("nvidia-smi") is None:
        raise BackendError("nvidia-smi is not installed")
    fields = ["index", "temperature.gpu"]
    try:
        result = subprocess.run(["nvidia-smi", "--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits"],
                                capture_output=True, text=True, timeout=15, check=False)
    except subprocess.TimeoutExpired:
        raise BackendError("nvidia-smi did not answer within 15 s") from None
    if result.returncode != 0:
        raise BackendError("nvidia-smi failed (exit %d): %s" % (result.returncode, (result.stderr or result.stdout).strip()))
    try:
        rows = parse_nvidia_smi_csv(result.stdout, fields)
    except ParseError as exc:
        raise BackendError(str(exc)) from None
    return {int(row["index"]): row["temperature.gpu"] for row in rows}


class Nvml:
    """GPU temperatures through libnvidia-ml with ctypes: no process per cycle, no extra package."""

    _TEMPERATURE_GPU = 0  # NVML_TEMPERATURE_GPU

    def __init__(self):
        self.library = None

    def _load(self):
        if self.library is None:
            try:
                library = ctypes.CDLL("libnvidia-ml.so.1")
            except OSError:
                raise BackendError("libnvidia-ml.so.1 not found: is the NVIDIA driver installed?") from None
            self._check(library.nvmlInit_v2(), "nvmlInit")
            self.library = library
        return self.library

    @staticmethod
    def _check(code, call):
        if code != 0:
            raise BackendError("%s failed with NVML error %d" % (call, code))

    def temperatures(self):
        library = self._load()
        count = ctypes.c_uint()
        self._check(library.nvmlDeviceGetCount_v2(ctypes.byref(count)), "nvmlDeviceGetCount")
        temps = {}
        for index in range(count.value):
            handle = ctypes.c_void_p()
            temp = ctypes.c_uint()
            if library.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(handle)) != 0:
                temps[index] = None
                continue
            code = library.nvmlDeviceGetTemperature(handle, self._TEMPERATURE_GPU, ctypes.byref(temp))
            temps[index] = float(temp.value) if code == 0 else None
        return temps


class HwmonFan:
    """Writes pwmN (0-255) after switching pwmN_enable to 1 (manual); hands back the saved mode."""

    def __init__(self, root, target, saved_modes):
        self.path = resolve_hwmon(root, target)
        self.enable_path = self.path + "_enable"
        self.saved_modes = saved_modes

    def _write(self, path, value):
        try:
            with open(path, "w", encoding="ascii") as handle:
                handle.write("%s\n" % value)
        except OSError as exc:
            raise BackendError("cannot write %s to %s: %s" % (value, path, exc.strerror)) from None

    def _read(self, path):
        try:
            with open(path, encoding="ascii") as handle:
                return handle.read().strip()
        except OSError as exc:
            raise BackendError("cannot read %s: %s" % (path, exc.strerror)) from None

    def write(self, duty):
        if os.path.exists(self.enable_path):
            mode = self._read(self.enable_path)
            if mode != "1":
                # Remember the firmware's own mode once, so stopping can give the fans back to it.
                self.saved_modes.setdefault(self.enable_path, mode)
                self._write(self.enable_path, 1)
        self._write(self.path, int(round(duty * 255 / 100.0)))

    def handback(self):
        mode = self.saved_modes.get(self.enable_path)
        if mode is None or mode == "1":
            raise BackendError("%s: no automatic mode was saved to hand back to" % self.enable_path)
        self._write(self.enable_path, mode)


class IpmiRawFan:
    """Writes a duty with a vendor's raw IPMI commands (profile data from the role's vars)."""

    def __init__(self, ipmi, profile, zone):
        self.ipmi = ipmi
        self.profile = profile
        self.zone = zone
        self.zone_byte = profile["zones"][zone]
        self.manual = False

    def _command(self, template, duty=None):
        scaled = None if duty is None else int(round(duty * self.profile["duty_scale"] / 100.0))
        return [("0x%02x" % scaled) if byte == "{duty}" else self.zone_byte if byte == "{zone}" else byte for byte in template]

    def write(self, duty):
        if not self.manual:
            self.ipmi.raw(self._command(self.profile["manual"]))
            self.manual = True
        self.ipmi.raw(self._command(self.profile["set_duty"], duty))

    def handback(self):
        self.manual = False
        self.ipmi.raw(self._command(self.profile["handback"]))


class RedfishFan:
    """PATCHes a duty where a BMC exposes one (a Control resource or an OEM fan property)."""

    def __init__(self, redfish, target, body, handback_body):
        self.redfish = redfish
        self.target = target
        self.body = body or {"SetPoint": "{duty}"}
        self.handback_body = handback_body

    @staticmethod
    def _fill(value, duty):
        if value == "{duty}":
            return round(duty, 1)
        if isinstance(value, dict):
            return {key: RedfishFan._fill(item, duty) for key, item in value.items()}
        if isinstance(value, list):
            return [RedfishFan._fill(item, duty) for item in value]
        return value

    def write(self, duty):
        self.redfish.patch(self.target, self._fill(self.body, duty))

    def handback(self):
        if not self.handback_body:
            raise BackendError("no Redfish hand-back body configured for %s" % self.target)
        self.redfish.patch(self.target, self.handback_body)


def build_fan(group, config, sensors, saved_modes):
    backend = group["backend"]
    if backend == "hwmon":
        return HwmonFan(config.get("hwmon_root", "/sys/class/hwmon"), group["target"], saved_modes)
    if backend == "ipmi_raw":
        return IpmiRawFan(sensors.ipmi or Ipmitool(config["bmc"]["ipmi"]), config["ipmi_profile"], group["target"])
    if backend == "redfish":
        return RedfishFan(sensors.redfish or Redfish(config["bmc"]["redfish"]), group["target"], group.get("body"), group.get("handback_body"))
    raise BackendError("unknown fan backend %r" % backend)
