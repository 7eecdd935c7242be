"""The harness's message framing: tensors round-trip, and a reader of untrusted bytes takes plain data only."""

import multiprocessing as mp
import pickle
import threading
import time

import pytest
import torch

from cudaopt.evaluate import codec
from cudaopt.evaluate.views import Sampled, unview, view


def _pipe():
    return mp.Pipe()


def test_tensors_round_trip_whole_and_sampled():
    a, b = _pipe()
    x = torch.randn(3, 5)
    big = torch.randn(4096)

    def send():  # a sample is 1 MB: more than a pipe holds, so the writer runs beside the reader
        codec.send_msg(b, ("cand_out", 0, view((x, 7, torch.tensor(2.5)), None)))
        codec.send_msg(b, ("cand_out", 2, view(big, seed=123, full_limit=16)))

    writer = threading.Thread(target=send)
    writer.start()
    kind, i, payload = codec.recv_plain(a)
    got = unview(payload)
    assert kind == "cand_out" and i == 0 and torch.equal(got[0], x) and got[1] == 7 and float(got[2]) == 2.5
    [sampled] = unview(codec.recv_plain(a)[2])
    writer.join()
    assert isinstance(sampled, Sampled) and sampled.shape == (4096,) and sampled.stats["nan"] == 0


class _Code:
    def __reduce__(self):
        return (print, ("this must never run",))


def test_a_pickle_that_names_a_function_is_refused():
    a, b = _pipe()
    body = pickle.dumps(("note", _Code()), protocol=5)
    b.send_bytes((0).to_bytes(4, "little") + body)
    with pytest.raises(codec.TamperedMessage, match="builtins.print"):
        codec.recv_plain(a)


@pytest.mark.parametrize("frame, why", [
    (b"\x00", "framing"),
    ((5000).to_bytes(4, "little") + pickle.dumps(("done",)), "framing"),
    ((0).to_bytes(4, "little") + b"not a pickle", "unreadable"),
    ((0).to_bytes(4, "little") + pickle.dumps(["done"]), "tuple"),
])
def test_frames_the_harness_never_writes_are_refused(frame, why):
    a, b = _pipe()
    b.send_bytes(frame)
    with pytest.raises(codec.TamperedMessage, match=why):
        codec.recv_plain(a)


def test_a_message_over_the_size_cap_is_refused(monkeypatch):
    monkeypatch.setattr(codec, "MAX_MESSAGE_BYTES", 256)
    a, b = _pipe()
    codec.send_msg(b, ("cand_out", 0, view(torch.zeros(1000), None)))
    with pytest.raises(codec.TamperedMessage, match="limit"):
        codec.recv_plain(a)


def test_announced_buffers_that_never_come_do_not_hang(monkeypatch):
    monkeypatch.setattr(codec, "BUFFER_WAIT_S", 0.2)
    a, b = _pipe()
    b.send_bytes((1).to_bytes(4, "little") + pickle.dumps(("done",)))
    with pytest.raises(codec.TamperedMessage, match="never came"):
        codec.recv_plain(a)


def test_the_timing_mac_binds_every_field():
    key = b"k" * 32
    payload = {"speedup": 1.5, "ci_low": 1.4, "rounds": 70}
    mac = codec.timing_mac(key, payload)
    assert mac == codec.timing_mac(key, dict(reversed(list(payload.items()))))  # key order does not matter
    assert mac != codec.timing_mac(key, {**payload, "speedup": 1.6})
    assert mac != codec.timing_mac(b"j" * 32, payload)


# -- the parent's protocol checks, message by message (what a forger inside the worker could send) -------------

def _session():
    from cudaopt.evaluate.result import EvalOptions
    from cudaopt.evaluate.runner import _Session
    from cudaopt.guards.findings import GuardPolicy
    from cudaopt.tasks.loader import Task

    s = _Session(Task(name="t", level=1, source="x"), "y", EvalOptions(trials=4), GuardPolicy(), [])
    s.wconn, peer = mp.Pipe()
    s.t_start, s.nondet_reported, s.drift_pending = time.time(), None, {}  # as run() and _loop() set them
    return s, peer


@pytest.mark.parametrize("msgs, why", [
    ([("no_such_kind",)], "unknown"),
    ([("fail", "ok", "all good", "")], "status"),
    ([("stage", "correct"), ("stage", "compile")], "after"),
    ([("nondeterminism", 0.0, 1.0), ("nondeterminism", 0.0, 1.0)], "second"),
    ([("cand_ready", 0)], "trial 0"),  # the first trials are compared whole: no seed to ask for
    ([("cand_ready", 2), ("cand_ready", 2)], "trial 2"),
    ([("timing_ready",)], "unrequested"),
    ([("timing", {"speedup": 50.0}, "0" * 64)], "did not sign"),
    ([("round_ready", 0)], "out-of-order"),  # before timing was asked for
])
def test_the_parent_refuses_messages_the_harness_never_sends(msgs, why):
    s, _peer = _session()
    with pytest.raises(codec.TamperedMessage, match=why):
        for m in msgs:
            s._on_worker(m)


def test_a_signed_timing_report_is_accepted_once():
    s, peer = _session()
    s.time_sent = True
    s._on_worker(("timing_ready",))
    kind, key = peer.recv()
    payload = {"speedup": 1.2}
    s._on_worker(("timing", payload, codec.timing_mac(key, payload)))
    assert kind == "key" and s.timing == payload
    with pytest.raises(codec.TamperedMessage):
        s._on_worker(("timing", payload, codec.timing_mac(key, payload)))
    with pytest.raises(codec.TamperedMessage):
        s._on_worker(("timing_ready",))


def test_round_seeds_are_handed_out_once_each_in_order():
    from cudaopt.evaluate.inputs import round_seed

    s, peer = _session()
    s.time_sent = True
    s._on_worker(("round_ready", 0))
    s._on_worker(("round_ready", 1))
    got = [peer.recv(), peer.recv()]
    assert got == [("round_seed", 0, round_seed(s.refresh_seed, 0)), ("round_seed", 1, round_seed(s.refresh_seed, 1))]
    assert round_seed(s.refresh_seed, 0) != round_seed(s.refresh_seed, 1)
    for bad in (("round_ready", 1), ("round_ready", 3)):  # again, or skipping ahead to see a later round's seed
        with pytest.raises(codec.TamperedMessage, match="out-of-order"):
            s._on_worker(bad)


def test_a_timing_whose_rounds_or_slots_do_not_match_what_was_handed_out_is_void():
    s, _peer = _session()
    s.time_sent, s.next_round = True, 9
    s.device_name, s.precision = "cpu", {}  # as run() sets them
    s.timing = timing = {"speedup_raw": 2.0, "speedup": 2.0, "ci_low": 1.9, "ci_high": 2.1, "bucket_means": [2.0] * 7,
                "bucket_variance": 0.0, "stable": True, "rounds": 9, "ref_time_us": 10.0, "cand_time_us": 5.0,
                "seconds": 0.3, "window": "events", "calls_per_side": 9, "fresh_inputs": True}
    s.set_seeds = {0: 1, 1: 2, 2: 3}  # slot 3's timed output never came back
    r = s._final()
    assert r.status == "rejected" and "timer_tamper" in {f.category for f in r.findings}
    s2, _ = _session()
    s2.device_name, s2.precision = "cpu", {}
    s2.time_sent, s2.next_round, s2.timing, s2.set_seeds = True, 5, dict(timing), {0: 1, 1: 2, 2: 3, 3: 4}
    r2 = s2._final()  # 9 rounds claimed, 5 seeds handed out
    assert r2.status == "rejected" and "rounds" in r2.message
    s3, _ = _session()
    s3.device_name, s3.precision = "cpu", {}
    s3.time_sent, s3.next_round, s3.timing, s3.set_seeds = True, 9, dict(timing), {0: 1, 1: 2, 2: 3, 3: 4}
    assert s3._final().status == "ok"  # all four slots back, 9 rounds for 9 seeds
