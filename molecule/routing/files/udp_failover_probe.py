"""UDP stream at one packet per interval to an address behind both leaves; prints what came back, as JSON.

Each datagram carries a sequence number; the echo on the leaves answers with its name. One source port for the
whole run, so ECMP hashes the flow onto one leaf until that path is withdrawn. Missing replies are counted by
sequence number, and the longest gap is measured between the send times of the last reply before it and the
first after it, so a late send (a loaded machine) does not read as loss.
"""

import argparse
import json
import select
import socket
import sys
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", required=True)
    parser.add_argument("--port", type=int, default=7000)
    parser.add_argument("--source", default="")
    parser.add_argument("--source-port", type=int, default=47000)
    parser.add_argument("--interval-ms", type=float, default=1.0)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--linger", type=float, default=0.5, help="seconds to wait for late replies")
    args = parser.parse_args()

    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.source, args.source_port))
    sock.setblocking(False)
    interval = args.interval_ms / 1000.0
    count = int(args.duration / interval)
    sent_at = []
    replies = {}
    start = time.monotonic()

    def receive(timeout):
        readable = select.select([sock], [], [], max(timeout, 0))[0]
        while readable:
            try:
                data = sock.recvfrom(2048)[0]
            except BlockingIOError:
                break
            leaf, seq = (data.decode(errors="replace").split(" ", 1) + [""])[:2]
            if seq.isdigit():
                replies.setdefault(int(seq), leaf)

    # The caller times the cut from this line: starting a process on a loaded machine can take seconds.
    sys.stderr.write("started\n")
    sys.stderr.flush()
    for seq in range(count):
        due = start + seq * interval
        now = time.monotonic()
        if due > now:
            receive(due - now)
        sent_at.append(time.monotonic())
        try:
            sock.sendto(str(seq).encode(), (args.target, args.port))
        except OSError:
            pass  # no route for a moment: the packet is lost, as on the wire
        receive(0)
    end = time.monotonic() + args.linger
    while time.monotonic() < end:
        receive(end - time.monotonic())

    received = sorted(replies)
    longest_gap_ms, gap_from, gap_to = 0.0, None, None
    for before, after in zip(received, received[1:]):
        gap = (sent_at[after] - sent_at[before]) * 1000.0
        if after - before > 1 and gap > longest_gap_ms:
            longest_gap_ms, gap_from, gap_to = gap, before, after
    by_leaf = {}
    for seq in received:
        by_leaf[replies[seq]] = by_leaf.get(replies[seq], 0) + 1
    print(json.dumps({
        "sent": count,
        "received": len(received),
        "missing": count - len(received),
        "longest_gap_ms": round(longest_gap_ms, 1),
        "gap_lost_packets": (gap_to - gap_from - 1) if gap_from is not None else 0,
        "first_leaf": replies[received[0]] if received else None,
        "last_leaf": replies[received[-1]] if received else None,
        "leaf_before_gap": replies[gap_from] if gap_from is not None else None,
        "leaf_after_gap": replies[gap_to] if gap_to is not None else None,
        "replies_by_leaf": by_leaf,
        "send_duration_s": round(sent_at[-1] - sent_at[0], 3) if sent_at else 0,
    }))


if __name__ == "__main__":
    main()
