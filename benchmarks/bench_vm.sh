#!/usr/bin/env bash
# Real-kernel figures of the VM lab (scripts/vmlab.sh), measured in one run on two VMs bonded to each other
# (802.3ad over their two links, VLAN 100, MTU 9000, made with iproute2):
#   - iperf3 over the VLAN, plain, then through kernel ESP (strongSwan, AES-256-GCM, transport mode), as a ratio;
#   - the bond failover gap: ICMP echo requests at 1 ms intervals lost when the cable carrying them is pulled at
#     both ends (QEMU monitor set_link), and at the receiving end only: the sender keeps its carrier and goes on
#     sending into the dead link until LACP times out (fast rate: 3 s without a LACPDU).
# Emulated VMs (TCG where KVM does not work): ratios and counts of this lab, not figures of real NICs.
set -Eeuo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# A lab of its own, on ports of its own.
export GPUFABRIC_VMLAB_NAME=bench GPUFABRIC_VMLAB_SSH_PORT=22440 GPUFABRIC_VMLAB_LINK_PORT=22700 GPUFABRIC_VMLAB_METRICS_PORT=22720
VMLAB=$ROOT/scripts/vmlab.sh
SUBNET=10.100.0
trap '"$VMLAB" down >/dev/null 2>&1' EXIT
on() { "$VMLAB" ssh "$@"; }

start=$SECONDS
"$VMLAB" up 2 >/dev/null 2>"$ROOT/.cache/bench-vm-up.log" || { tail -20 "$ROOT/.cache/bench-vm-up.log" >&2; exit 1; }
echo "lab up (2 VMs): $((SECONDS - start)) s ($(cat "$ROOT/.lab/vm-bench/accel"))"

for i in 1 2; do
    on "vm0$i" "set -e
        modprobe -a bonding 8021q
        ip link add bond0 type bond mode 802.3ad miimon 100 lacp_rate fast xmit_hash_policy layer3+4
        for nic in ens4 ens5; do ip link set \$nic down; ip link set \$nic master bond0; done
        ip link set bond0 mtu 9000 up
        ip link add link bond0 name bond0.100 type vlan id 100
        ip link set bond0.100 mtu 9000 up
        ip addr add $SUBNET.$i/24 dev bond0.100"
done
deadline=$((SECONDS + 90))
until on vm01 "grep -q 'Number of ports: 2' /proc/net/bonding/bond0" && on vm02 "grep -q 'Number of ports: 2' /proc/net/bonding/bond0"; do
    ((SECONDS < deadline)) || { echo "LACP did not negotiate within 90 s" >&2; exit 1; }
    sleep 1
done

iperf() { # prints the received Gbit/s of a 5 s iperf3 run from vm01 to vm02
    on vm02 "iperf3 -s -1 -D"
    sleep 1
    on vm01 "iperf3 -c $SUBNET.2 -t 5 -J" | python3 -c 'import json, sys; print("%.3f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e9))'
}
plain=$(iperf)

# Kernel ESP between the VLAN addresses: a pre-shared key made for this run, never printed.
psk=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
for i in 1 2; do
    j=$((3 - i))
    on "vm0$i" "umask 077; cat >/etc/swanctl/conf.d/bench.conf" <<EOF
connections {
    bench {
        local_addrs = $SUBNET.$i
        remote_addrs = $SUBNET.$j
        proposals = aes256gcm16-prfsha256-ecp256
        local { auth = psk
                id = $SUBNET.$i }
        remote { auth = psk
                 id = $SUBNET.$j }
        children { bench { mode = transport
                           esp_proposals = aes256gcm16 } }
    }
}
secrets { ike-bench { id-1 = $SUBNET.1
                      id-2 = $SUBNET.2
                      secret = 0x$psk } }
EOF
    on "vm0$i" "systemctl restart strongswan.service && sleep 2 && swanctl --load-all >/dev/null"
done
on vm01 "swanctl --initiate --child bench >/dev/null"
on vm01 "ip xfrm state | grep -q 'rfc4106(gcm(aes))'" || { echo "no kernel ESP SA with rfc4106(gcm(aes))" >&2; exit 1; }
esp=$(iperf)
echo "iperf3 over the bond's VLAN: plain $plain Gbit/s, kernel ESP (AES-256-GCM) $esp Gbit/s, ratio $(echo "scale=2; $esp / $plain" | bc)"
for i in 1 2; do on "vm0$i" "swanctl --terminate --ike bench >/dev/null 2>&1; rm -f /etc/swanctl/conf.d/bench.conf"; done

gap() { # END (both|far): echo requests lost at 1 ms intervals when the cable carrying them is pulled
    local end=$1 node=vm01 flag=() carrier out ping_pid
    [[ "$end" == far ]] && node=vm02 flag=(--one-end)
    out=$(mktemp)
    on vm01 "ping -q -c 6000 -i 0.001 -W 1 $SUBNET.2" >"$out" 2>&1 &
    ping_pid=$!
    sleep 1
    # The member carrying this very ping: layer3+4 hashes ICMP echo by its identifier, so each ping process may
    # take another member; the one whose TX counter grows under it is the one to pull.
    # shellcheck disable=SC2016  # expanded on the VM
    carrier=$(on vm01 'r() { cat /sys/class/net/$1/statistics/tx_packets; }; a4=$(r ens4); a5=$(r ens5); sleep 0.5
        b4=$(r ens4); b5=$(r ens5); [ $((b4 - a4)) -gt $((b5 - a5)) ] && echo ens4 || echo ens5')
    # The links join NICs of the same name (ens4-ens4, ens5-ens5): vm02's end of the cable is vm02's $carrier.
    "$VMLAB" link "$node" "$carrier" off "${flag[@]}" 2>/dev/null
    wait "$ping_pid" || true
    "$VMLAB" link "$node" "$carrier" on "${flag[@]}" 2>/dev/null
    # Under emulation ping cannot keep 1 ms: the gap is the lost requests times the interval it did keep.
    python3 -c 'import re, sys
m = re.search(r"(\d+) packets transmitted, (\d+) received.*?time (\d+)ms", open(sys.argv[1]).read())
t, r, ms = map(int, m.groups())
print("cable of %s: %d of %d lost, about %.0f ms at the %.1f ms interval ping kept" % (sys.argv[2], t - r, t, (t - r) * ms / t, ms / t))' "$out" "$carrier"
    rm -f "$out"
    # LACP back on both members before the next run.
    sleep 3
}
echo "bond failover, pulled at both ends: $(gap both)"
echo "bond failover, pulled at vm02's end only (vm01 sends on until LACP times out): $(gap far)"
echo "bench_vm total: $((SECONDS - start)) s"
