"""Hostile and broken clients: the daemon answers with ibacm's error status
where the protocol has one, closes the connection otherwise, never crashes,
never blocks other clients, and answers the next valid request correctly."""
import random
import struct
import threading
import time

import pytest

from conftest import Client, acm_hdr, config_with, ep_entry, parse_hdr

ACM_EINVAL, ACM_ENODATA, ACM_ESRCTYPE, ACM_EDESTADDR, ACM_EDESTTYPE = 2, 3, 8, 9, 10
DEST, SOURCE = 2, 1


def resolve_name(name, flags=DEST):
    body = ep_entry(flags, 1, name.encode() + b"\0")
    return acm_hdr(1, 16 + len(body)) + body


def assert_healthy(d):
    """A valid request on a fresh connection gets a correct answer."""
    assert d.alive(), d.logtext()
    c = Client(d.socket)
    ans = c.request(resolve_name("node1"))
    c.close()
    h = parse_hdr(ans)
    assert h["status"] == 0 and h["length"] == 16 + 2 * 72, h


def status_of(ans):
    assert ans is not None, "daemon closed instead of answering"
    return parse_hdr(ans)["status"]


def test_truncated_header_then_close(single):
    c = Client(single.socket)
    c.send(b"\x01\x01\x00")
    c.close()
    assert_healthy(single)


@pytest.mark.parametrize("length", [0, 8, 15])
def test_length_below_header(single, length):
    c = Client(single.socket)
    ans = c.request(acm_hdr(1, length))
    assert status_of(ans) == ACM_EINVAL
    assert c.closed_by_peer()
    assert_healthy(single)


def test_length_above_maximum(single):
    c = Client(single.socket)
    ans = c.request(acm_hdr(2, 60000))
    assert status_of(ans) == ACM_EINVAL
    assert c.closed_by_peer()
    assert_healthy(single)


def test_length_larger_than_sent_times_out(single_short_timeout):
    d = single_short_timeout
    c = Client(d.socket)
    c.send(acm_hdr(1, 16 + 72) + b"\0" * 10)
    # other clients are served meanwhile
    assert_healthy(d)
    t0 = time.monotonic()
    assert c.closed_by_peer(timeout=10)
    assert time.monotonic() - t0 < 5
    assert_healthy(d)


def test_bad_version_answered(single):
    c = Client(single.socket)
    body = ep_entry(DEST, 1, b"node1\0")
    ans = c.request(acm_hdr(1, 16 + 72, version=2) + body)
    assert status_of(ans) == ACM_EINVAL
    # the connection stays usable
    assert status_of(c.request(resolve_name("node1"))) == 0


@pytest.mark.parametrize("opcode", [0, 4, 7, 0x0f, 0x41, 0xff])
def test_unknown_opcode(single, opcode):
    c = Client(single.socket)
    h = parse_hdr(c.request(acm_hdr(opcode, 16)))
    assert h["status"] == ACM_EINVAL and h["opcode"] & 0x80
    assert status_of(c.request(resolve_name("node1"))) == 0


def test_zero_entries(single):
    c = Client(single.socket)
    assert status_of(c.request(acm_hdr(1, 16))) == ACM_EINVAL
    assert status_of(c.request(resolve_name("node1"))) == 0


def test_partial_entry(single):
    c = Client(single.socket)
    assert status_of(c.request(acm_hdr(1, 16 + 40) + b"\0" * 40)) == ACM_EINVAL


def test_too_many_entries(single):
    c = Client(single.socket)
    body = ep_entry(DEST, 1, b"node1\0") * 9
    assert status_of(c.request(acm_hdr(1, 16 + len(body)) + body)) == ACM_EINVAL
    assert status_of(c.request(resolve_name("node1"))) == 0


@pytest.mark.parametrize("etype,flags,status", [
    (0, DEST, ACM_EDESTTYPE), (4, DEST, ACM_EDESTTYPE), (5, DEST, ACM_EDESTTYPE),
    (0x99, DEST, ACM_EDESTTYPE), (0xffff, DEST, ACM_EDESTTYPE), (9, SOURCE, ACM_ESRCTYPE),
])
def test_unknown_entry_type(single, etype, flags, status):
    c = Client(single.socket)
    body = ep_entry(flags, etype, b"x")
    if flags == SOURCE:
        body += ep_entry(DEST, 1, b"node1\0")
    assert status_of(c.request(acm_hdr(1, 16 + len(body)) + body)) == status


def test_no_dest_entry(single):
    c = Client(single.socket)
    body = ep_entry(SOURCE, 1, b"node1\0")
    assert status_of(c.request(acm_hdr(1, 16 + len(body)) + body)) == ACM_EDESTADDR


def test_unterminated_name(single):
    c = Client(single.socket)
    body = struct.pack("<IHH", DEST, 1, 0) + b"A" * 64
    assert status_of(c.request(acm_hdr(1, 16 + 72) + body)) == ACM_EINVAL
    assert status_of(c.request(resolve_name("node1"))) == 0


def test_one_byte_at_a_time(single):
    c = Client(single.socket)
    for b in resolve_name("node1"):
        c.send(bytes([b]))
        time.sleep(0.005)
    assert status_of(c.recv_msg()) == 0


def test_silent_client_is_closed(single_short_timeout):
    d = single_short_timeout
    c = Client(d.socket)
    t0 = time.monotonic()
    assert c.closed_by_peer(timeout=10)
    assert 0.5 <= time.monotonic() - t0 < 5
    assert_healthy(d)


def test_idle_after_a_request_stays_open(single_short_timeout):
    """librdmacm keeps its connection for the life of the process."""
    d = single_short_timeout
    c = Client(d.socket)
    assert status_of(c.request(resolve_name("node1"))) == 0
    time.sleep(2.5)
    assert status_of(c.request(resolve_name("node1"))) == 0


def test_disconnect_mid_request(single):
    for _ in range(20):
        c = Client(single.socket)
        c.send(resolve_name("node1")[:30])
        c.close()
    assert_healthy(single)


def test_disconnect_before_reading_answer(single):
    for _ in range(50):
        c = Client(single.socket)
        c.send(resolve_name("node1"))
        c.close()
    assert_healthy(single)


def test_thousand_clients(single):
    conns = []
    try:
        for _ in range(1000):
            conns.append(Client(single.socket, timeout=20))
        for c in conns:
            c.send(resolve_name("node1"))
        for c in conns:
            assert status_of(c.recv_msg()) == 0
    finally:
        for c in conns:
            c.close()
    assert_healthy(single)


def test_random_garbage(single):
    rnd = random.Random(7)
    for _ in range(200):
        c = Client(single.socket)
        n = rnd.randint(1, 700)
        try:
            c.send(bytes(rnd.getrandbits(8) for _ in range(n)))
        except OSError:
            pass
        c.close()
    assert_healthy(single)


def test_pipelined_requests(single):
    c = Client(single.socket)
    c.send(resolve_name("node1") * 20)
    for _ in range(20):
        assert status_of(c.recv_msg()) == 0


@pytest.fixture
def single_short_timeout(daemon_factory):
    return daemon_factory(config_with({"daemon": ["client_timeout = 1s"]})).start()


def test_slow_reader_gets_every_answer(single):
    """Answers larger than the socket buffer wait in the daemon (EPOLLOUT),
    other clients are served meanwhile, and nothing is lost or reordered."""
    stats = acm_hdr(0x0b, 16)
    c = Client(single.socket, timeout=20)
    c.send(stats * 400)
    time.sleep(0.5)  # let the daemon fill the socket and wait for us
    assert_healthy(single)
    for _ in range(400):
        ans = c.recv_msg()
        assert ans is not None and parse_hdr(ans)["status"] == 0
    assert status_of(c.request(resolve_name("node1"))) == 0
