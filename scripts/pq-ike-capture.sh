#!/usr/bin/env bash
# Captures the strongSwan 6 fixtures of tests/fixtures/strongswan, with X.509 mutual authentication (certificates
# from strongSwan's pki tool) between two Debian 13 containers (strongSwan 6.0.1) and a Debian 12 one (5.9.8):
#   1. --version and --list-algs on both releases;
#   2. Debian 13 <-> Debian 13 with ML-KEM-768 as RFC 9370 additional key exchange (ke1_mlkem768), what happens;
#   3. the same pair with a classical additional key exchange (ke1_curve25519): strongSwan 6's multiple key
#      exchange output format (KE1_...) from a negotiated SA, also after a CHILD SA rekey;
#   4. Debian 12 -> Debian 13 under a proposal list with ML-KEM first and a classical fallback: a classical SA;
#   5. Debian 13 -> Debian 12 with ML-KEM-only proposals ("required"): refused.
# The container kernel has no ESP: charon's kernel-libipsec plugin (userspace ESP over the ipsec0 TUN device)
# carries the CHILD SAs.
#
#   scripts/pq-ike-capture.sh   needs the lab images: GPUFABRIC_LAB_RELEASE=trixie scripts/lab.sh image, and
#                               the bookworm one (scripts/lab.sh image)
#
# Everything it starts (network debian13-net on 10.231.77.0/24, containers debian13-a, -b, -c) carries the label
# gpufabric.capture=pq-ike and is removed on exit, also after a failure.
# shellcheck disable=SC2016  # the single-quoted $... are for the containers' shells and dpkg-query, not this one
set -Eeuo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${GPUFABRIC_CAPTURE_DIR:-$ROOT/tests/fixtures/strongswan}
NET=debian13-net
SUBNET_PREFIX=10.231.77
LABEL=gpufabric.capture=pq-ike
TRIXIE_IMAGE=${GPUFABRIC_TRIXIE_IMAGE:-localhost/gpufabric-lab:trixie}
BOOKWORM_IMAGE=${GPUFABRIC_BOOKWORM_IMAGE:-localhost/gpufabric-lab:latest}
# name, image, IKE address suffix, tunnel address (on lo: userspace ESP cannot tunnel to the IKE peer's own address)
NODES=(a b c)
declare -A IMAGE=([a]=$TRIXIE_IMAGE [b]=$TRIXIE_IMAGE [c]=$BOOKWORM_IMAGE)
declare -A IKE=([a]=$SUBNET_PREFIX.11 [b]=$SUBNET_PREFIX.12 [c]=$SUBNET_PREFIX.13)
declare -A TUN=([a]=10.77.0.1 [b]=10.77.0.2 [c]=10.77.0.3)
PACKAGES="charon-systemd strongswan-swanctl strongswan-pki libstrongswan-standard-plugins libcharon-extra-plugins"
PQ_IKE=aes256gcm16-prfsha384-ecp384-ke1_mlkem768
PQ_ESP=aes256gcm16-ecp384-ke1_mlkem768
CLASSICAL_IKE=aes256gcm16-prfsha384-ecp384
CLASSICAL_ESP=aes256gcm16-ecp384
# A hybrid of two classical key exchanges: the RFC 9370 mechanism without ML-KEM.
HYBRID_IKE=aes256gcm16-prfsha384-ecp384-ke1_curve25519
HYBRID_ESP=aes256gcm16-ecp384-ke1_curve25519

die() { echo "pq-ike-capture: $*" >&2; exit 1; }
log() { echo "pq-ike-capture: $*" >&2; }
on() { local node=$1; shift; podman exec "debian13-$node" "$@"; }

cleanup() {
    local ids
    mapfile -t ids < <(podman ps -aq --filter "label=$LABEL")
    ((${#ids[@]} == 0)) || podman rm -f -t 0 "${ids[@]}" >/dev/null
    ! podman network exists "$NET" || podman network rm -f "$NET" >/dev/null
}

# One fixture file: line 1 the provenance, then the command's output as it was.
capture() {
    local file=$1 source=$2
    shift 2
    { echo "# source: $source"; "$@"; } >"$OUT/$file.tmp"
    mv "$OUT/$file.tmp" "$OUT/$file"
    log "wrote ${OUT#"$ROOT"/}/$file"
}

initiate() {
    local node=$1 child=$2 out
    out=$(on "$node" swanctl --initiate --child "$child" --timeout 30 2>/dev/null) ||
        { echo "$out" | tail -8 >&2; die "CHILD SA $child of debian13-$node was not established"; }
}

conn() {
    # name, local node, remote node, IKE proposals, ESP proposals
    local name=$1 here=$2 there=$3 ike=$4 esp=$5
    cat <<CONF
    $name {
        version = 2
        local_addrs = ${IKE[$here]}
        remote_addrs = ${IKE[$there]}
        proposals = $ike
        local {
            auth = pubkey
            certs = debian13-$here.pem
            id = debian13-$here
        }
        remote {
            auth = pubkey
            id = debian13-$there
        }
        children {
            $name {
                local_ts = ${TUN[$here]}/32
                remote_ts = ${TUN[$there]}/32
                esp_proposals = $esp
                start_action = none
            }
        }
    }
CONF
}

write_conf() {
    local node=$1 count=$((($# - 1) / 4))
    shift
    { echo "connections {"; while (($#)); do conn "$1" "$node" "$2" "$3" "$4"; shift 4; done; echo "}"; } |
        podman exec -i "debian13-$node" sh -c 'cat >/etc/swanctl/conf.d/capture.conf'
    on "$node" swanctl --load-all 2>/dev/null | grep -q "successfully loaded $count connections" ||
        die "swanctl --load-all on debian13-$node did not load its connections"
}

main() {
    local image
    for image in "$TRIXIE_IMAGE" "$BOOKWORM_IMAGE"; do
        podman image exists "$image" || die "image $image is missing (scripts/lab.sh image builds it)"
    done
    mkdir -p "$OUT"
    # GPUFABRIC_CAPTURE_KEEP=1 leaves the containers running after a failure, to look at them;
    # GPUFABRIC_CAPTURE_REUSE=1 then starts again from the strongSwan configuration in those containers.
    if [[ "${GPUFABRIC_CAPTURE_KEEP:-0}" == 1 ]]; then trap 'log "kept the containers"' EXIT; else trap cleanup EXIT; fi
    [[ "${GPUFABRIC_CAPTURE_REUSE:-0}" == 1 ]] || start_nodes
    configure_nodes
}

start_nodes() {
    local node pids=() pid failed=0
    cleanup
    podman network create --label "$LABEL" --subnet "$SUBNET_PREFIX.0/24" "$NET" >/dev/null
    for node in "${NODES[@]}"; do
        podman run -d --name "debian13-$node" --hostname "debian13-$node" --label "$LABEL" \
            --network "$NET" --ip "${IKE[$node]}" --systemd=always --cap-add NET_ADMIN,NET_RAW \
            --device /dev/net/tun "${IMAGE[$node]}" /sbin/init >/dev/null
    done
    for node in "${NODES[@]}"; do
        on "$node" sh -c 'for i in $(seq 60); do systemctl is-system-running 2>/dev/null | grep -qE "running|degraded" && exit 0; sleep 1; done; exit 1' ||
            die "debian13-$node did not boot"
        on "$node" ip addr add "${TUN[$node]}/32" dev lo
        on "$node" sh -c "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o Dpkg::Options::=--force-unsafe-io $PACKAGES >/tmp/apt.log 2>&1 || { tail -20 /tmp/apt.log; exit 1; }" &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
    ((failed == 0)) || die "installing strongSwan failed"
}

configure_nodes() {
    local node version_a version_c
    for node in "${NODES[@]}"; do
        # Userspace ESP: the container kernel has no ESP (xfrm SAs cannot be installed).
        # The file is included inside charon.plugins: the plugin's section only.
        on "$node" sh -c 'printf "kernel-libipsec {\n    load = yes\n}\n" >/etc/strongswan.d/charon/kernel-libipsec.conf'
    done
    version_a=$(on a dpkg-query -W -f='${Version}' charon-systemd)
    version_c=$(on c dpkg-query -W -f='${Version}' charon-systemd)
    local openssl_a where_a where_c
    openssl_a=$(on a dpkg-query -W -f='${Version}' libssl3t64 2>/dev/null || on a dpkg-query -W -f='${Version}' libssl3)
    where_a="Debian 13 container debian13-a (strongSwan $version_a, charon-systemd, OpenSSL $openssl_a, kernel-libipsec userspace ESP; podman, host kernel $(uname -r)), captured $(date -u +%F) by scripts/pq-ike-capture.sh"
    where_c="Debian 12 container debian13-c (strongSwan $version_c, charon-systemd, kernel-libipsec userspace ESP; podman, host kernel $(uname -r)), captured $(date -u +%F) by scripts/pq-ike-capture.sh"

    # The CA and one certificate per node, all from pki on debian13-a; keys 0600.
    on a sh -ec '
        d=$(mktemp -d); cd "$d"
        pki --gen --type ecdsa --size 384 --outform pem >ca.key
        pki --self --ca --lifetime 30 --in ca.key --type ecdsa --dn "CN=debian13 capture CA" --outform pem >ca.pem
        for n in a b c; do
            pki --gen --type ecdsa --size 384 --outform pem >debian13-$n.key
            pki --pub --in debian13-$n.key --type ecdsa |
                pki --issue --cacert ca.pem --cakey ca.key --dn "CN=debian13-$n" --san debian13-$n \
                    --lifetime 7 --outform pem >debian13-$n.pem
        done
        tar -cf /tmp/pki.tar ca.pem debian13-*.pem debian13-*.key
        rm -rf "$d"'
    podman cp debian13-a:/tmp/pki.tar "$OUT/.pki.tar"
    for node in "${NODES[@]}"; do
        podman cp "$OUT/.pki.tar" "debian13-$node:/tmp/pki.tar"
        on "$node" sh -ec "
            cd /tmp && tar -xf pki.tar
            install -m 0644 ca.pem /etc/swanctl/x509ca/ca.pem
            install -m 0644 debian13-$node.pem /etc/swanctl/x509/debian13-$node.pem
            install -m 0600 debian13-$node.key /etc/swanctl/private/debian13-$node.key
            rm -f /tmp/pki.tar /tmp/ca.pem /tmp/debian13-*"
        on "$node" systemctl restart strongswan.service
    done
    rm -f "$OUT/.pki.tar"
    sleep 2

    capture lab-debian13-swanctl-version.txt "\`swanctl --version\` on $where_a" on a swanctl --version
    capture lab-debian13-swanctl-list-algs.txt "\`swanctl --list-algs\` on $where_a" on a swanctl --list-algs
    capture lab-debian12-swanctl-list-algs.txt "\`swanctl --list-algs\` on $where_c" on c swanctl --list-algs

    local ikes="IKE on $SUBNET_PREFIX.11-13, tunnel addresses 10.77.0.1-3/32 on lo"
    # 2. Debian 13 <-> Debian 13, ML-KEM-768 as additional key exchange.
    write_conf a pq-b b "$PQ_IKE" "$PQ_ESP"
    write_conf b pq-a a "$PQ_IKE" "$PQ_ESP"
    capture lab-debian13-initiate-mlkem768-both-debian13.txt "\`swanctl --initiate --child pq-b\` on $where_a towards debian13-b (same build), both with IKE proposals $PQ_IKE and ESP $PQ_ESP; $ikes" \
        sh -c 'podman exec debian13-a swanctl --initiate --child pq-b --timeout 20 2>/dev/null; echo "(exit status $?)"'
    capture lab-debian13-list-sas-a-after-mlkem768.txt "\`swanctl --list-sas\` on $where_a after the ke1_mlkem768 initiation above" on a swanctl --list-sas
    on a swanctl --terminate --ike pq-b --timeout 5 >/dev/null 2>&1 || true

    # 3. Debian 13 <-> Debian 13, a classical additional key exchange: the KE1_ output of a negotiated SA.
    # 4. Debian 12 initiates to Debian 13, which offers ML-KEM first and the classical proposal after it.
    write_conf a hy-b b "$HYBRID_IKE" "$HYBRID_ESP" mix-c c "$PQ_IKE,$CLASSICAL_IKE" "$PQ_ESP,$CLASSICAL_ESP"
    write_conf b hy-a a "$HYBRID_IKE" "$HYBRID_ESP"
    write_conf c mix-a a "$CLASSICAL_IKE" "$CLASSICAL_ESP"
    initiate a hy-b
    initiate c mix-a
    # Traffic both ways on both pairs, through userspace ESP.
    on a ping -c 3 -i 0.3 -I "${TUN[a]}" "${TUN[b]}" >/dev/null
    on b ping -c 2 -i 0.3 -I "${TUN[b]}" "${TUN[a]}" >/dev/null
    on a ping -c 2 -i 0.3 -I "${TUN[a]}" "${TUN[c]}" >/dev/null
    on c ping -c 3 -i 0.3 -I "${TUN[c]}" "${TUN[a]}" >/dev/null
    local pairs="$ikes; hy-b/hy-a: debian13-a (initiator) <-> debian13-b (Debian 13), IKE $HYBRID_IKE, ESP $HYBRID_ESP; mix-c/mix-a: debian13-c (Debian 12, initiator, offering only $CLASSICAL_IKE / $CLASSICAL_ESP) -> debian13-a offering $PQ_IKE,$CLASSICAL_IKE / $PQ_ESP,$CLASSICAL_ESP; pings both ways on both pairs"
    capture lab-debian13-list-sas-a-hybrid-and-classical.txt "\`swanctl --list-sas\` on $where_a; $pairs" on a swanctl --list-sas
    capture lab-debian13-list-sas-raw-a.txt "\`swanctl --list-sas --raw\` on $where_a; $pairs" on a swanctl --list-sas --raw
    capture lab-debian13-list-conns-a.txt "\`swanctl --list-conns\` on $where_a; $pairs" on a swanctl --list-conns
    capture lab-debian13-list-sas-b-hybrid-responder.txt "\`swanctl --list-sas\` on Debian 13 container debian13-b (same build as debian13-a); $pairs" on b swanctl --list-sas
    capture lab-debian12-list-sas-c-classical.txt "\`swanctl --list-sas\` on $where_c; $pairs" on c swanctl --list-sas

    # A CHILD SA rekey runs the ESP proposal's key exchanges (PFS): they then show on the CHILD SA line.
    on a swanctl --rekey --child hy-b >/dev/null 2>&1
    sleep 3
    capture lab-debian13-list-sas-a-hybrid-child-rekeyed.txt "\`swanctl --list-sas --ike hy-b\` on $where_a, 3 s after \`swanctl --rekey --child hy-b\`; $pairs" on a swanctl --list-sas --ike hy-b

    # 5. "required": debian13-a offers the Debian 12 peer ML-KEM proposals only.
    on c swanctl --terminate --ike mix-a --timeout 10 >/dev/null 2>&1 || true
    write_conf a hy-b b "$HYBRID_IKE" "$HYBRID_ESP" mix-c c "$PQ_IKE" "$PQ_ESP"
    capture lab-debian13-initiate-required-refused-by-debian12.txt "\`swanctl --initiate --child mix-c\` on $where_a, IKE proposals $PQ_IKE only, towards debian13-c (strongSwan $version_c) offering $CLASSICAL_IKE; $ikes" \
        sh -c 'podman exec debian13-a swanctl --initiate --child mix-c --timeout 20 2>/dev/null; echo "(exit status $?)"'
    log "done; removing the containers and network"
}

main "$@"
