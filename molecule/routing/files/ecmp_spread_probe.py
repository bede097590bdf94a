"""ECMP spread probe for the routing lab: N UDP flows (one socket each, so each has its own source port) from the
node's loopback to the anycast address, a few datagrams per flow, and the packets each uplink sent meanwhile, from
the interfaces' counters (/proc/net/dev of the network namespace it runs in). Prints one JSON object.

Bounded: --flows at most 4096, --packets per flow at most 64; nothing waits for replies.
"""

import argparse
import json
import socket


def tx_packets(interfaces):
    counts = {}
    with open("/proc/net/dev") as handle:
        for line in handle.readlines()[2:]:
            name, fields = line.split(":", 1)
            if name.strip() in interfaces:
                # receive: bytes packets errs drop fifo frame compressed multicast; transmit: bytes packets ...
                counts[name.strip()] = int(fields.split()[9])
    return counts


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", required=True)
    parser.add_argument("--port", type=int, default=7000)
    parser.add_argument("--source", required=True)
    parser.add_argument("--uplinks", required=True, help="comma-separated interfaces")
    parser.add_argument("--flows", type=int, default=256)
    parser.add_argument("--packets", type=int, default=4)
    args = parser.parse_args()
    flows, packets = min(max(args.flows, 1), 4096), min(max(args.packets, 1), 64)
    uplinks = args.uplinks.split(",")
    sockets = []
    for _flow in range(flows):
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind((args.source, 0))
        sockets.append(sock)
    before = tx_packets(uplinks)
    for _round in range(packets):
        for sock in sockets:
            sock.sendto(b"spread", (args.target, args.port))
    after = tx_packets(uplinks)
    ports = sorted({sock.getsockname()[1] for sock in sockets})
    for sock in sockets:
        sock.close()
    print(json.dumps({"flows": flows, "packets_per_flow": packets, "source_ports": len(ports),
                      "sent": flows * packets, "tx_packets": {u: after[u] - before[u] for u in uplinks}}))


if __name__ == "__main__":
    main()
