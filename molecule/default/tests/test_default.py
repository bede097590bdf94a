"""The lab node boots systemd and accepts changes from Ansible."""

import hashlib


def test_systemd_is_pid_1(host):
    assert host.process.get(pid=1).comm == "systemd"


def test_marker_written(host):
    marker = host.file("/etc/gpufabric-lab-marker")
    assert marker.is_file
    assert marker.mode == 0o644
    # By checksum: testinfra strips the trailing newline from file content.
    assert marker.sha256sum == hashlib.sha256(b"managed by gpufabric.core molecule\n").hexdigest()


def test_sshd_listens(host):
    assert host.socket("tcp://0.0.0.0:22").is_listening
