#!/usr/bin/env bash
# Captures the real-kernel fixtures of tests/fixtures/lab_qemu from a VM lab of two VMs (scripts/vmlab.sh up 2):
# an 802.3ad bond on each VM over its two links to the other (each the other's LACP partner), a VLAN with MTU
# 9000 on it, one cable pulled and restored, Soft-RoCE on the bond and ib_write_bw over the VLAN's RoCE v2 GID.
# It changes the VMs (bond, VLAN, rxe0): run it on a fresh lab, then take the lab down.
#
#   scripts/vmlab-capture.sh [OUTPUT_DIR]     default tests/fixtures/lab_qemu
#   VMLAB_CAPTURE=ipsec scripts/vmlab-capture.sh   only some parts (bonding, rdma, ipsec; default all three)
set -Eeuo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VMLAB=$ROOT/scripts/vmlab.sh
OUT=${1:-$ROOT/tests/fixtures/lab_qemu}
STATE_DIR=$ROOT/.lab/vm-${GPUFABRIC_VMLAB_NAME:-vmlab}
PARTS=,${VMLAB_CAPTURE:-bonding,rdma,ipsec},
VLAN=100
SUBNET=10.100.0

die() { echo "vmlab-capture: $*" >&2; exit 1; }
log() { echo "vmlab-capture: $*" >&2; }
on() { "$VMLAB" ssh "$@"; }

[[ -f "$STATE_DIR/links" ]] || die "no VM lab in ${STATE_DIR#"$ROOT"/}: run scripts/vmlab.sh up 2 first"
mkdir -p "$OUT"
ACCEL=$(tr '[:lower:]' '[:upper:]' <"$STATE_DIR/accel")
IMAGE=$(cat "$STATE_DIR/image")
KERNEL="$(cat "$IMAGE/kernel-version"), kernel $(cat "$IMAGE/kernel-release")"

# capture FILE NODE WHAT COMMAND: the command's output on NODE, under a line-1 source header.
capture() {
    local file=$1 node=$2 what=$3 command=$4
    { echo "# source: gpufabric.core VM lab (QEMU $ACCEL, Debian 12 linux-image-amd64 $KERNEL), \`$command\` on $node; $what"
        on "$node" "$command"; } >"$OUT/$file.tmp"
    mv "$OUT/$file.tmp" "$OUT/$file"
    log "captured ${OUT#"$ROOT"/}/$file"
}

# Both members of bond0 aggregated with the partner: one aggregator of two ports, partner MAC known.
wait_for_lacp() {
    local node=$1 deadline=$((SECONDS + 90))
    until on "$node" "grep -q 'Number of ports: 2' /proc/net/bonding/bond0 &&
        ! grep -q 'Partner Mac Address: 00:00:00:00:00:00' /proc/net/bonding/bond0"; do
        ((SECONDS < deadline)) || die "LACP did not negotiate on $node within 90 s"
        sleep 1
    done
}

BOND_SETUP="802.3ad bond0 over ens4+ens5 (the two links to the other VM, itself bonded the same way), miimon 100, lacp_rate fast, xmit_hash_policy layer3+4, MTU 9000, VLAN $VLAN on it with $SUBNET.0/24"
for i in 1 2; do
    on "vm0$i" "set -e
        modprobe -a bonding 8021q
        ip link add bond0 type bond mode 802.3ad miimon 100 lacp_rate fast xmit_hash_policy layer3+4
        for nic in ens4 ens5; do ip link set \$nic down; ip link set \$nic master bond0; done
        ip link set bond0 mtu 9000 up
        ip link add link bond0 name bond0.$VLAN type vlan id $VLAN
        ip link set bond0.$VLAN mtu 9000 up
        ip addr add $SUBNET.$i/24 dev bond0.$VLAN"
done
start=$SECONDS
wait_for_lacp vm01
wait_for_lacp vm02
log "LACP negotiated on both VMs in $((SECONDS - start)) s"
on vm01 "ping -c 3 -M do -s 8972 $SUBNET.2" >&2
if [[ $PARTS == *,bonding,* ]]; then
capture lab-qemu-bonding-bond0-lacp-vm01.txt vm01 "$BOND_SETUP; partner negotiated" 'cat /proc/net/bonding/bond0'
capture lab-qemu-bonding-bond0-lacp-vm02.txt vm02 "$BOND_SETUP; partner negotiated" 'cat /proc/net/bonding/bond0'

"$VMLAB" link vm01 ens5 off
sleep 3
on vm01 "ping -c 3 -M do -s 8972 $SUBNET.2" >&2
capture lab-qemu-bonding-bond0-cable-pulled-vm01.txt vm01 \
    "$BOND_SETUP; the cable of ens5 pulled at both ends (QEMU monitor set_link off) 3 s before" 'cat /proc/net/bonding/bond0'
"$VMLAB" link vm01 ens5 on
wait_for_lacp vm01
wait_for_lacp vm02
fi

if [[ $PARTS == *,rdma,* ]]; then
RXE_SETUP="Soft-RoCE rxe0 on bond0 ($BOND_SETUP), rdma link add rxe0 type rxe netdev bond0"
for i in 1 2; do
    on "vm0$i" 'modprobe rdma_rxe && rdma link add rxe0 type rxe netdev bond0'
done
# The RoCE v2 GID of the VLAN's IPv4 address: the GID index perftest and NCCL must use.
gid_index() {
    on "$1" "for f in /sys/class/infiniband/rxe0/ports/1/gid_attrs/ndevs/*; do
        n=\${f##*/}
        [ \"\$(cat \$f 2>/dev/null)\" = bond0.$VLAN ] || continue
        case \$(cat /sys/class/infiniband/rxe0/ports/1/gids/\$n) in 0000:0000:0000:0000:0000:ffff:*) echo \$n; exit;; esac
    done"
}
sleep 2
GID1=$(gid_index vm01)
GID2=$(gid_index vm02)
[[ -n "$GID1" && -n "$GID2" ]] || die "no RoCE v2 GID of $SUBNET.x on bond0.$VLAN"
log "GID index of the VLAN address: vm01 $GID1, vm02 $GID2"
capture lab-qemu-ibv_devinfo-rxe0.txt vm01 "$RXE_SETUP" 'ibv_devinfo'
capture lab-qemu-ibv_devinfo-v-rxe0.txt vm01 "$RXE_SETUP" 'ibv_devinfo -v'
capture lab-qemu-ibstat-rxe0.txt vm01 "$RXE_SETUP" 'ibstat'
capture lab-qemu-rdma-link-rxe0.txt vm01 "$RXE_SETUP" 'rdma link'
capture lab-qemu-sysfs-gids-rxe0.txt vm01 "$RXE_SETUP; the GID table as sysfs shows it, one file:value per line" \
    'cd /sys/class/infiniband/rxe0/ports/1 && grep -H . gids/* gid_attrs/types/* gid_attrs/ndevs/* 2>/dev/null | grep -v -e ":0000:0000:0000:0000:0000:0000:0000:0000" -e "types/[0-9]*:$" || true'

# ib_write_bw between the VMs over the VLAN's RoCE v2 GID; few iterations: emulated RDMA is slow.
PERF_ARGS="-d rxe0 -F --report_gbits -n 200"
on vm02 "rm -f /tmp/ib_write_bw-server.txt; nohup ib_write_bw $PERF_ARGS -x $GID2 >/tmp/ib_write_bw-server.txt 2>&1 </dev/null &"
sleep 3
capture lab-qemu-ib_write_bw-rxe0-client.txt vm01 \
    "$RXE_SETUP; client towards vm02's server ($SUBNET.2), GID index $GID1 (RoCE v2, the VLAN's IPv4 address)" \
    "timeout 300 ib_write_bw $PERF_ARGS -x $GID1 $SUBNET.2"
sleep 2
capture lab-qemu-ib_write_bw-rxe0-server.txt vm02 \
    "$RXE_SETUP; server side of the run above, started as ib_write_bw $PERF_ARGS -x $GID2, output of the finished run" \
    'cat /tmp/ib_write_bw-server.txt'
fi

if [[ $PARTS == *,ipsec,* ]]; then
# Kernel ESP between the VLAN addresses (strongSwan, no kernel-libipsec), a pre-shared key made for this run and
# never printed; the ipsec role uses X.509, which changes nothing in these outputs but the auth lines.
psk=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
for i in 1 2; do
    j=$((3 - i))
    on "vm0$i" "umask 077; cat >/etc/swanctl/conf.d/capture.conf" <<EOF
connections {
    lab {
        local_addrs = $SUBNET.$i
        remote_addrs = $SUBNET.$j
        proposals = aes256gcm16-prfsha256-ecp256
        local { auth = psk
                id = $SUBNET.$i }
        remote { auth = psk
                 id = $SUBNET.$j }
        children { vlan$VLAN { mode = transport
                              esp_proposals = aes256gcm16 } }
    }
}
secrets { ike-lab { id-1 = $SUBNET.1
                    id-2 = $SUBNET.2
                    secret = 0x$psk } }
EOF
    on "vm0$i" "systemctl restart strongswan.service && sleep 2 && swanctl --load-all >/dev/null"
done
on vm01 "swanctl --initiate --child vlan$VLAN >/dev/null"
on vm01 "ping -c 5 -i 0.2 $SUBNET.2 >/dev/null"
IPSEC_SETUP="strongSwan 5.9 charon-systemd (kernel xfrm, no kernel-libipsec) between the VLAN addresses $SUBNET.1 and $SUBNET.2 of $BOND_SETUP; IKEv2 with a pre-shared key, CHILD SA in transport mode, aes256gcm16; 5 pings through it"
capture lab-qemu-swanctl-list-sas-kernel-esp.txt vm01 "$IPSEC_SETUP" 'swanctl --list-sas'
# The keys are the SA's secrets: replaced in the capture (nothing else is changed).
capture lab-qemu-ip-xfrm-state-kernel-esp.txt vm01 "$IPSEC_SETUP; key material replaced by 0x<key>" \
    "ip xfrm state | sed -E 's/0x[0-9a-f]{16,}/0x<key>/'"
capture lab-qemu-ip-xfrm-policy-kernel-esp.txt vm01 "$IPSEC_SETUP" 'ip xfrm policy'
fi
