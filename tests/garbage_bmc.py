"""A broken BMC for the cooling stop-path tests: a TCP peer that answers every request with bytes that are not HTTP.

Shared by the unit tests (tests/unit/cooling) and the cooling Molecule scenario, which binds it to the lab BMC's
Redfish address while the emulator is stopped. Import after putting this folder on sys.path.
"""

import socket
import threading


class GarbageBMC:
    """Listens on address:port (port 0: a free one, in .port) and answers each request with non-HTTP bytes."""

    def __init__(self, address="127.0.0.1", port=0):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((address, port))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.requests = 0
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while True:
            try:
                connection, unused = self.sock.accept()
            except OSError:
                return
            with connection:
                connection.settimeout(5)
                try:
                    connection.recv(65536)
                    connection.sendall(b"\x00\xffBMC firmware update in progress\r\n\r\n")
                except OSError:
                    pass
                self.requests += 1

    def close(self):
        # close() alone does not wake the thread blocked in accept(), which keeps the port listening (and the real
        # BMC emulator then cannot bind it): shut the socket down first.
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        self.thread.join(10)
