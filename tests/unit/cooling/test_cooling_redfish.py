"""The Redfish client: a session (X-Auth-Token), credentials to the configured BMC only, If-Match on PATCH.

sushy-tools 2.2.0 (installed here) has no SessionService and sends no ETag (checked: no "SessionService" or
"X-Auth-Token" in its source), so the session, redirect and ETag cases run against a small Redfish server
written here with http.server: a real HTTP peer on 127.0.0.1 that records what it received. sushy-emulator
is used for what it does serve: a BMC without sessions must get a clear error, not a silent fallback.
"""

import json
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

TOKEN = "0f6e2c8a-lab-token"


class RecordingServer:
    """A Redfish-shaped server: SessionService, one chassis with a Control resource that has an ETag."""

    def __init__(self, routes=None):
        self.requests = []
        self.routes = routes or {}
        self.etag = '"W/etag-1"'
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self, status, doc=None, headers=None):
                body = json.dumps(doc).encode() if doc is not None else b""
                self.send_response(status)
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                outer.requests.append({"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body})
                route = outer.routes.get((self.command, self.path))
                if route:
                    return self._answer(*route)
                if self.command == "POST" and self.path == "/redfish/v1/SessionService/Sessions":
                    sent = json.loads(body)
                    if sent != {"UserName": "admin", "Password": "lab-secret"}:
                        return self._answer(401, {"error": "bad credentials"})
                    return self._answer(201, {"Id": "1"}, {"X-Auth-Token": TOKEN, "Location": "/redfish/v1/SessionService/Sessions/1"})
                if self.headers.get("X-Auth-Token") != TOKEN:
                    return self._answer(401, {"error": "no session"})
                if self.command == "DELETE":
                    return self._answer(204)
                if self.path == "/redfish/v1/Chassis":
                    return self._answer(200, {"Members": [{"@odata.id": "/redfish/v1/Chassis/1"}]})
                if self.path == "/redfish/v1/Chassis/1/Controls/FanDuty":
                    if self.command == "PATCH" and self.headers.get("If-Match") != outer.etag:
                        return self._answer(412, {"error": "precondition failed"})
                    return self._answer(200 if self.command == "GET" else 204,
                                        {"SetPoint": 40} if self.command == "GET" else None, {"ETag": outer.etag})
                return self._answer(404, {"error": "not found"})

            do_GET = do_POST = do_PATCH = do_DELETE = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def bmc():
    server = RecordingServer()
    yield server
    server.close()


@pytest.fixture
def elsewhere():
    """Another origin: nothing may ever reach it with the BMC's credentials."""
    server = RecordingServer()
    yield server
    server.close()


@pytest.fixture
def password_file(tmp_path):
    path = tmp_path / "redfish.pass"
    path.write_text("lab-secret\n")
    return str(path)


def client(cooling_pkg, url, password_file, **extra):
    settings = {"base_url": url, "user": "admin", "password_file": password_file, "timeout": 3, "allow_insecure_http": True}
    settings.update(extra)
    return cooling_pkg["backends"].Redfish(settings)


def test_session_login_token_if_match_and_logout(cooling_pkg, bmc, password_file):
    redfish = client(cooling_pkg, bmc.url, password_file)
    assert redfish.members("/redfish/v1/Chassis") == ["/redfish/v1/Chassis/1"]
    redfish.patch("/redfish/v1/Chassis/1/Controls/FanDuty", {"SetPoint": 55})
    assert redfish.logout() is None
    methods = [(r["method"], r["path"]) for r in bmc.requests]
    assert methods == [("POST", "/redfish/v1/SessionService/Sessions"), ("GET", "/redfish/v1/Chassis"),
                       ("GET", "/redfish/v1/Chassis/1/Controls/FanDuty"), ("PATCH", "/redfish/v1/Chassis/1/Controls/FanDuty"),
                       ("DELETE", "/redfish/v1/SessionService/Sessions/1")]
    assert all("Authorization" not in r["headers"] for r in bmc.requests)  # no Basic credentials on any request
    assert all(r["headers"].get("X-Auth-Token") == TOKEN for r in bmc.requests[1:])
    assert bmc.requests[3]["headers"]["If-Match"] == bmc.etag
    assert json.loads(bmc.requests[3]["body"]) == {"SetPoint": 55}


def test_a_dropped_session_logs_in_again_once(cooling_pkg, bmc, password_file):
    redfish = client(cooling_pkg, bmc.url, password_file)
    redfish.get("/redfish/v1/Chassis")
    redfish.token = "expired"
    assert redfish.get("/redfish/v1/Chassis")["Members"]
    assert [r["method"] for r in bmc.requests].count("POST") == 2


def test_absolute_link_to_another_origin_gets_no_credentials(cooling_pkg, bmc, elsewhere, password_file):
    bmc.routes[("GET", "/redfish/v1/Chassis")] = (200, {"Members": [{"@odata.id": elsewhere.url + "/redfish/v1/Chassis/1"}]})
    redfish = client(cooling_pkg, bmc.url, password_file, chassis="auto")
    with pytest.raises(cooling_pkg["backends"].BackendError, match="not on the BMC"):
        redfish.get(redfish.chassis_uri())
    assert elsewhere.requests == []


def test_redirect_is_refused_not_followed(cooling_pkg, bmc, elsewhere, password_file):
    bmc.routes[("GET", "/redfish/v1/Chassis")] = (302, {}, {"Location": elsewhere.url + "/redfish/v1/Chassis"})
    redfish = client(cooling_pkg, bmc.url, password_file)
    with pytest.raises(cooling_pkg["backends"].BackendError, match="HTTP 302 redirect to .* refused"):
        redfish.get("/redfish/v1/Chassis")
    assert elsewhere.requests == []


def test_basic_auth_goes_to_the_configured_origin_only(cooling_pkg, bmc, elsewhere, password_file):
    redfish = client(cooling_pkg, bmc.url, password_file, auth="basic")
    with pytest.raises(cooling_pkg["backends"].BackendError, match="HTTP 401"):
        redfish.get("/redfish/v1/Chassis")  # this server wants a session: the point is where the header went
    assert bmc.requests[0]["headers"]["Authorization"].startswith("Basic ")
    with pytest.raises(cooling_pkg["backends"].BackendError, match="not on the BMC"):
        redfish.get(elsewhere.url + "/redfish/v1/Chassis")
    assert elsewhere.requests == []


def test_plain_http_is_refused_unless_allowed(cooling_pkg, bmc, password_file):
    with pytest.raises(cooling_pkg["backends"].BackendError, match="plain http"):
        client(cooling_pkg, bmc.url, password_file, allow_insecure_http=False)
    with pytest.raises(cooling_pkg["backends"].BackendError, match="must be only scheme, host and port"):
        client(cooling_pkg, bmc.url + "/redfish/v1", password_file)
    assert bmc.requests == []


def test_malformed_http_answer_is_a_backend_error(cooling_pkg, password_file):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def garbage():
        connection, unused = listener.accept()
        with connection:
            connection.recv(65536)
            connection.sendall(b"\x00\xffnot http at all\r\n\r\n")

    threading.Thread(target=garbage, daemon=True).start()
    try:
        redfish = client(cooling_pkg, "http://127.0.0.1:%d" % listener.getsockname()[1], password_file, auth="basic")
        with pytest.raises(cooling_pkg["backends"].BackendError, match="BadStatusLine"):
            redfish.get("/redfish/v1/Chassis")
    finally:
        listener.close()


def test_sushy_emulator_without_sessionservice_gets_a_clear_error(cooling_pkg, password_file):
    binary = Path(sys.executable).parent / "sushy-emulator"
    if not binary.exists():
        pytest.skip("sushy-tools not installed")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen([str(binary), "--fake", "-i", "127.0.0.1", "-p", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        url = "http://127.0.0.1:%d" % port
        anonymous = cooling_pkg["backends"].Redfish({"base_url": url, "timeout": 2, "allow_insecure_http": True})
        deadline = time.monotonic() + 30
        while True:
            try:
                anonymous.get("/redfish/v1")
                break
            except cooling_pkg["backends"].BackendError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        with pytest.raises(cooling_pkg["backends"].BackendError, match="SessionService/Sessions"):
            client(cooling_pkg, url, password_file).get("/redfish/v1/Chassis")
    finally:
        process.terminate()
        process.wait(timeout=10)
