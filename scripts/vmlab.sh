#!/usr/bin/env bash
# The gpufabric VM lab: QEMU virtual machines running Debian 12 with Debian's own generic kernel, for what the
# container lab cannot show because it shares this machine's kernel (kernel bonding with LACP, 802.1Q, kernel ESP,
# Soft-RoCE, module options). Every VM has a management NIC (user-mode networking, SSH forwarded to 127.0.0.1)
# and point-to-point data links to each other VM (three per pair, UDP sockets on 127.0.0.1). Everything a lab
# starts is recorded in its state directory .lab/vm-<name>/ (PID files, monitor sockets, overlays), so `down`
# stops exactly that and nothing else. Every VM boots through the image's own bootloader (GRUB for BIOS in the
# MBR of the image's disk, SeaBIOS being QEMU's default firmware), which loads Debian's /vmlinuz and /initrd.img:
# an initramfs rebuilt or a kernel installed inside a VM is what its next boot uses (the rdma role's initramfs and
# reboot flow), as on a real host. The kernel command line is the image's, the same for every VM: the hostname
# and root's SSH key come from QEMU's fw_cfg.
#
#   scripts/vmlab.sh up [N]                  start N VMs (default 2), restoring a saved snapshot when there is one
#   scripts/vmlab.sh down                    stop the lab's VMs by their recorded PIDs, remove state and inventory
#   scripts/vmlab.sh image                   build (or reuse) the base image only; prints its directory
#   scripts/vmlab.sh snapshot [N]            build (or reuse) the image and the saved snapshot of N VMs; starts
#                                            nothing that outlives it (make test runs it beside the lab images)
#   scripts/vmlab.sh link NODE NIC off|on [--one-end]
#                                            pull or restore a data cable, at both ends unless --one-end
#   scripts/vmlab.sh ssh NODE [COMMAND...]   run a command on a VM as root
#   scripts/vmlab.sh monitor NODE COMMAND    send one QEMU monitor (HMP) command to a VM
#
# Environment: GPUFABRIC_VMLAB_NAME (default vmlab), GPUFABRIC_VMLAB_SSH_PORT (first SSH port, default 22400:
# VM i listens on port+i), GPUFABRIC_VMLAB_METRICS_PORT (first forward of node_exporter's port 9100, default 22600:
# VM i's on port+i, for a Prometheus on this machine), GPUFABRIC_VMLAB_LINK_PORT (first UDP port of the data links,
# default 22500),
# GPUFABRIC_VMLAB_ACCEL (kvm or tcg: skip the probe), GPUFABRIC_VMLAB_MEMORY (MiB, default 768),
# GPUFABRIC_VMLAB_SNAPSHOT=0 (always boot, never save nor restore a snapshot).
set -Eeuo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LAB_NAME=vm-${GPUFABRIC_VMLAB_NAME:-vmlab}
LAB_MAX_NODES=3
STATE_DIR=$ROOT/.lab/$LAB_NAME
INVENTORY=$ROOT/inventories/lab/$LAB_NAME.yml
CACHE_DIR=$ROOT/.cache/vmlab
SSH_PORT_BASE=${GPUFABRIC_VMLAB_SSH_PORT:-22400}
METRICS_PORT_BASE=${GPUFABRIC_VMLAB_METRICS_PORT:-22600}
LINK_PORT_BASE=${GPUFABRIC_VMLAB_LINK_PORT:-22500}
MEMORY=${GPUFABRIC_VMLAB_MEMORY:-768}
# Three data links between every pair of VMs: a bond of two members with each VM the other's partner, and a third
# link beside it (a second RDMA rail, as a GPU server has several). Part of a snapshot's name: its devices.
LINKS_PER_PAIR=3
SNAPSHOT_NAME=lab-ready
# TCG is slow and the machine shared: a VM boots to SSH in one to three minutes.
BOOT_TIMEOUT=${GPUFABRIC_VMLAB_BOOT_TIMEOUT:-420}
# Packages of the VM image: the roles' needs and the tools the scenarios run inside, since the management network
# reaches nothing. Changing this list (or the image recipe below) changes the image's hash.
IMAGE_PACKAGES=systemd,systemd-sysv,udev,kmod,dbus,openssh-server,python3,python3-apt,iproute2,iputils-ping,sudo,procps,ca-certificates,netbase,less,initramfs-tools,linux-image-amd64,rdma-core,ibverbs-providers,ibverbs-utils,infiniband-diags,perftest,rdmacm-utils,iperf3,strongswan-swanctl,charon-systemd,strongswan-pki,python3-cryptography,libcharon-extra-plugins,libstrongswan-standard-plugins,libstrongswan-extra-plugins,tcpdump,ethtool,prometheus-node-exporter,lldpd,e2fsprogs,grub-pc-bin

die() { echo "vmlab: $*" >&2; exit 1; }
log() { echo "vmlab: $*" >&2; }

host_setup() {
    local missing=()
    command -v qemu-system-x86_64 >/dev/null || missing+=(qemu-system-x86)
    command -v qemu-img >/dev/null || missing+=(qemu-utils)
    command -v debootstrap >/dev/null || missing+=(debootstrap)
    command -v ssh >/dev/null || missing+=(openssh-client)
    if ((${#missing[@]})); then
        log "installing ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
}

# shellcheck source=scripts/debian-mirror.sh
source "$ROOT/scripts/debian-mirror.sh"

image_tag() {
    # The recipe: this file's image functions, the package list and the mirror.
    { sed -n '/^build_image()/,/^}/p;/^guest_files()/,/^}/p;/^make_bootable_disk()/,/^}/p' "${BASH_SOURCE[0]}"; echo "$IMAGE_PACKAGES"; debian_mirror; } |
        sha256sum | cut -c1-12
}

# Files of the guest that make it a lab node: root on the virtio disk, the management NIC on DHCP, SSH host keys
# made at first boot, root's authorized key and nothing else read from QEMU's fw_cfg (so one image serves every lab).
guest_files() {
    local rootfs=$1
    echo '/dev/vda1 / ext4 rw,errors=remount-ro 0 1' >"$rootfs/etc/fstab"
    printf '[Match]\nName=ens3\n\n[Network]\nDHCP=ipv4\nLinkLocalAddressing=no\nIPv6AcceptRA=no\n' \
        >"$rootfs/etc/systemd/network/10-vmlab-management.network"
    cat >"$rootfs/etc/systemd/system/vmlab-ssh-hostkeys.service" <<'UNIT'
[Unit]
Description=Generate the SSH host key of this lab VM
Before=ssh.service
ConditionPathExists=!/etc/ssh/ssh_host_ed25519_key

[Service]
Type=oneshot
# Ed25519 only: an RSA key takes a minute to make under emulation.
ExecStart=/usr/bin/ssh-keygen -q -t ed25519 -N "" -f /etc/ssh/ssh_host_ed25519_key

[Install]
WantedBy=multi-user.target
UNIT
    cat >"$rootfs/etc/systemd/system/vmlab-authorized-key.service" <<'UNIT'
[Unit]
Description=Install root's SSH key given by the VM lab (QEMU fw_cfg)
Before=ssh.service

[Service]
Type=oneshot
ExecStartPre=/sbin/modprobe qemu_fw_cfg
ExecStart=/bin/sh -c 'install -d -m 0700 /root/.ssh && install -m 0600 /sys/firmware/qemu_fw_cfg/by_name/opt/gpufabric/authorized_keys/raw /root/.ssh/authorized_keys'

[Install]
WantedBy=multi-user.target
UNIT
    # The VM's name, also from fw_cfg: the kernel command line is GRUB's, the same for every VM.
    cat >"$rootfs/etc/systemd/system/vmlab-hostname.service" <<'UNIT'
[Unit]
Description=Set the hostname given by the VM lab (QEMU fw_cfg)
DefaultDependencies=no
After=systemd-remount-fs.service
Before=systemd-networkd.service ssh.service sysinit.target

[Service]
Type=oneshot
ExecStartPre=/sbin/modprobe qemu_fw_cfg
ExecStart=/bin/sh -c 'cat /sys/firmware/qemu_fw_cfg/by_name/opt/gpufabric/hostname/raw >/etc/hostname && cat /etc/hostname >/proc/sys/kernel/hostname'

[Install]
WantedBy=sysinit.target
UNIT
    chroot "$rootfs" systemctl enable systemd-networkd.service vmlab-ssh-hostkeys.service \
        vmlab-authorized-key.service vmlab-hostname.service ssh.service >/dev/null 2>&1
    # Nothing waits for the data links, and no one logs in on a console.
    chroot "$rootfs" systemctl mask systemd-networkd-wait-online.service getty@tty1.service \
        serial-getty@ttyS0.service apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service \
        fstrim.timer \
        >/dev/null 2>&1
    printf 'PermitRootLogin prohibit-password\nUseDNS no\nHostKey /etc/ssh/ssh_host_ed25519_key\n' \
        >"$rootfs/etc/ssh/sshd_config.d/vmlab.conf"
    # Each VM makes its own machine id at first boot.
    : >"$rootfs/etc/machine-id"
    rm -f "$rootfs/var/lib/dbus/machine-id"
}

build_image() {
    local dir=$1 rootfs
    rootfs=$(mktemp -d /var/tmp/gpufabric-vmroot.XXXXXX)
    # shellcheck disable=SC2064  # expand now: the trap must unmount and remove this very directory
    trap "umount '$rootfs/proc' '$rootfs/sys' 2>/dev/null || true; rm -rf --one-file-system '$rootfs' '$dir.tmp'" RETURN
    # The image's / (mktemp makes it 0700).
    chmod 0755 "$rootfs"
    log "building the VM image in ${dir#"$ROOT"/} by debootstrap from $(debian_mirror) (several minutes)"
    debootstrap --variant=minbase --include=systemd,systemd-sysv,ca-certificates bookworm "$rootfs" \
        "$(debian_mirror)" >"$rootfs.log" 2>&1 ||
        { tail -5 "$rootfs.log" >&2; rm -f "$rootfs.log"; die "debootstrap failed"; }
    rm -f "$rootfs.log"
    # Same apt sources and Acquire settings as the host.
    rm -f "$rootfs/etc/apt/sources.list"
    cp /etc/apt/sources.list.d/*.sources "$rootfs/etc/apt/sources.list.d/" 2>/dev/null || true
    [[ -f /etc/apt/sources.list ]] && cp /etc/apt/sources.list "$rootfs/etc/apt/sources.list"
    grep -l '^Acquire::' /etc/apt/apt.conf.d/* 2>/dev/null | xargs -r cp -t "$rootfs/etc/apt/apt.conf.d/"
    cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
    # Fresh proc and sysfs instances, not bind mounts of the host's: nothing to propagate back when unmounted.
    mount -t proc proc "$rootfs/proc"
    mount -t sysfs sysfs "$rootfs/sys"
    chroot "$rootfs" apt-get update -qq >/dev/null || die "apt-get update in the image failed"
    # The generic kernel (the cloud flavour has no rdma_rxe); its initramfs is built here by initramfs-tools.
    DEBIAN_FRONTEND=noninteractive chroot "$rootfs" apt-get install -y -qq --no-install-recommends \
        ${IMAGE_PACKAGES//,/ } >"$rootfs.log" 2>&1 ||
        { tail -5 "$rootfs.log" >&2; rm -f "$rootfs.log"; die "installing the image's packages failed"; }
    rm -f "$rootfs.log"
    umount "$rootfs/proc" "$rootfs/sys"
    : >"$rootfs/etc/resolv.conf"
    printf '127.0.0.1 localhost\n::1 localhost\n' >"$rootfs/etc/hosts"
    rm -f "$rootfs"/etc/ssh/ssh_host_*
    guest_files "$rootfs"
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb
    mkdir -p "$dir.tmp"
    # The image's kernel, for the accelerator probe only: every VM boots through the image's own GRUB.
    local kernel
    kernel=$(basename "$(ls "$rootfs"/boot/vmlinuz-*)")
    cp "$rootfs/boot/$kernel" "$dir.tmp/vmlinuz"
    echo "${kernel#vmlinuz-}" >"$dir.tmp/kernel-release"
    # shellcheck disable=SC2016  # dpkg-query's own format, not a shell expansion
    chroot "$rootfs" dpkg-query -W -f '${Version}\n' "linux-image-${kernel#vmlinuz-}" >"$dir.tmp/kernel-version"
    make_bootable_disk "$rootfs" "$dir.tmp/root.raw"
    qemu-img convert -O qcow2 "$dir.tmp/root.raw" "$dir.tmp/base.qcow2"
    rm -f "$dir.tmp/root.raw"
    mv "$dir.tmp" "$dir"
}

# The disk, made in a plain file without loop devices, mounts or a bootloader installed by the host: an MBR with
# one Linux partition at 1 MiB holding the root filesystem (mkfs.ext4 -d writes it at that offset), GRUB's boot
# sector in the MBR and its core image in the gap before the partition. GRUB for BIOS (SeaBIOS is QEMU's default
# firmware), made in the image's chroot from grub-pc-bin: grub-mkimage writes core.img's blocklist for sectors that
# follow its first one, and boot.img reads core.img from sector 1, their defaults, so two dd's place them as
# grub-bios-setup would and nothing needs a block device. The embedded configuration boots Debian's own /vmlinuz
# and /initrd.img symlinks: an initramfs rebuilt in the guest (update-initramfs) and a kernel upgrade take
# effect at the next boot, as on a real host, which QEMU's -kernel/-initrd never showed.
make_bootable_disk() {
    local rootfs=$1 disk=$2 grub=$1/usr/lib/grub/i386-pc
    [[ -e "$rootfs/vmlinuz" && -e "$rootfs/initrd.img" ]] || die "the image has no /vmlinuz and /initrd.img symlinks"
    printf '%s\n' 'set root=(hd0,msdos1)' 'linux /vmlinuz root=/dev/vda1 rw console=ttyS0' 'initrd /initrd.img' 'boot' \
        >"$rootfs/tmp/vmlab-grub.cfg"
    chroot "$rootfs" grub-mkimage -O i386-pc -d /usr/lib/grub/i386-pc -o /tmp/vmlab-core.img -p '(hd0,msdos1)/boot/grub' \
        -c /tmp/vmlab-grub.cfg biosdisk part_msdos ext2 linux boot
    mv "$rootfs/tmp/vmlab-core.img" "$disk.core"
    rm -f "$rootfs/tmp/vmlab-grub.cfg"
    (($(stat -c %s "$disk.core") < 2047 * 512)) || die "GRUB's core image does not fit before the partition"
    mkfs.ext4 -q -F -L vmlab-root -d "$rootfs" -E offset=$((2048 * 512)) "$disk" 4G
    # The partition table (one bootable Linux partition, LBA only) and the boot signature.
    python3 - "$disk" <<'PY'
import os, struct, sys
sectors = os.path.getsize(sys.argv[1]) // 512
entry = struct.pack("<B3sB3sII", 0x80, b"\xfe\xff\xff", 0x83, b"\xfe\xff\xff", 2048, sectors - 2048)
with open(sys.argv[1], "r+b") as disk:
    disk.seek(446)
    disk.write(entry + bytes(48) + b"\x55\xaa")
PY
    # boot.img's code only (the first 440 bytes), not over the partition table.
    dd if="$grub/boot.img" of="$disk" bs=440 count=1 conv=notrunc status=none
    dd if="$disk.core" of="$disk" bs=512 seek=1 conv=notrunc status=none
    rm -f "$disk.core"
}

# One image and snapshot build at a time per cache: a lab started while another command (make test's
# `snapshot`) builds them waits, then finds them made. fd 9 holds the lock until release_build_lock or the
# script's exit; QEMU is started without it (it daemonizes and would hold the lock while the VM runs).
take_build_lock() {
    mkdir -p "$CACHE_DIR"
    exec 9>"$CACHE_DIR/build.lock"
    flock 9
}

release_build_lock() { exec 9>&-; }

ensure_image() {
    local tag dir start
    tag=$(image_tag)
    dir=$CACHE_DIR/image-$tag
    if [[ -f "$dir/base.qcow2" ]]; then
        log "reusing cached image ${dir#"$ROOT"/} (kernel $(cat "$dir/kernel-release"))"
    else
        mkdir -p "$CACHE_DIR"
        start=$SECONDS
        # Its tools' chatter goes to stderr: stdout is this function's answer.
        build_image "$dir" >&2
        log "image built in $((SECONDS - start)) s: $(du -h --apparent-size "$dir/base.qcow2" | cut -f1) qcow2" \
            "($(du -h "$dir/base.qcow2" | cut -f1) on disk), kernel $(cat "$dir/kernel-release")"
        # Images (and their snapshots) of older recipes are of no further use, unless a running lab uses one.
        local old
        for old in "$CACHE_DIR"/image-*; do
            [[ "$old" == "$dir" ]] && continue
            grep -qs "$old" "$ROOT"/.lab/vm-*/image 2>/dev/null || rm -rf "$old"
        done
    fi
    echo "$dir"
}

validate_count() {
    local n=$1
    [[ "$n" =~ ^[0-9]+$ ]] || die "VM count must be a whole number from 1 to $LAB_MAX_NODES, got '$n'"
    ((10#$n >= 1 && 10#$n <= LAB_MAX_NODES)) || die "VM count must be from 1 to $LAB_MAX_NODES, got $n"
}

# The environment's settings, checked before anything is built or started.
validate_settings() {
    [[ -z "${GPUFABRIC_VMLAB_ACCEL:-}" || "$GPUFABRIC_VMLAB_ACCEL" == kvm || "$GPUFABRIC_VMLAB_ACCEL" == tcg ]] ||
        die "GPUFABRIC_VMLAB_ACCEL must be kvm or tcg, got '$GPUFABRIC_VMLAB_ACCEL'"
    if ! [[ "$MEMORY" =~ ^[0-9]+$ ]] || ((10#$MEMORY < 512)); then
        die "GPUFABRIC_VMLAB_MEMORY must be a number of MiB, at least 512, got '$MEMORY'"
    fi
    local name port
    for name in GPUFABRIC_VMLAB_SSH_PORT GPUFABRIC_VMLAB_METRICS_PORT GPUFABRIC_VMLAB_LINK_PORT; do
        port=${!name:-22400}
        if ! [[ "$port" =~ ^[0-9]+$ ]] || ((10#$port < 1024 || 10#$port > 65000)); then
            die "$name must be a port number from 1024 to 65000, got '$port'"
        fi
    done
}

node_name() { printf 'vm%02d' "$1"; }

# The data links of a lab of COUNT VMs, one line each: node nic peer peer_nic local_port peer_port. NICs are
# numbered from ens4 by PCI slot (the management NIC is ens3), in the order of the peers.
link_table() {
    local count=$1 a b k link=0
    local -A next_slot
    for ((a = 1; a <= count; a++)); do next_slot[$a]=4; done
    for ((a = 1; a <= count; a++)); do
        for ((b = a + 1; b <= count; b++)); do
            for ((k = 0; k < LINKS_PER_PAIR; k++)); do
                local pa=$((LINK_PORT_BASE + 2 * link)) pb=$((LINK_PORT_BASE + 2 * link + 1))
                echo "$(node_name "$a") ens${next_slot[$a]} $(node_name "$b") ens${next_slot[$b]} $pa $pb"
                echo "$(node_name "$b") ens${next_slot[$b]} $(node_name "$a") ens${next_slot[$a]} $pb $pa"
                next_slot[$a]=$((next_slot[$a] + 1))
                next_slot[$b]=$((next_slot[$b] + 1))
                link=$((link + 1))
            done
        done
    done
}

# Stable MAC addresses: 52:54:00:67:<vm>:<slot>.
mac_of() { printf '52:54:00:67:%02x:%02x' "$1" "$2"; }

# KVM when it works here, else TCG. Nested KVM aborts or hangs on some hosts, so a short boot of the kernel
# (without a root filesystem: under KVM it panics within seconds and QEMU exits) decides, not the presence of
# /dev/kvm. The answer is kept until the host reboots or QEMU changes.
probe_accel() {
    local image=$1 out key cached=$CACHE_DIR/accel-probe
    if [[ -n "${GPUFABRIC_VMLAB_ACCEL:-}" ]]; then
        echo "$GPUFABRIC_VMLAB_ACCEL"
        return
    fi
    key="$(cat /proc/sys/kernel/random/boot_id) $(qemu-system-x86_64 --version | head -1)"
    if [[ -f "$cached" && "$(head -1 "$cached")" == "$key" ]]; then
        tail -1 "$cached"
        return
    fi
    local accel=tcg
    if [[ -r /dev/kvm && -w /dev/kvm ]]; then
        out=$(timeout 20 qemu-system-x86_64 -enable-kvm -cpu host -m 256 -nodefaults -no-user-config -display none \
            -serial stdio -no-reboot -kernel "$image/vmlinuz" -append 'console=ttyS0 panic=-1' 2>&1 || true)
        grep -q 'Kernel panic' <<<"$out" && accel=kvm
    fi
    log "accelerator probe: $accel"
    printf '%s\n%s\n' "$key" "$accel" >"$cached"
    echo "$accel"
}

accel_args() {
    case $1 in
        kvm) echo "-enable-kvm -cpu host" ;;
        # -cpu max exposes AES-NI (the guest's ESP then uses rfc4106-gcm-aesni); a smaller translation cache keeps
        # a VM near 0.5 GiB.
        tcg) echo "-accel tcg,tb-size=256 -cpu max" ;;
    esac
}

qemu_start() {
    local i=$1 image=$2 accel=$3 restore=$4 name port
    name=$(node_name "$i")
    port=$((SSH_PORT_BASE + i))
    local args=(-name "$name" -machine pc -m "$MEMORY" -smp 1 -nodefaults -no-user-config -display none
        -daemonize -pidfile "$STATE_DIR/$name.pid" -serial "file:$STATE_DIR/$name.console.log"
        -monitor "unix:$STATE_DIR/$name.monitor,server=on,wait=off"
        -fw_cfg "name=opt/gpufabric/authorized_keys,file=$STATE_DIR/id_ed25519.pub"
        -fw_cfg "name=opt/gpufabric/hostname,string=$name"
        -drive "file=$STATE_DIR/$name.qcow2,if=none,id=disk0,format=qcow2,cache=unsafe,discard=unmap"
        -device "virtio-blk-pci,drive=disk0,addr=0x10,bootindex=0"
        -device "virtio-rng-pci,addr=0x11"
        -netdev "user,id=mgmt,restrict=on,hostfwd=tcp:127.0.0.1:$port-:22,hostfwd=tcp:127.0.0.1:$((METRICS_PORT_BASE + i))-:9100"
        -device "virtio-net-pci,netdev=mgmt,id=nic-ens3,mac=$(mac_of "$i" 3),addr=0x3,romfile=")
    local node nic _peer _peer_nic lport pport slot
    while read -r node nic _peer _peer_nic lport pport; do
        [[ "$node" == "$name" ]] || continue
        slot=${nic#ens}
        # Without a reported speed and duplex the bonding driver never negotiates LACP on virtio-net.
        args+=(-netdev "socket,id=$nic,udp=127.0.0.1:$pport,localaddr=127.0.0.1:$lport"
            -device "virtio-net-pci,netdev=$nic,id=nic-$nic,mac=$(mac_of "$i" "$slot"),addr=$(printf '0x%x' "$slot"),speed=100000,duplex=full,romfile=")
    done <"$STATE_DIR/links"
    [[ "$restore" == yes ]] && args+=(-loadvm "$SNAPSHOT_NAME")
    # shellcheck disable=SC2046  # the accelerator's options are separate words
    qemu-system-x86_64 $(accel_args "$accel") "${args[@]}" 9>&-
}

# One HMP command on a VM's monitor socket; prints its output, fails when QEMU answers with an error.
monitor() {
    local name=$1 command=$2
    [[ -S "$STATE_DIR/$name.monitor" ]] || die "no monitor for $name in ${STATE_DIR#"$ROOT"/} (is the lab up?)"
    python3 - "$STATE_DIR/$name.monitor" "$command" <<'PY'
import re, socket, sys
sock = socket.socket(socket.AF_UNIX)
sock.connect(sys.argv[1])
sock.settimeout(900)
def until_prompt():
    data = b""
    while not data.endswith(b"(qemu) "):
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data.decode(errors="replace")
until_prompt()
sock.sendall(sys.argv[2].encode() + b"\n")
# The monitor echoes the command with terminal escapes: drop those and the echoed first line.
answer = re.sub(r"\x1b\[[0-9;]*[A-Za-z]|\r", "", until_prompt()).split("\n")[1:]
text = "\n".join(line for line in answer if line != "(qemu) ").strip()
if text:
    print(text)
sys.exit(1 if re.search(r"(?i)\berror\b", text) else 0)
PY
}

node_ssh() {
    local i=$1
    shift
    # shellcheck disable=SC2029  # the command runs on the VM as given
    ssh -i "$STATE_DIR/id_ed25519" -p "$((SSH_PORT_BASE + i))" -o BatchMode=yes -o StrictHostKeyChecking=no \
        -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ConnectTimeout=5 root@127.0.0.1 "$@"
}

wait_for_ssh() {
    local count=$1 i deadline
    deadline=$((SECONDS + BOOT_TIMEOUT))
    for ((i = 1; i <= count; i++)); do
        until node_ssh "$i" true 2>/dev/null; do
            if ((SECONDS >= deadline)); then
                tail -5 "$STATE_DIR/$(node_name "$i").console.log" >&2 || true
                die "$(node_name "$i") not reachable over SSH on 127.0.0.1:$((SSH_PORT_BASE + i)) after $BOOT_TIMEOUT s"
            fi
            sleep 2
        done
    done
}

# A restored VM resumes with the clock and random state of the moment it was saved, like every other restore.
after_restore() {
    local count=$1 i
    for ((i = 1; i <= count; i++)); do
        head -c 4096 /dev/urandom | node_ssh "$i" "cat >/dev/urandom && date -u -s @$(date +%s.%N) >/dev/null"
    done
}

pid_of() {
    local pid
    pid=$(cat "$STATE_DIR/$1.pid" 2>/dev/null) || return 1
    # Only a QEMU started for this state directory: a PID file can outlive its process and the PID be reused.
    [[ "$pid" =~ ^[0-9]+$ ]] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$STATE_DIR/$1.monitor" &&
        echo "$pid"
}

stop_vms() {
    local pidfile name pid pids=()
    for pidfile in "$STATE_DIR"/vm*.pid; do
        [[ -e "$pidfile" ]] || continue
        name=$(basename "$pidfile" .pid)
        if pid=$(pid_of "$name"); then
            kill "$pid" 2>/dev/null || true
            pids+=("$pid")
        fi
    done
    local deadline=$((SECONDS + 30))
    for pid in "${pids[@]}"; do
        while kill -0 "$pid" 2>/dev/null; do
            if ((SECONDS >= deadline)); then kill -KILL "$pid" 2>/dev/null || true; fi
            sleep 0.2
        done
    done
    rm -f "$STATE_DIR"/vm*.pid
}

lab_down() {
    [[ -d "$STATE_DIR" ]] && stop_vms
    rm -rf "$STATE_DIR"
    [[ ! -f "$INVENTORY" ]] || ! grep -q "gpufabric_lab_name: $LAB_NAME\$" "$INVENTORY" || rm -f "$INVENTORY"
}

write_inventory() {
    local count=$1 i name node nic peer peer_nic _lport _pport
    {
        echo "# Generated by scripts/vmlab.sh for lab $LAB_NAME; removed by 'scripts/vmlab.sh down'."
        echo "all:"
        echo "  vars:"
        echo "    gpufabric_lab_name: $LAB_NAME"
        echo "    ansible_user: root"
        echo "    ansible_host: 127.0.0.1"
        echo "    ansible_ssh_private_key_file: $STATE_DIR/id_ed25519"
        echo "    ansible_ssh_common_args: >-"
        echo "      -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
        echo "    ansible_python_interpreter: /usr/bin/python3"
        echo "  children:"
        echo "    vmlab:"
        echo "      hosts:"
        for ((i = 1; i <= count; i++)); do
            name=$(node_name "$i")
            echo "        $name:"
            echo "          ansible_port: $((SSH_PORT_BASE + i))"
            echo "          vmlab_management_interface: ens3"
            echo "          vmlab_data_links:"
            while read -r node nic peer peer_nic _lport _pport; do
                [[ "$node" == "$name" ]] || continue
                echo "            - {interface: $nic, mac: \"$(mac_of "$i" "${nic#ens}")\", peer: $peer, peer_interface: $peer_nic}"
            done <"$STATE_DIR/links"
        done
    } >"$INVENTORY.tmp"
    mv "$INVENTORY.tmp" "$INVENTORY"
}

# Boot the VMs from fresh overlays, then save each one's running state so later labs restore it in seconds.
boot_and_save() {
    local count=$1 image=$2 accel=$3 snapdir=$4 i name start
    start=$SECONDS
    for ((i = 1; i <= count; i++)); do
        name=$(node_name "$i")
        qemu-img create -q -f qcow2 -F qcow2 -b "$image/base.qcow2" "$STATE_DIR/$name.qcow2"
        qemu_start "$i" "$image" "$accel" no
    done
    wait_for_ssh "$count"
    for ((i = 1; i <= count; i++)); do
        node_ssh "$i" 'systemctl is-system-running --wait >/dev/null; sync' || true
    done
    log "$count VM(s) booted to SSH in $((SECONDS - start)) s ($accel)"
    [[ "${GPUFABRIC_VMLAB_SNAPSHOT:-1}" == 0 ]] && return
    start=$SECONDS
    rm -rf "$snapdir.tmp"
    mkdir -p "$snapdir.tmp"
    for ((i = 1; i <= count; i++)); do
        name=$(node_name "$i")
        monitor "$name" "savevm $SNAPSHOT_NAME" >/dev/null
    done
    stop_vms
    for ((i = 1; i <= count; i++)); do
        mv "$STATE_DIR/$(node_name "$i").qcow2" "$snapdir.tmp/"
    done
    cp "$STATE_DIR/id_ed25519" "$STATE_DIR/id_ed25519.pub" "$snapdir.tmp/"
    rm -rf "$snapdir"
    mv "$snapdir.tmp" "$snapdir"
    log "snapshot saved in $((SECONDS - start)) s: ${snapdir#"$ROOT"/} ($(du -sh "$snapdir" | cut -f1))"
}

restore() {
    local count=$1 image=$2 accel=$3 snapdir=$4 i name start
    start=$SECONDS
    cp "$snapdir/id_ed25519" "$snapdir/id_ed25519.pub" "$STATE_DIR/"
    chmod 0600 "$STATE_DIR/id_ed25519"
    for ((i = 1; i <= count; i++)); do
        name=$(node_name "$i")
        cp --sparse=always "$snapdir/$name.qcow2" "$STATE_DIR/$name.qcow2"
        # The saved overlay names the base image by the path of the checkout that saved it (a cache shared
        # between worktrees through a link): point it at this checkout's path of the same image.
        qemu-img rebase -u -F qcow2 -b "$image/base.qcow2" "$STATE_DIR/$name.qcow2"
        qemu_start "$i" "$image" "$accel" yes
    done
    wait_for_ssh "$count"
    after_restore "$count"
    log "$count VM(s) restored from ${snapdir#"$ROOT"/} in $((SECONDS - start)) s ($accel)"
}

# Start a lab of N VMs; with "save-only", only make sure the snapshot of such a lab exists, and leave nothing running.
lab_up() {
    local count=$1 mode=${2:-start} image accel snapdir
    validate_count "$count"
    count=$((10#$count))
    validate_settings
    host_setup
    take_build_lock
    image=$(ensure_image)
    lab_down
    # A failed start leaves nothing behind.
    trap 'log "start failed; removing what was created"; lab_down' ERR
    mkdir -p "$STATE_DIR" "$(dirname "$INVENTORY")"
    echo "$image" >"$STATE_DIR/image"
    accel=$(probe_accel "$image")
    echo "$accel" >"$STATE_DIR/accel"
    # Later commands (ssh, link) find the VMs on these ports whatever their environment.
    echo "$SSH_PORT_BASE" >"$STATE_DIR/ssh-port-base"
    link_table "$count" >"$STATE_DIR/links"
    # A snapshot holds the devices of a lab of this size, on this accelerator, with this memory size.
    snapdir=$image/snapshot-$accel-n$count-l$LINKS_PER_PAIR-m$MEMORY
    if [[ "${GPUFABRIC_VMLAB_SNAPSHOT:-1}" == 0 ]]; then
        release_build_lock
        ssh-keygen -q -t ed25519 -N '' -C "gpufabric-$LAB_NAME" -f "$STATE_DIR/id_ed25519"
        boot_and_save "$count" "$image" "$accel" "$snapdir"
    else
        if [[ ! -d "$snapdir" ]]; then
            ssh-keygen -q -t ed25519 -N '' -C "gpufabric-$LAB_NAME" -f "$STATE_DIR/id_ed25519"
            boot_and_save "$count" "$image" "$accel" "$snapdir"
        fi
        release_build_lock
        if [[ "$mode" == save-only ]]; then
            trap - ERR
            lab_down
            log "snapshot ready: ${snapdir#"$ROOT"/}"
            return
        fi
        restore "$count" "$image" "$accel" "$snapdir"
    fi
    write_inventory "$count"
    trap - ERR
    log "$count VM(s) up; inventory: ${INVENTORY#"$ROOT"/}; node_exporter (port 9100) of vm01 forwarded from" \
        "127.0.0.1:$((METRICS_PORT_BASE + 1)), the next VMs' from the next ports; data links:" \
        "$(awk '$1 < $3 {printf "%s:%s-%s:%s ", $1, $2, $3, $4}' "$STATE_DIR/links")"
}

node_index() {
    local name=$1
    [[ "$name" =~ ^vm([0-9]{2})$ ]] || die "unknown VM '$name' (names are vm01, vm02...)"
    [[ -e "$STATE_DIR/$name.pid" ]] || die "$name is not running in lab $LAB_NAME"
    echo $((10#${BASH_REMATCH[1]}))
}

set_link() {
    local node=$1 nic=$2 state=$3 ends=${4:-both} peer peer_nic
    node_index "$node" >/dev/null
    [[ "$state" == on || "$state" == off ]] || die "link state must be on or off, got '$state'"
    read -r peer peer_nic < <(awk -v n="$node" -v i="$nic" '$1 == n && $2 == i {print $3, $4}' "$STATE_DIR/links")
    [[ -n "${peer:-}" ]] || die "$node has no data link $nic (see ${STATE_DIR#"$ROOT"/}/links)"
    monitor "$node" "set_link $nic $state"
    [[ "$ends" == one ]] || monitor "$peer" "set_link $peer_nic $state"
    log "cable $node:$nic - $peer:$peer_nic $state$([[ "$ends" == one ]] && echo " (at $node's end only)")"
}

[[ "${1:-}" != up && -f "$STATE_DIR/ssh-port-base" ]] && SSH_PORT_BASE=$(cat "$STATE_DIR/ssh-port-base")
case "${1:-}" in
    up)
        (($# <= 2)) || die "usage: scripts/vmlab.sh up [N]"
        lab_up "${2:-${GPUFABRIC_VMLAB_NODES:-2}}"
        ;;
    down) lab_down; log "lab $LAB_NAME removed" ;;
    image) host_setup; take_build_lock; ensure_image ;;
    snapshot)
        (($# <= 2)) || die "usage: scripts/vmlab.sh snapshot [N]"
        [[ "${GPUFABRIC_VMLAB_SNAPSHOT:-1}" != 0 ]] || die "snapshot with GPUFABRIC_VMLAB_SNAPSHOT=0 saves nothing"
        lab_up "${2:-${GPUFABRIC_VMLAB_NODES:-2}}" save-only
        ;;
    link)
        [[ $# == 4 || ($# == 5 && "$5" == --one-end) ]] || die "usage: scripts/vmlab.sh link NODE NIC off|on [--one-end]"
        set_link "$2" "$3" "$4" "$([[ "${5:-}" == --one-end ]] && echo one || echo both)"
        ;;
    ssh)
        (($# >= 2)) || die "usage: scripts/vmlab.sh ssh NODE [COMMAND...]"
        index=$(node_index "$2")
        shift 2
        node_ssh "$index" "$@"
        ;;
    monitor)
        (($# == 3)) || die "usage: scripts/vmlab.sh monitor NODE COMMAND"
        node_index "$2" >/dev/null
        monitor "$2" "$3"
        ;;
    *) die "usage: scripts/vmlab.sh up [N] | down | image | snapshot [N] | link NODE NIC off|on [--one-end] | ssh NODE [COMMAND...] | monitor NODE COMMAND" ;;
esac
