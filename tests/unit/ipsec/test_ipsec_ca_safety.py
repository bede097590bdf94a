"""gpufabric.core.ipsec_ca under concurrency, after a kill, and in folders it must not trust.

The module runs as a real process (its own Python file with an arguments file, as Ansible's module runner starts it),
two at once where concurrency is the point, on real keys and certificates. The kill is a real SIGKILL: a child
process runs the module and kills itself at the rename of the CA key, the instant between the key's temporary file
being written and its rename.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from ansible_collections.gpufabric.core.plugins.module_utils.ipsec import ca as ipsec_ca
from ansible_collections.gpufabric.core.plugins.module_utils.ipsec.inputs import ipsec_problems

ROOT = Path(__file__).resolve().parents[3]
MODULE = ROOT / "plugins" / "modules" / "ipsec_ca.py"
PASSPHRASE = "unit CA passphrase 0123456789"
TRIALS = 20
NOBODY = 65534
AS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")


def arguments(pki, **extra):
    args = {"key_path": str(pki / "ca.key"), "certificate_path": str(pki / "ca.crt"), "crl_path": str(pki / "crl.pem"),
            "issued_dir": str(pki / "issued"), "passphrase": PASSPHRASE}
    args.update(extra)
    return args


def environment():
    return dict(os.environ, PYTHONPATH=str(ROOT / ".build" / "collections"))


def start(folder, args, name="args.json"):
    """The module as a process of its own, as Ansible's module runner starts it: python ipsec_ca.py ARGS_FILE."""
    args_file = folder / name
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    return subprocess.Popen([sys.executable, str(MODULE), str(args_file)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=environment())


def finish(process):
    out, err = process.communicate(timeout=120)
    return process.returncode, json.loads(out) if out.strip() else {}, err


def run(folder, args):
    return finish(start(folder, args))


def temporaries(pki):
    return sorted(path.name for path in pki.iterdir() if path.name.startswith(".gpufabric-"))


def assert_one_consistent_ca(pki):
    key = serialization.load_pem_private_key((pki / "ca.key").read_bytes(), PASSPHRASE.encode())
    certificate = x509.load_pem_x509_certificate((pki / "ca.crt").read_bytes())
    assert ipsec_ca.usability_problems(certificate, key, 365, ipsec_ca.datetime.datetime.now(
        ipsec_ca.datetime.timezone.utc)) == []


def test_two_ca_runs_at_once_leave_one_consistent_ca(tmp_path):
    """Before the lock, two first runs at once left a key and a certificate of two different CAs in 1 to 9 of 20
    trials, and each run returned its own CA certificate to its hosts."""
    for trial in range(TRIALS):
        folder = tmp_path / ("trial%02d" % trial)
        folder.mkdir()
        pki = folder / "pki"
        first = start(folder, arguments(pki), "first.json")
        second = start(folder, arguments(pki), "second.json")
        results = [finish(first), finish(second)]
        for returncode, result, err in results:
            assert returncode == 0, (trial, result, err)
        assert_one_consistent_ca(pki)
        on_disk = (pki / "ca.crt").read_text()
        # Both runs hand their hosts the CA that is on disk; exactly one of them created it.
        assert [result["ca_certificate"] for unused_rc, result, unused_err in results] == [on_disk, on_disk], trial
        assert sorted(len(result["created"]) for unused_rc, result, unused_err in results) == [0, 2], trial
        assert temporaries(pki) == []


KILLED_AT_KEY_RENAME = textwrap.dedent("""
    import json, os, signal, sys
    with open(sys.argv[1]) as handle:  # AnsibleModule reads its arguments from the same file
        key_path = json.load(handle)["ANSIBLE_MODULE_ARGS"]["key_path"]
    real_rename = os.rename
    def rename(source, target, *rest, **named):
        if target == key_path:
            os.kill(os.getpid(), signal.SIGKILL)
        return real_rename(source, target, *rest, **named)
    os.rename = rename
    from ansible_collections.gpufabric.core.plugins.modules import ipsec_ca
    ipsec_ca.main()
""")


def test_killed_run_leaves_no_key_in_a_temporary_file_after_the_next_run(tmp_path):
    pki = tmp_path / "pki"
    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": arguments(pki)}))
    killed = subprocess.run([sys.executable, "-c", KILLED_AT_KEY_RENAME, str(args_file)], capture_output=True,
                            text=True, env=environment(), timeout=120, check=False)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    # The kill came between the write and the rename: the whole key lies in a temporary file, 0600.
    [leftover] = temporaries(pki)
    assert b"ENCRYPTED PRIVATE KEY" in (pki / leftover).read_bytes()
    assert oct((pki / leftover).stat().st_mode & 0o777) == "0o600"
    assert not (pki / "ca.key").exists()

    returncode, result, err = run(tmp_path, arguments(pki))
    assert returncode == 0, (result, err)
    assert result["removed"] == [str(pki / leftover)] and result["changed"] is True
    assert temporaries(pki) == []
    assert_one_consistent_ca(pki)


def test_new_ca_key_is_pkcs8_encrypted_with_scrypt_and_read_by_openssl(tmp_path):
    """Before, the key was traditional PEM encryption: AES with a key derived from the passphrase by one MD5 round."""
    returncode, result, err = run(tmp_path, arguments(tmp_path / "pki"))
    assert returncode == 0, (result, err)
    key_file = tmp_path / "pki" / "ca.key"
    assert key_file.read_text().startswith("-----BEGIN ENCRYPTED PRIVATE KEY-----")
    parsed = subprocess.run(["openssl", "asn1parse", "-in", str(key_file)], capture_output=True, text=True, check=True)
    assert ":PBES2" in parsed.stdout and ":scrypt" in parsed.stdout and ":aes-256-cbc" in parsed.stdout
    assert ":%X" % ipsec_ca.SCRYPT_N in parsed.stdout.replace("INTEGER           ", "")
    read = subprocess.run(["openssl", "pkey", "-in", str(key_file), "-passin", "pass:" + PASSPHRASE, "-noout"],
                          capture_output=True, text=True, check=False)
    assert read.returncode == 0, read.stderr
    wrong = subprocess.run(["openssl", "pkey", "-in", str(key_file), "-passin", "pass:not it", "-noout"],
                           capture_output=True, text=True, check=False)
    assert wrong.returncode != 0


def test_existing_traditional_pem_key_is_still_read_and_a_warning_says_how_to_convert(tmp_path):
    pki = tmp_path / "pki"
    pki.mkdir(mode=0o700)
    key = ec.generate_private_key(ec.SECP384R1())
    legacy = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                               serialization.BestAvailableEncryption(PASSPHRASE.encode()))
    (pki / "ca.key").write_bytes(legacy)
    (pki / "ca.key").chmod(0o600)
    returncode, result, err = run(tmp_path, arguments(pki))
    assert returncode == 0, (result, err)
    assert result["created"] == [str(pki / "ca.crt")]
    assert (pki / "ca.key").read_bytes() == legacy
    # (ansible-core 2.19 returns each warning as a summary dict holding the message.)
    assert "openssl pkcs8 -topk8 -scrypt -in %s" % (pki / "ca.key") in json.dumps(result["warnings"]), result
    assert_one_consistent_ca(pki)


def refused(tmp_path, pki, *expected):
    returncode, result, err = run(tmp_path, arguments(pki))
    assert returncode != 0 and result.get("failed"), (result, err)
    assert "cannot be trusted, nothing was changed" in result["msg"]
    for text in expected:
        assert text in result["msg"], result["msg"]
    assert PASSPHRASE not in json.dumps(result)
    return result


def make_ca(tmp_path):
    pki = tmp_path / "pki"
    returncode, result, err = run(tmp_path, arguments(pki))
    assert returncode == 0, (result, err)
    return pki


def test_refuses_a_ca_directory_others_can_write(tmp_path):
    pki = make_ca(tmp_path)
    pki.chmod(0o777)
    refused(tmp_path, pki, "%s has mode 0777" % pki, "chmod 700 %s" % pki)
    assert oct(pki.stat().st_mode & 0o777) == "0o777", "nothing is changed"


def test_refuses_a_ca_key_others_can_read_and_says_it_is_disclosed(tmp_path):
    pki = make_ca(tmp_path)
    (pki / "ca.key").chmod(0o644)
    refused(tmp_path, pki, "ca.key has mode 0644", "treat it as disclosed", "chmod 600")


def test_refuses_a_symlinked_ca_directory(tmp_path):
    real = make_ca(tmp_path)
    link = tmp_path / "linked"
    link.symlink_to(real)
    refused(tmp_path, link, "%s is a symbolic link" % link, "Give its real location (%s)" % real)


def test_refuses_a_symlinked_ca_key(tmp_path):
    pki = make_ca(tmp_path)
    elsewhere = tmp_path / "elsewhere.key"
    shutil.move(str(pki / "ca.key"), str(elsewhere))
    (pki / "ca.key").symlink_to(elsewhere)
    refused(tmp_path, pki, "ca.key is a symbolic link")


@AS_ROOT
def test_refuses_a_ca_directory_another_user_owns(tmp_path):
    pki = make_ca(tmp_path)
    os.chown(pki, NOBODY, NOBODY)
    refused(tmp_path, pki, "is owned by uid %d" % NOBODY, "chown it to the user running Ansible")


@AS_ROOT
def test_refuses_pki_dir_under_a_folder_another_user_planted_in_tmp(tmp_path):
    """/tmp is sticky: whoever creates /tmp/x owns it and can swap what lies below. A CA folder there, created by
    the root controller, would be at that user's mercy; the filter (check_inventory.yml) and the module refuse it."""
    planted = tmp_path / "planted"
    planted.mkdir(mode=0o755)
    os.chown(planted, NOBODY, NOBODY)
    pki = planted / "pki"
    problems = ipsec_problems({"node1": {"ipsec_pki_dir": str(pki)}})
    assert any(p.startswith("node1: ipsec_pki_dir: %s is owned by uid %d" % (planted, NOBODY)) for p in problems), \
        problems
    refused(tmp_path, pki, "%s is owned by uid %d" % (planted, NOBODY))
    assert not pki.exists()


def test_refuses_pki_dir_below_a_folder_everyone_can_write(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    pki = shared / "pki"
    problems = ipsec_problems({"node1": {"ipsec_pki_dir": str(pki)}})
    assert any("ipsec_pki_dir: %s (above %s) is writable by every user" % (shared, pki) in p for p in problems)
    refused(tmp_path, pki, "%s (above %s) is writable by every user" % (shared, pki))
    # A sticky folder such as /tmp is accepted when the next folder down is the user's own: pytest's tmp_path.
    assert ipsec_ca.ancestor_problems(str(tmp_path / "pki")) == []


def test_check_mode_creates_nothing_not_even_the_lock(tmp_path):
    pki = make_ca(tmp_path)
    (pki / ipsec_ca.LOCK_NAME).unlink()
    returncode, result, err = run(tmp_path, dict(arguments(pki), _ansible_check_mode=True))
    assert returncode == 0 and result["changed"] is False, (result, err)
    assert not (pki / ipsec_ca.LOCK_NAME).exists()


def test_a_crl_whose_mode_drifted_gets_its_mode_back_and_the_same_content(tmp_path):
    pki = tmp_path / "pki"
    rc, first, err = run(tmp_path, arguments(pki))
    assert rc == 0, err
    crl = pki / "crl.pem"
    content = crl.read_bytes()
    crl.chmod(0o600)
    rc, second, err = run(tmp_path, arguments(pki))
    assert rc == 0 and second["changed"], (err, second)
    assert crl.stat().st_mode & 0o7777 == 0o644 and crl.read_bytes() == content
    rc, third, err = run(tmp_path, arguments(pki))
    assert rc == 0 and not third["changed"], (err, third)
