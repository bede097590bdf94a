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
import http.client
import json
import os
import shutil
import ssl
import subprocess
import urllib.error
import urllib.parse
import urllib.request

from ansible_collections.gpufabric.core.plugins.module_utils.cooling.sensors import (
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
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError


class BackendError(RuntimeError):
    """Reading a sensor or writing a fan duty failed."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


def _number(value, what, integer=False):
    """A configured number, or BackendError: the controller never turns "5s" into a crash."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not isinstance(value, int)):
        raise BackendError("%s must be a%s number, got %r" % (what, "n integer" if integer else "", value))
    return value


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
        self.timeout = float(_number(settings.get("timeout", 3), "ipmi timeout"))
        # ipmitool reads "-R 0" as "use the default" (about 20 s against a dead BMC), so at least one retry.
        self.retries = max(1, _number(settings.get("retries", 1), "ipmi retries", integer=True))

    def base_command(self):
        ipmi = self.settings
        command = [ipmi.get("ipmitool", "ipmitool"), "-I", ipmi.get("interface", "lanplus")]
        if ipmi.get("interface", "lanplus") == "lanplus":
            command += ["-H", str(ipmi["host"]), "-p", str(_number(ipmi.get("port", 623), "ipmi port", integer=True)),
                        "-C", str(_number(ipmi.get("cipher_suite", 3), "ipmi cipher_suite", integer=True)),
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


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Redirects are refused, not followed: the token or password would go wherever the Location points."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


def redfish_origin(base_url, allow_insecure_http=False):
    """Return (scheme, host, port) of a BMC's base URL, or raise BackendError saying what is wrong with it."""
    try:
        parts = urllib.parse.urlsplit(str(base_url))
        port = parts.port
    except ValueError as exc:
        raise BackendError("Redfish base_url %r is not a URL: %s" % (base_url, exc)) from None
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise BackendError("Redfish base_url %r must be https://HOST[:PORT]" % (base_url,))
    if parts.scheme == "http" and allow_insecure_http is not True:
        raise BackendError("Redfish base_url %r is plain http: credentials would cross the network in clear "
                           "(set allow_insecure_http: true for a lab BMC)" % (base_url,))
    if parts.username or parts.password or parts.query or parts.fragment or parts.path not in ("", "/"):
        raise BackendError("Redfish base_url %r must be only scheme, host and port (no path, user, query)" % (base_url,))
    return parts.scheme, parts.hostname.lower(), port or (443 if parts.scheme == "https" else 80)


class Redfish:
    """A minimal Redfish client over urllib: a session (X-Auth-Token), TLS verification by default.

    Credentials go to the configured BMC origin only: a path is taken relative to it, an absolute URL of
    another origin is refused, and redirects are never followed.
    """

    SESSIONS = "/redfish/v1/SessionService/Sessions"

    def __init__(self, settings):
        self.settings = settings
        self.origin = redfish_origin(settings["base_url"], settings.get("allow_insecure_http", False))
        self.base_url = str(settings["base_url"]).rstrip("/")
        self.timeout = _number(settings.get("timeout", 5), "redfish timeout")
        self.auth = settings.get("auth", "session")
        handlers = [_NoRedirect()]
        if self.origin[0] == "https":
            if settings.get("verify_tls", True):
                context = ssl.create_default_context(cafile=settings.get("ca_file") or None)
            else:
                # Many BMCs ship self-signed certificates; the operator chose not to verify (verify_tls: false).
                context = ssl._create_unverified_context()  # pylint: disable=protected-access
            handlers.append(urllib.request.HTTPSHandler(context=context))
        self.opener = urllib.request.build_opener(*handlers)
        self.token = None
        self.session_uri = None
        self._chassis_uri = None
        self._thermal_uri = None

    def url(self, path):
        """The absolute URL of path on the BMC; BackendError for a URL of another origin."""
        path = str(path)
        if path.startswith("/") and not path.startswith("//"):
            return self.base_url + path
        try:
            parts = urllib.parse.urlsplit(path)
            same = (parts.scheme, (parts.hostname or "").lower(), parts.port or (443 if parts.scheme == "https" else 80)) == self.origin
        except ValueError:
            same = False
        if not same:
            raise BackendError("Redfish: refusing %r, which is not on the BMC %s" % (path, self.base_url))
        return path

    def _send(self, method, path, body=None, headers=None, authenticate=True):
        """One HTTP exchange; returns (status, headers, decoded JSON or {})."""
        url = self.url(path)
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Accept", "application/json")
        request.add_header("OData-Version", "4.0")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        for key, value in (headers or {}).items():
            request.add_header(key, value)
        if authenticate and self.settings.get("user"):
            if self.auth == "basic":
                secret = "%s:%s" % (self.settings["user"], _read_secret(self.settings.get("password_file")))
                request.add_header("Authorization", "Basic " + base64.b64encode(secret.encode()).decode())
            else:
                request.add_header("X-Auth-Token", self.login())
        try:
            with self.opener.open(request, timeout=self.timeout) as response:
                payload = response.read(4 * 1024 * 1024)
                status, answer_headers = response.status, response.headers
        except urllib.error.HTTPError as exc:
            if 300 <= exc.code < 400:
                raise BackendError("Redfish %s %s: HTTP %d redirect to %s refused (credentials go to the configured BMC only)"
                                   % (method, url, exc.code, exc.headers.get("Location"))) from None
            detail = exc.read(500).decode("utf-8", "replace").strip()
            raise BackendError("Redfish %s %s: HTTP %d %s %s" % (method, url, exc.code, exc.reason, detail[:200]), status=exc.code) from None
        except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as exc:
            # HTTPException: a malformed status line or headers; ValueError: a URL urllib cannot use.
            reason = getattr(exc, "reason", None) or "%s: %s" % (type(exc).__name__, exc)
            raise BackendError("Redfish %s %s: %s" % (method, url, reason)) from None
        if not payload:
            return status, answer_headers, {}
        try:
            return status, answer_headers, json.loads(payload)
        except ValueError:
            raise BackendError("Redfish %s %s: the answer is not JSON" % (method, url)) from None

    def login(self):
        """Open a Redfish session once (POST SessionService/Sessions) and return its X-Auth-Token."""
        if self.token:
            return self.token
        body = {"UserName": self.settings["user"], "Password": _read_secret(self.settings.get("password_file"))}
        unused_status, headers, unused_doc = self._send("POST", self.SESSIONS, body, authenticate=False)
        token = headers.get("X-Auth-Token")
        if not token:
            raise BackendError("Redfish POST %s%s: the BMC opened no session (no X-Auth-Token); set auth: basic "
                               "for a BMC without SessionService" % (self.base_url, self.SESSIONS))
        location = headers.get("Location")
        self.session_uri = None
        if location:
            try:
                self.session_uri = self.url(location)
            except BackendError:
                self.session_uri = None  # not ours to DELETE: the token goes to the configured origin only
        self.token = token
        return token

    def logout(self):
        """DELETE the session if one was opened; returns what went wrong or None, never raises (called on exit)."""
        token, uri = self.token, self.session_uri
        self.token = self.session_uri = None
        if not token:
            return None
        if not uri:
            return "the BMC gave no session URI to delete"
        try:
            self._send("DELETE", uri, headers={"X-Auth-Token": token}, authenticate=False)
        except BackendError as exc:
            return str(exc)
        return None

    def _request(self, method, path, body=None, headers=None):
        try:
            return self._send(method, path, body, headers)
        except BackendError as exc:
            if exc.status == 401 and self.token:
                # The BMC dropped the session (reboot, idle timeout): log in again once.
                self.token = None
                return self._send(method, path, body, headers)
            raise

    def get(self, path):
        return self._request("GET", path)[2]

    def patch(self, path, body):
        """PATCH with If-Match on the resource's ETag, when it has one, so a concurrent change is not overwritten."""
        unused_status, headers, doc = self._request("GET", path)
        etag = headers.get("ETag") or (doc.get("@odata.etag") if isinstance(doc, dict) else None)
        return self._request("PATCH", path, body, {"If-Match": etag} if etag else None)[2]

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


def hwmon_path_problem(root, path):
    """Why path may not be used as an hwmon file under root (None when it may): no "..", nothing outside root, no /proc."""
    root = os.path.normpath(str(root))
    if not os.path.isabs(root) or root == "/proc" or root.startswith("/proc/"):
        return "the hwmon root %r must be an absolute directory outside /proc" % root
    if ".." in str(path).split("/") or not os.path.normpath(str(path)).startswith(root.rstrip("/") + "/"):
        return "%r is not a file under the hwmon root %s" % (path, root)
    return None


def resolve_hwmon(root, selector):
    """hwmon selectors: an absolute path under root, or "<chip name>/<file>" (e.g. "nct6798/temp2_input").

    hwmonN numbers change between boots; the chip name in hwmonN/name does not. Whatever the selector, the
    result stays under root (default /sys/class/hwmon): a fan target can never write to /proc or elsewhere.
    """
    if selector.startswith("/"):
        path = selector
    else:
        chip, filename = (selector.split("/", 1) + [""])[:2]
        if chip in ("", ".", "..") or filename in ("", ".", "..") or "/" in filename:
            raise BackendError("hwmon selector %r must be <chip name>/<file> or an absolute path" % selector)
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
        path = os.path.join(found[0], filename)
    problem = hwmon_path_problem(root, path)
    if problem:
        raise BackendError(problem)
    return path


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
        # Bounded here too: a pwm file takes 0-255, whatever duty reached this point.
        self._write(self.path, int(round(max(0.0, min(100.0, float(duty))) * 255 / 100.0)))

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

    def command(self, template, duty=None):
        scaled = None if duty is None else int(round(duty * self.profile["duty_scale"] / 100.0))
        return [("0x%02x" % scaled) if byte == "{duty}" else self.zone_byte if byte == "{zone}" else byte for byte in template]

    def write(self, duty):
        if not self.manual:
            self.ipmi.raw(self.command(self.profile["manual"]))
            self.manual = True
        self.ipmi.raw(self.command(self.profile["set_duty"], duty))

    def handback(self):
        self.manual = False
        self.ipmi.raw(self.command(self.profile["handback"]))


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

    def body_for(self, duty):
        return self._fill(self.body, duty)

    def write(self, duty):
        self.redfish.patch(self.target, self.body_for(duty))

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
