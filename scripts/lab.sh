#!/usr/bin/env bash
# The gpufabric container lab: Debian 12, 13 and/or testing (forky) nodes with systemd and sshd under Podman, on a network of
# their own, reachable over SSH with a key the lab generates. Everything the lab creates carries the label
# gpufabric.lab=<lab name>, so `down` removes exactly that and nothing else.
#
#   scripts/lab.sh up [N]     build the images if their recipe changed, start N nodes (default 4), write the inventory;
#                             with GPUFABRIC_LAB_MONITOR=1 also a monitoring node, "monitor" (inventory group
#                             monitoring), where playbooks/monitoring.yml runs Prometheus and Alertmanager
#   scripts/lab.sh down       remove the lab's nodes, network, inventory and key
#   scripts/lab.sh image      build (or reuse) the image of GPUFABRIC_LAB_RELEASE only; prints its name
#   scripts/lab.sh host-setup install podman, runc and debootstrap when missing and write the Podman config
#   scripts/lab.sh controller-image
#                             build (or reuse) the Debian 13 controller image: the trixie lab image with what an
#                             Ansible controller needs beside Python 3.13 (venv, git, shellcheck); prints its name
#
# Releases: one recipe builds every release, the release is a parameter. GPUFABRIC_LAB_RELEASE (bookworm, trixie or
# forky, Debian testing; debian12, debian13 and debian14 are accepted as aliases; default bookworm) is the release of
# every node, or GPUFABRIC_LAB_RELEASES names one release per node ("bookworm bookworm trixie forky"), so a lab can
# mix releases as a fleet being upgraded does. The image tag is RELEASE-HASH (the hash of the recipe and the release); RELEASE names the newest
# build of each, and :latest stays the bookworm one that Molecule scenarios start by default.
# GPUFABRIC_LAB_PRUNE=0 keeps the images of older recipes (by default a new build removes those of its release).
set -Eeuo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LAB_NAME=${GPUFABRIC_LAB_NAME:-gpufabric-lab}
LAB_SUBNET=${GPUFABRIC_LAB_SUBNET:-10.231.0.0/24}
LAB_MAX_NODES=64
LAB_STORAGE_PREFIX=10.77.0
LAB_MONITOR=${GPUFABRIC_LAB_MONITOR:-0}
# 0 cables the last node straight too (a healthy lab, for benchmarks that count false alarms).
LAB_MISCABLE=${GPUFABRIC_LAB_MISCABLE:-1}
STATE_DIR=$ROOT/.lab/$LAB_NAME
# One inventory file per lab, beside the lab group_vars that apply to every lab.
INVENTORY=$ROOT/inventories/lab/$LAB_NAME.yml
# Labs reuse host names (node01...): each lab gets its own fact cache, removed with the lab, so that facts cached
# from an earlier lab never describe this one. Commands run against a lab export ANSIBLE_CACHE_PLUGIN_CONNECTION.
FACT_CACHE=$ROOT/.cache/facts/$LAB_NAME
IMAGE_REPO=localhost/gpufabric-lab
DEBOOTSTRAP_SCRIPTS=/usr/share/debootstrap/scripts
DEBOOTSTRAP_FALLBACK_SCRIPT=sid
LAB_RELEASES_KNOWN=(bookworm trixie forky)
# The controller image: the lab image of CONTROLLER_RELEASE and these packages (scripts/compat.sh runs the ansible-core
# lines that need a newer Python than the host's in it).
CONTROLLER_REPO=localhost/gpufabric-controller
CONTROLLER_RELEASE=trixie
CONTROLLER_PACKAGES="python3-venv git shellcheck"
# The release :latest names: the one every scenario and helper used before Debian 13 joined.
LAB_DEFAULT_RELEASE=bookworm
PODMAN_CONF=/etc/containers/containers.conf.d/50-gpufabric-lab.conf
# Packages of the node image. Changing this list (or this script's image recipe) changes the image tag. lldpd: every
# lab fabric (this script's leaves, the discover, scheduler and health scenarios) runs it on nodes and switches, and no
# role installs it; in the image, each lab saves an install per container. Without cables it only listens.
IMAGE_PACKAGES=python3,python3-apt,systemd,systemd-sysv,dbus,iproute2,iputils-ping,openssh-server,sudo,procps,kmod,ca-certificates,gnupg,netbase,less,lldpd

die() { echo "lab: $*" >&2; exit 1; }
log() { echo "lab: $*" >&2; }

host_setup() {
    local missing=()
    command -v podman >/dev/null || missing+=(podman)
    command -v runc >/dev/null || missing+=(runc)
    command -v debootstrap >/dev/null || missing+=(debootstrap)
    command -v ssh >/dev/null || missing+=(openssh-client)
    command -v ssh-keygen >/dev/null || missing+=(openssh-client)
    if ((${#missing[@]})); then
        log "installing ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
    # crun fails on this kernel's hybrid cgroups; without explicit ulimits setrlimit is refused (LAB.md).
    local wanted
    wanted=$(printf '%s\n' '# Written by gpufabric.core scripts/lab.sh' '[containers]' \
        'default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]' '[engine]' 'runtime = "runc"')
    if [[ "$(cat "$PODMAN_CONF" 2>/dev/null)" != "$wanted" ]]; then
        mkdir -p "$(dirname "$PODMAN_CONF")"
        printf '%s\n' "$wanted" >"$PODMAN_CONF"
    fi
}

# shellcheck source=scripts/debian-mirror.sh
source "$ROOT/scripts/debian-mirror.sh"

# A release name as the lab knows it: the Debian code name (debian12/debian13 and 12/13 accepted).
release_name() {
    case "$1" in
        bookworm | debian12 | 12) echo bookworm ;;
        trixie | debian13 | 13) echo trixie ;;
        forky | debian14 | 14) echo forky ;;
        *) die "release must be one of ${LAB_RELEASES_KNOWN[*]} (or debian12, debian13, debian14), got '$1'" ;;
    esac
}

# The code name of the host's own release, which its apt sources name.
host_release() {
    local codename
    codename=$(sed -n "s/^VERSION_CODENAME=//p" /etc/os-release)
    [[ -n "$codename" ]] || die "no VERSION_CODENAME in /etc/os-release"
    echo "$codename"
}

image_tag() {
    local release=$1
    # The recipe: this file's image section, the package list, the mirror and the release (and, only for a release
    # the host's debootstrap has no script for, the script it runs instead, so the other releases keep their tags).
    { sed -n '/^build_image()/,/^}/p' "${BASH_SOURCE[0]}"; echo "$IMAGE_PACKAGES"; debian_mirror; echo "$release"
        [[ -e "$DEBOOTSTRAP_SCRIPTS/$release" ]] || echo "debootstrap script: $DEBOOTSTRAP_FALLBACK_SCRIPT"; } |
        sha256sum | cut -c1-12 | sed "s/^/$release-/"
}

# A debootstrap older than a release (bookworm's has no forky script) bootstraps it with its sid script, which is
# what its own testing and trixie scripts are: a copy of debootstrap's data directory that adds that one name.
# Prints the directory to export as DEBOOTSTRAP_DIR, or nothing when the host's debootstrap knows the release.
debootstrap_dir_for() {
    local release=$1 dir entry
    [[ ! -e "$DEBOOTSTRAP_SCRIPTS/$release" ]] || return 0
    [[ -e "$DEBOOTSTRAP_SCRIPTS/$DEBOOTSTRAP_FALLBACK_SCRIPT" ]] ||
        die "debootstrap has neither a $release nor a $DEBOOTSTRAP_FALLBACK_SCRIPT script"
    # One fixed directory per release: a build that died left only symlinks there, replaced here.
    dir=/var/tmp/gpufabric-debootstrap-$release
    rm -rf "$dir"
    mkdir -p "$dir"
    for entry in "$(dirname "$DEBOOTSTRAP_SCRIPTS")"/*; do
        [[ "$entry" == "$DEBOOTSTRAP_SCRIPTS" ]] || ln -s "$entry" "$dir/"
    done
    mkdir "$dir/scripts"
    for entry in "$DEBOOTSTRAP_SCRIPTS"/*; do ln -s "$entry" "$dir/scripts/"; done
    ln -s "$DEBOOTSTRAP_FALLBACK_SCRIPT" "$dir/scripts/$release"
    echo "$dir"
}

build_image() {
    local release=$1 tag=$2 rootfs host started=$SECONDS
    rootfs=$(mktemp -d /var/tmp/gpufabric-rootfs.XXXXXX)
    # shellcheck disable=SC2064  # expand now: the trap must remove this very directory
    trap "rm -rf '$rootfs'" RETURN
    log "building $IMAGE_REPO:$tag with debootstrap from $(debian_mirror) (about a minute)"
    debootstrap --variant=minbase --include="$IMAGE_PACKAGES" "$release" "$rootfs" "$(debian_mirror)" >"$rootfs.log" 2>&1 ||
        { tail -5 "$rootfs.log" >&2; rm -f "$rootfs.log"; die "debootstrap failed"; }
    rm -f "$rootfs.log"
    # Same apt sources and Acquire settings as the host, so roles can install packages in the nodes; the suites
    # the host's sources name (bookworm, bookworm-updates, bookworm-security) become the image's release.
    rm -f "$rootfs/etc/apt/sources.list"
    cp /etc/apt/sources.list.d/*.sources "$rootfs/etc/apt/sources.list.d/" 2>/dev/null || true
    [[ -f /etc/apt/sources.list ]] && cp /etc/apt/sources.list "$rootfs/etc/apt/sources.list"
    host=$(host_release)
    if [[ "$host" != "$release" ]]; then
        find "$rootfs/etc/apt" -maxdepth 2 \( -name '*.sources' -o -name '*.list' \) -exec \
            sed -i -E "/^(Suites:|deb )/s/\\<$host(-updates|-security|-backports)?\\>/$release\\1/g" {} +
    fi
    grep -l '^Acquire::' /etc/apt/apt.conf.d/* 2>/dev/null | xargs -r cp -t "$rootfs/etc/apt/apt.conf.d/"
    # Package lists for those sources, so that roles install without an update of their own (an empty list
    # with a fresh time stamp would pass apt's cache_valid_time and then find no package).
    cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
    cp /etc/hosts "$rootfs/etc/hosts"
    chroot "$rootfs" apt-get update -qq >/dev/null || die "apt-get update in the image failed"
    : >"$rootfs/etc/resolv.conf"
    printf '127.0.0.1 localhost\n::1 localhost\n' >"$rootfs/etc/hosts"
    # Host keys are made at each node's first boot, so that nodes do not share them.
    rm -f "$rootfs"/etc/ssh/ssh_host_*
    cat >"$rootfs/etc/systemd/system/lab-ssh-hostkeys.service" <<'UNIT'
[Unit]
Description=Generate SSH host keys for this lab node
Before=ssh.service
ConditionPathExists=!/etc/ssh/ssh_host_ed25519_key

[Service]
Type=oneshot
ExecStart=/usr/bin/ssh-keygen -A

[Install]
WantedBy=multi-user.target
UNIT
    chroot "$rootfs" systemctl enable lab-ssh-hostkeys.service ssh.service >/dev/null 2>&1
    # Units that cannot work in a container only add noise and slow boots.
    chroot "$rootfs" systemctl mask systemd-udevd.service systemd-udevd-control.socket \
        systemd-udevd-kernel.socket getty@tty1.service console-getty.service >/dev/null 2>&1
    echo 'PermitRootLogin prohibit-password' >"$rootfs/etc/ssh/sshd_config.d/lab.conf"
    echo 'UseDNS no' >>"$rootfs/etc/ssh/sshd_config.d/lab.conf"
    install -d -m 0700 "$rootfs/root/.ssh"
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb
    tar -C "$rootfs" -c . | podman import --change 'CMD ["/sbin/init"]' \
        --change "LABEL gpufabric.lab.release=$release" - "$IMAGE_REPO:$tag" >/dev/null
    log "built $IMAGE_REPO:$tag in $((SECONDS - started)) s"
}

ensure_image() {
    local release tag
    release=$(release_name "$1")
    tag=$(image_tag "$release")
    # One build of a release at a time from this checkout: a second caller (a Molecule scenario's create, while
    # scripts/test.sh builds the images in the background) waits for the first, then reuses its image.
    mkdir -p "$ROOT/.cache"
    exec 8>>"$ROOT/.cache/lab-image-$release.lock"
    flock 8
    if podman image exists "$IMAGE_REPO:$tag"; then
        log "reusing cached image $IMAGE_REPO:$tag"
    else
        local bootstrap_dir
        bootstrap_dir=$(debootstrap_dir_for "$release")
        if [[ -n "$bootstrap_dir" ]]; then
            log "debootstrap has no $release script: using its $DEBOOTSTRAP_FALLBACK_SCRIPT script"
            DEBOOTSTRAP_DIR=$bootstrap_dir build_image "$release" "$tag"
            rm -rf "$bootstrap_dir"
        else
            build_image "$release" "$tag"
        fi
        # Images of older recipes of this release are of no further use; one still used by a container stays.
        # Tags of other releases are never touched; before releases were part of the tag (a bare hash) there
        # was only bookworm.
        local stale=":$release-[0-9a-f]{12}\$"
        [[ "$release" != bookworm ]] || stale="$stale|:[0-9a-f]{12}\$"
        if [[ "${GPUFABRIC_LAB_PRUNE:-1}" != 0 ]]; then
            podman images --format '{{.Repository}}:{{.Tag}}' "$IMAGE_REPO" | grep -E "$stale" |
                grep -v -e ":$tag\$" | xargs -r podman rmi >/dev/null 2>&1 || true
        fi
    fi
    podman tag "$IMAGE_REPO:$tag" "$IMAGE_REPO:$release"
    [[ "$release" != "$LAB_DEFAULT_RELEASE" ]] || podman tag "$IMAGE_REPO:$tag" "$IMAGE_REPO:latest"
    exec 8>&-
    echo "$IMAGE_REPO:$tag"
}

# The controller image, built from the lab image of its release when its tag (that image's and the package list's
# hash) is new; prints its name.
controller_image() {
    local base tag
    base=$(ensure_image "$CONTROLLER_RELEASE")
    tag=$CONTROLLER_RELEASE-$(echo "$base $CONTROLLER_PACKAGES" | sha256sum | cut -c1-12)
    # One build at a time, as for the lab images.
    exec 7>>"$ROOT/.cache/lab-controller-image.lock"
    flock 7
    if ! podman image exists "$CONTROLLER_REPO:$tag"; then
        log "building $CONTROLLER_REPO:$tag from $base"
        printf 'FROM %s\nRUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends %s >/dev/null && rm -rf /var/cache/apt/archives/*.deb\n' \
            "$base" "$CONTROLLER_PACKAGES" | podman build -q -t "$CONTROLLER_REPO:$tag" -f - >/dev/null ||
            die "building the controller image failed"
        podman images --format '{{.Repository}}:{{.Tag}}' "$CONTROLLER_REPO" | grep -v -e ":$tag\$" |
            xargs -r podman rmi >/dev/null 2>&1 || true
    fi
    exec 7>&-
    echo "$CONTROLLER_REPO:$tag"
}

# The release of each node, one a line: GPUFABRIC_LAB_RELEASES (one per node) or GPUFABRIC_LAB_RELEASE for all.
node_releases() {
    local count=$1 words i
    read -r -a words <<<"${GPUFABRIC_LAB_RELEASES:-}"
    if ((${#words[@]} == 0)); then
        for ((i = 1; i <= count; i++)); do release_name "${GPUFABRIC_LAB_RELEASE:-$LAB_DEFAULT_RELEASE}"; done
        return
    fi
    ((${#words[@]} == count)) ||
        die "GPUFABRIC_LAB_RELEASES names ${#words[@]} release(s) for $count node(s): give one per node"
    for ((i = 0; i < count; i++)); do release_name "${words[$i]}"; done
}

validate_count() {
    local n=$1
    [[ "$n" =~ ^[0-9]+$ ]] || die "node count must be a whole number from 1 to $LAB_MAX_NODES, got '$n'"
    ((10#$n >= 1 && 10#$n <= LAB_MAX_NODES)) || die "node count must be from 1 to $LAB_MAX_NODES, got $n"
}

node_name() { printf 'node%02d' "$1"; }

lab_down() {
    local ids
    mapfile -t ids < <(podman ps -aq --filter "label=gpufabric.lab=$LAB_NAME")
    ((${#ids[@]} == 0)) || podman rm -f -t 0 "${ids[@]}" >/dev/null
    if podman network exists "$LAB_NAME" &&
        [[ "$(podman network inspect "$LAB_NAME" --format '{{index .Labels "gpufabric.lab"}}')" == "$LAB_NAME" ]]; then
        podman network rm -f "$LAB_NAME" >/dev/null
    fi
    rm -rf "$STATE_DIR" "$FACT_CACHE"
    [[ ! -f "$INVENTORY" ]] || ! grep -q "gpufabric_lab_name: $LAB_NAME\$" "$INVENTORY" || rm -f "$INVENTORY"
}

write_inventory() {
    local count=$1 i name ip release
    shift
    local releases=("$@")
    {
        echo "# Generated by scripts/lab.sh for lab $LAB_NAME; removed by 'scripts/lab.sh down'."
        echo "all:"
        echo "  vars:"
        echo "    gpufabric_lab_name: $LAB_NAME"
        echo "    ansible_user: root"
        echo "    ansible_ssh_private_key_file: $STATE_DIR/id_ed25519"
        echo "    ansible_ssh_common_args: >-"
        echo "      -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
        echo "    ansible_python_interpreter: /usr/bin/python3"
        echo "  children:"
        echo "    gpu_nodes:"
        echo "      children:"
        echo "        lab:"
        echo "    ipsec:"
        echo "      children:"
        echo "        lab:"
        echo "    lab:"
        echo "      hosts:"
        for ((i = 1; i <= count; i++)); do
            name=$(node_name "$i")
            ip=$(podman inspect "$LAB_NAME-$name" --format "{{(index .NetworkSettings.Networks \"$LAB_NAME\").IPAddress}}")
            echo "        $name:"
            echo "          ansible_host: $ip"
            # The Debian release the node runs, so that scenarios and site tests can tell mixed labs apart.
            echo "          gpufabric_lab_release: ${releases[$((i - 1))]}"
        done
        if [[ "$LAB_MONITOR" == 1 ]]; then
            ip=$(podman inspect "$LAB_NAME-monitor" --format "{{(index .NetworkSettings.Networks \"$LAB_NAME\").IPAddress}}")
            echo "    monitoring:"
            echo "      vars:"
            echo "        # Debian's Prometheus and Alertmanager run here (playbooks/monitoring.yml)."
            echo "        health_monitoring_run_prometheus: true"
            echo "        # Read from this machine across the lab's private network (loopback by default)."
            echo "        health_prometheus_listen_address: 0.0.0.0:9090"
            echo "        health_alertmanager_listen_address: 0.0.0.0:9093"
            echo "      hosts:"
            echo "        monitor:"
            echo "          ansible_host: $ip"
        fi
        # One group per release present, e.g. lab_trixie, for plays that target one release.
        for release in "${LAB_RELEASES_KNOWN[@]}"; do
            [[ " ${releases[*]} " == *" $release "* ]] || continue
            echo "    lab_$release:"
            echo "      hosts:"
            for ((i = 1; i <= count; i++)); do
                [[ "${releases[$((i - 1))]}" != "$release" ]] || echo "        $(node_name "$i"): {}"
            done
        done
    } >"$INVENTORY.tmp"
    mv "$INVENTORY.tmp" "$INVENTORY"
}

wait_for_ssh() {
    local count=$1 i ip deadline name names=()
    deadline=$((SECONDS + 60))
    for ((i = 1; i <= count; i++)); do names+=("$(node_name "$i")"); done
    [[ "$LAB_MONITOR" != 1 ]] || names+=(monitor)
    for name in "${names[@]}"; do
        ip=$(podman inspect "$LAB_NAME-$name" --format "{{(index .NetworkSettings.Networks \"$LAB_NAME\").IPAddress}}")
        until ssh -i "$STATE_DIR/id_ed25519" -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
            -o LogLevel=ERROR -o ConnectTimeout=2 "root@$ip" true 2>/dev/null; do
            ((SECONDS < deadline)) || die "$name ($ip) not reachable over SSH after 60 s"
            sleep 0.5
        done
    done
}

# The lab fabric: two lldpd "leaf switches", rail 0 (eth1) of every node on leaf-a, rail 1 (eth2) on leaf-b, each cable
# a veth pair (point to point: the lab bridge drops LLDP). With three nodes or more the last node has its two cables
# swapped, so that the fabric map has a miscabled host to show (unless GPUFABRIC_LAB_MISCABLE=0). The leaves carry the
# lab's label: `down` removes them.
LAB_LEAVES=(leaf-a leaf-b)

# What a container of a release needs to boot here: sets run_options (podman run options) and run_command.
# systemd 257 (trixie) and later start networkd keeping CAP_SYS_ADMIN across its User= switch; without that
# capability in the container's bounding set the unit fails with 217/USER. systemd 258 and later (forky has 262) run
# only on cgroup v2 and this host mounts v1: a forky container gets its own cgroup namespace, whose v2 root is the
# container's own cgroup, mounted at /sys/fs/cgroup before init. A real host has both.
release_start() {
    local release=$1
    run_options=(--cap-add NET_ADMIN --cap-add NET_RAW)
    run_command=(/sbin/init)
    [[ "$release" == bookworm ]] || run_options+=(--cap-add SYS_ADMIN)
    if [[ "$release" == forky ]]; then
        run_options+=(--cgroupns=private)
        run_command=(/bin/sh -c 'umount -R /sys/fs/cgroup && mount -t cgroup2 cgroup2 /sys/fs/cgroup && exec /sbin/init')
    fi
}

start_leaves() {
    local image=$1 release=$2 leaf run_options run_command
    release_start "$release"
    for leaf in "${LAB_LEAVES[@]}"; do
        podman run -d --name "$LAB_NAME-$leaf" --hostname "$leaf" --label "gpufabric.lab=$LAB_NAME" \
            --label "gpufabric.lab.role=leaf" --network "$LAB_NAME" --systemd=always "${run_options[@]}" \
            "$image" "${run_command[@]}" >/dev/null
    done
}

cable_fabric() {
    local count=$1 i node_pid rail leaf leaf_pid
    for ((i = 1; i <= count; i++)); do
        node_pid=$(podman inspect --format '{{.State.Pid}}' "$LAB_NAME-$(node_name "$i")")
        for rail in 0 1; do
            leaf=${LAB_LEAVES[$rail]}
            ((count < 3 || i < count || LAB_MISCABLE == 0)) || leaf=${LAB_LEAVES[$((1 - rail))]}
            leaf_pid=$(podman inspect --format '{{.State.Pid}}' "$LAB_NAME-$leaf")
            ip link add "eth$((rail + 1))" netns "$node_pid" type veth peer name "swp$i" netns "$leaf_pid"
            nsenter -t "$node_pid" -n ip link set "eth$((rail + 1))" up
            nsenter -t "$leaf_pid" -n ip link set "swp$i" up
        done
    done
}

# lldpd (in the image) sends every 30 s: send now, so that every end has heard the other without waiting. Each
# container's systemd starts lldpd in its own time (later on a loaded machine): wait for its control socket first.
announce_lldp() {
    local name deadline=$((SECONDS + 60))
    for name in "$@"; do
        until podman exec "$name" test -S /run/lldpd.socket; do
            ((SECONDS < deadline)) || die "lldpd in $name has no control socket after 60 s"
            sleep 1
        done
        podman exec "$name" lldpcli update >/dev/null
    done
}

wait_for_lldp() {
    local count=$1 i deadline seen
    deadline=$((SECONDS + 60))
    for ((i = 1; i <= count; i++)); do
        until seen=$(podman exec "$LAB_NAME-$(node_name "$i")" lldpctl -f keyvalue 2>/dev/null) &&
            [[ "$seen" == *"lldp.eth1.chassis.name=leaf-"* && "$seen" == *"lldp.eth2.chassis.name=leaf-"* ]]; do
            ((SECONDS < deadline)) || die "node $(node_name "$i") sees no LLDP from its leaves after 60 s"
            sleep 1
        done
    done
}

lab_up() {
    local count=$1 i name containers listed releases release run_options run_command
    validate_count "$count"
    count=$((10#$count))
    listed=$(node_releases "$count")
    mapfile -t releases <<<"$listed"
    host_setup
    # One image per release in the lab (each built or reused before anything starts).
    local -A images=()
    for release in "${releases[@]}"; do
        [[ -n "${images[$release]:-}" ]] || images[$release]=$(ensure_image "$release")
    done
    lab_down
    # A failed start leaves nothing behind.
    trap 'log "start failed; removing what was created"; lab_down' ERR
    mkdir -p "$STATE_DIR" "$(dirname "$INVENTORY")"
    ssh-keygen -q -t ed25519 -N '' -C "gpufabric-lab-$LAB_NAME" -f "$STATE_DIR/id_ed25519"
    podman network create --label "gpufabric.lab=$LAB_NAME" --subnet "$LAB_SUBNET" "$LAB_NAME" >/dev/null
    for ((i = 1; i <= count; i++)); do
        name=$(node_name "$i")
        release_start "${releases[$((i - 1))]}"
        podman run -d --name "$LAB_NAME-$name" --hostname "$name" --label "gpufabric.lab=$LAB_NAME" \
            --network "$LAB_NAME" --systemd=always "${run_options[@]}" --device /dev/net/tun \
            --label "gpufabric.lab.release=${releases[$((i - 1))]}" \
            -v "$STATE_DIR/id_ed25519.pub:/root/.ssh/authorized_keys:ro" "${images[${releases[$((i - 1))]}]}" \
            "${run_command[@]}" >/dev/null
    done
    # The leaves (and the monitoring node) run the first node's release.
    start_leaves "${images[${releases[0]}]}" "${releases[0]}"
    if [[ "$LAB_MONITOR" == 1 ]]; then
        release_start "${releases[0]}"
        podman run -d --name "$LAB_NAME-monitor" --hostname monitor --label "gpufabric.lab=$LAB_NAME" \
            --label "gpufabric.lab.role=monitor" --network "$LAB_NAME" --systemd=always "${run_options[@]}" \
            -v "$STATE_DIR/id_ed25519.pub:/root/.ssh/authorized_keys:ro" "${images[${releases[0]}]}" \
            "${run_command[@]}" >/dev/null
    fi
    cable_fabric "$count"
    # Each node's "storage VLAN" address, on lo since the kernel has no 802.1Q: IPsec tunnels carry it
    # (userspace ESP cannot tunnel traffic to the IKE peer's own address).
    for ((i = 1; i <= count; i++)); do
        podman exec "$LAB_NAME-$(node_name "$i")" ip addr add "$LAB_STORAGE_PREFIX.$i/32" dev lo
    done
    mapfile -t containers < <(podman ps -q --filter "label=gpufabric.lab=$LAB_NAME")
    announce_lldp "${containers[@]}"
    wait_for_ssh "$count"
    wait_for_lldp "$count"
    write_inventory "$count" "${releases[@]}"
    trap - ERR
    log "$count node(s) (${releases[*]}) up on network $LAB_NAME ($LAB_SUBNET); inventory: ${INVENTORY#"$ROOT"/}"
}

case "${1:-}" in
    up)
        (($# <= 2)) || die "usage: scripts/lab.sh up [N]"
        lab_up "${2:-${GPUFABRIC_LAB_NODES:-4}}"
        ;;
    down) lab_down; log "lab $LAB_NAME removed" ;;
    image)
        release_name "${GPUFABRIC_LAB_RELEASE:-$LAB_DEFAULT_RELEASE}" >/dev/null
        host_setup
        ensure_image "${GPUFABRIC_LAB_RELEASE:-$LAB_DEFAULT_RELEASE}"
        ;;
    host-setup) host_setup ;;
    controller-image) host_setup; controller_image ;;
    *) die "usage: scripts/lab.sh up [N] | down | image | host-setup | controller-image" ;;
esac
