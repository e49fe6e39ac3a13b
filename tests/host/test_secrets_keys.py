"""The Fernet key repository (nailgun_platform.secrets.keys) on a real directory: creation,
permissions, rotation, retirement, every way it can be broken, and several processes at once."""
import multiprocessing
import os
import shutil
import stat
import tempfile

import pytest
from cryptography.fernet import Fernet
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from nailgun_platform.secrets import keys


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def key_files(path):
    return sorted(name for name in os.listdir(path) if not name.startswith("."))


@pytest.fixture
def repo(tmp_path):
    return str(tmp_path / "etc" / "fernet-keys")


def test_first_load_creates_a_private_repository_with_a_staged_and_a_primary_key(repo):
    old_umask = os.umask(0)  # the modes must not depend on the umask
    try:
        keyset = keys.load(repo)
    finally:
        os.umask(old_umask)
    assert key_files(repo) == ["0", "1"]
    assert mode(repo) == 0o700
    assert [mode(os.path.join(repo, name)) for name in ("0", "1")] == [0o600, 0o600]
    assert keyset.roles() == [(0, "staged"), (1, "primary")]
    contents = [open(os.path.join(repo, name), "rb").read().strip() for name in ("0", "1")]
    assert contents[0] != contents[1]
    for content in contents:
        Fernet(content)
    assert keys.load(repo).roles() == keyset.roles()  # the second start reads, it does not recreate


def test_an_existing_empty_directory_is_filled_and_temporary_files_are_ignored(repo):
    os.makedirs(repo, mode=0o700)
    os.chmod(repo, 0o700)
    open(os.path.join(repo, ".key-leftover"), "w").close()
    assert keys.load(repo).primary_id == 1
    assert key_files(repo) == ["0", "1"]


def test_values_round_trip_and_a_foreign_or_damaged_token_is_a_clear_error(repo, tmp_path):
    keyset = keys.load(repo)
    token = keyset.encrypt(b"Mv1yTbAk")
    assert isinstance(token, str) and token.isascii() and "Mv1yTbAk" not in token
    assert keyset.decrypt(token) == b"Mv1yTbAk"
    assert keyset.is_current(token)
    other = keys.load(str(tmp_path / "other"))
    for bad in (other.encrypt(b"Mv1yTbAk"), token[:-4], "not a token", "gAAAAA\u00e9", ""):
        with pytest.raises(keys.UndecryptableValue, match="No key of the key repository {0} decrypts".format(
                repo)):
            keyset.decrypt(bad)
        assert not keyset.is_current(bad)
    with pytest.raises(keys.UndecryptableValue):
        keyset.reencrypt(other.encrypt(b"x"))


def test_rotate_promotes_the_staged_key_that_running_servers_already_have(repo):
    before = keys.load(repo)
    staged = open(os.path.join(repo, "0"), "rb").read()
    assert keys.rotate(repo) == 2
    assert open(os.path.join(repo, "2"), "rb").read() == staged
    assert open(os.path.join(repo, "0"), "rb").read() != staged
    after = keys.load(repo)
    assert after.roles() == [(0, "staged"), (1, "old"), (2, "primary")]
    assert [mode(os.path.join(repo, name)) for name in key_files(repo)] == [0o600] * 3
    new_value = after.encrypt(b"rabbit")
    assert before.decrypt(new_value) == b"rabbit"  # a server started before the rotation reads it
    old_value = before.encrypt(b"mysql")
    assert after.decrypt(old_value) == b"mysql" and not after.is_current(old_value)
    again = after.reencrypt(old_value)
    assert after.is_current(again) and after.decrypt(again) == b"mysql"


def test_retire_drops_the_keys_older_than_the_primary(repo):
    first = keys.load(repo)
    old_value = first.encrypt(b"old")
    keys.rotate(repo)
    keys.rotate(repo)
    current = keys.load(repo)
    kept = current.reencrypt(old_value)
    assert keys.retire(repo) == [1, 2]
    assert key_files(repo) == ["0", "3"]
    retired = keys.load(repo)
    assert retired.roles() == [(0, "staged"), (3, "primary")]
    assert retired.decrypt(kept) == b"old"
    with pytest.raises(keys.UndecryptableValue):
        retired.decrypt(old_value)
    assert keys.retire(repo) == []


def test_a_missing_repository_is_an_error_when_it_must_exist(repo):
    for operation in (lambda: keys.load(repo, create=False), lambda: keys.rotate(repo), lambda: keys.retire(repo)):
        with pytest.raises(keys.KeyRepositoryError, match="does not exist"):
            operation()
    assert not os.path.exists(repo)


def broken(repo, damage):
    keys.load(repo)
    damage(repo)
    with pytest.raises(keys.KeyRepositoryError) as raised:
        keys.load(repo)
    with pytest.raises(keys.KeyRepositoryError):
        keys.rotate(repo)
    return str(raised.value)


def write(repo, name, content, file_mode=0o600):
    path = os.path.join(repo, name)
    with open(path, "wb") as stream:
        stream.write(content)
    os.chmod(path, file_mode)


@pytest.mark.parametrize("content", [
    b"", b"\n", b"not a key", Fernet.generate_key()[:-2] + b"\n",  # cut short
    Fernet.generate_key().replace(b"=", b"!"),  # base64 decoding would skip the stray character
    b"!!" + Fernet.generate_key(), Fernet.generate_key() + b"\nmore", b"\xff" * 44,
])
def test_a_malformed_key_file_is_named(repo, content):
    message = broken(repo, lambda path: write(path, "1", content))
    assert message == ("The key file {0}/1 does not hold a Fernet key (44 characters of url-safe base64): "
                       "restore it from the repository's backup".format(repo))


def test_a_key_file_others_can_read_is_refused(repo):
    message = broken(repo, lambda path: os.chmod(os.path.join(path, "0"), 0o640))
    assert message == "The key file {0}/0 has mode 0640: only its owner may read it (chmod 600 {0}/0)".format(repo)


def test_a_directory_others_can_enter_is_refused(repo):
    message = broken(repo, lambda path: os.chmod(path, 0o755))
    assert message == "The key repository {0} has mode 0755: only its owner may use it (chmod 700 {0})".format(repo)
    with pytest.raises(keys.KeyRepositoryError, match="chmod 700"):
        keys.retire(repo)


def test_an_unreadable_key_file_is_named(repo):
    def dangle(path):
        os.unlink(os.path.join(path, "1"))
        os.symlink(os.path.join(path, "gone"), os.path.join(path, "1"))
    message = broken(repo, dangle)
    assert message == "Cannot read the key file {0}/1: No such file or directory".format(repo)


def test_a_key_that_is_not_a_file_is_named(repo):
    def directory(path):
        os.mkdir(os.path.join(path, "2"))
    assert broken(repo, directory) == "The key file {0}/2 is not a regular file".format(repo)


@pytest.mark.parametrize("name", ["0", "1"])
def test_a_missing_staged_or_primary_key_is_an_error_not_a_new_key(repo, name):
    message = broken(repo, lambda path: os.unlink(os.path.join(path, name)))
    assert message.startswith("The key repository {0} is incomplete: it needs key file 0".format(repo))
    assert "it has {0}.".format("1" if name == "0" else "0") in message
    assert key_files(repo) == ["1" if name == "0" else "0"]


@pytest.mark.parametrize("name", ["1.bak", "01", "primary"])
def test_a_stray_file_is_refused(repo, name):
    message = broken(repo, lambda path: write(path, name, Fernet.generate_key()))
    assert message.startswith("{0} does not belong in the key repository {1}".format(name, repo))


def test_a_file_where_the_repository_should_be_is_refused(repo):
    os.makedirs(os.path.dirname(repo))
    open(repo, "w").close()
    with pytest.raises(keys.KeyRepositoryError, match="is not a directory"):
        keys.load(repo)


def _load_and_tell(path, barrier, queue):
    barrier.wait(30)
    keyset = keys.load(path)
    queue.put((keyset.primary_id, keyset.encrypt(b"same")))


@pytest.mark.parametrize("attempt", range(5))
def test_processes_starting_together_create_one_repository(tmp_path, attempt):
    repo = str(tmp_path / "keys")
    context = multiprocessing.get_context("fork")
    queue, barrier = context.Queue(), context.Barrier(8)
    workers = [context.Process(target=_load_and_tell, args=(repo, barrier, queue)) for _ in range(8)]
    for worker in workers:
        worker.start()
    results = [queue.get(timeout=60) for _ in workers]
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    assert key_files(repo) == ["0", "1"]
    keyset = keys.load(repo)
    assert {primary for primary, _ in results} == {1}
    assert [keyset.decrypt(token) for _, token in results] == [b"same"] * 8


def _rotate_and_retire(path, rounds):
    for _ in range(rounds):
        keys.rotate(path)
        keys.retire(path)


def test_readers_never_see_a_rotation_or_retirement_half_done(repo):
    keys.load(repo)
    context = multiprocessing.get_context("fork")
    writer = context.Process(target=_rotate_and_retire, args=(repo, 150))
    writer.start()
    loads = 0
    while writer.is_alive() or loads < 10:
        keyset = keys.load(repo, create=False)  # an error here fails the test
        assert keyset.decrypt(keyset.encrypt(b"x")) == b"x"
        loads += 1
    writer.join(60)
    assert writer.exitcode == 0
    assert keys.load(repo).roles() == [(0, "staged"), (151, "primary")]


class RotationMachine(RuleBasedStateMachine):
    """Values encrypted at any point decrypt after any rotations, from a fresh load of the
    directory, until their key is retired; re-encrypted ones survive the retirement."""

    @initialize()
    def create(self):
        self.directory = tempfile.mkdtemp()
        self.path = os.path.join(self.directory, "keys")
        self.keyset = keys.load(self.path)
        self.values = []  # (plaintext, token, number of the key that encrypted it)

    def teardown(self):
        shutil.rmtree(self.directory, ignore_errors=True)

    @rule(data=st.binary(max_size=64))
    def encrypt(self, data):
        self.values.append((data, self.keyset.encrypt(data), self.keyset.primary_id))

    @rule()
    def rotate(self):
        assert keys.rotate(self.path) == self.keyset.primary_id + 1
        self.keyset = keys.load(self.path)

    @rule()
    def reencrypt_all(self):
        self.values = [(data, self.keyset.reencrypt(token), self.keyset.primary_id)
                       for data, token, key in self.values if key in self.keyset.ids]

    @rule()
    def retire(self):
        keys.retire(self.path)
        self.keyset = keys.load(self.path)

    @invariant()
    def every_value_decrypts_while_its_key_is_there(self):
        if not hasattr(self, "keyset"):
            return
        fresh = keys.load(self.path, create=False)
        for data, token, key in self.values:
            if key in fresh.ids:
                assert fresh.decrypt(token) == data
                assert fresh.is_current(token) == (key == fresh.primary_id)
            else:
                with pytest.raises(keys.UndecryptableValue):
                    fresh.decrypt(token)


RotationMachine.TestCase.settings = settings(
    max_examples=40, stateful_step_count=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
test_rotations_keep_values_readable_until_retired = RotationMachine.TestCase
