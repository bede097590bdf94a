"""UDP echo for the routing lab: answers each datagram with this leaf's name and the datagram, so the prober
sees which leaf carried each packet."""

import socket
import sys

PORT = int(sys.argv[1]) if len(sys.argv) > 1 else 7000
NAME = socket.gethostname().encode()

sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.bind(("0.0.0.0", PORT))
while True:
    data, peer = sock.recvfrom(2048)
    sock.sendto(NAME + b" " + data, peer)
