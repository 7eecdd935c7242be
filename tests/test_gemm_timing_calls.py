"""GPU timing gives every candidate of a shape the same number of calls per graph (CPU: stand-ins)."""

import random

import pytest

torch = pytest.importorskip("torch")

from cudaopt.gemm import timing  # noqa: E402


class _Event:
    def __init__(self, enable_timing=False):
        self.t = 0.0

    def record(self):
        pass

    def elapsed_time(self, other):
        return 1.0


def named(n):
    """A stand-in launch that carries its candidate's name (the fakes below key on it)."""
    f = lambda i: None  # noqa: E731
    f.name = n
    return f


class _FlushBuffer:
    """Stands in for the L2 flush buffer (no GPU here): records each zero_() in `seq`."""

    def __init__(self, seq):
        self.seq = seq

    def zero_(self):
        self.seq.append("flush")


def test_one_call_count_for_every_candidate(monkeypatch):
    captured = {}
    monkeypatch.setattr(timing, "_flush_buffer", lambda: _FlushBuffer([]))
    ests = {"fast": 3.0, "slow_host": 12.0, "slow": 40.0}
    monkeypatch.setattr(timing, "estimate_us", lambda fn, sets: ests[fn.name])

    def fake_capture(fn, calls, sets):
        captured[fn.name] = calls
        return type("G", (), {"replay": lambda self: None})()

    monkeypatch.setattr(timing, "capture", fake_capture)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    monkeypatch.setattr(torch.cuda, "Event", _Event)
    monkeypatch.setattr(torch.cuda, "_sleep", lambda cycles: None)
    monkeypatch.setattr(timing.time, "sleep", lambda s: None)

    out = timing.time_gpu({n: named(n) for n in ests}, sets=2, rounds=3, rng=random.Random(0))
    assert set(out) == set(ests)
    assert set(captured.values()) == {timing.graph_calls(3.0)} == {67}  # ceil(200 / 3), from the fastest
    captured.clear()
    timing.time_gpu({n: named(n) for n in ests}, sets=2, rounds=1, server=True)
    assert set(captured.values()) == {1}  # server mode: one call per replay, after an idle gap


def test_graph_calls_bounds():
    assert timing.graph_calls(0.01) == 256  # tiny estimates are capped
    assert timing.graph_calls(1e6) == 1
    assert timing.graph_calls(10.0, target_us=200.0) == 20


def test_call_timing_takes_one_call_count_per_shape_sized_to_the_fastest(monkeypatch):
    """A sample of n calls lasts about 2 ms for the fastest candidate (n at most 20), and every
    candidate of the shape gets the same n: the largest shapes no longer spend 20 x 13 ms a sample."""
    import time as _time

    assert timing.call_count(10.0) == 20 and timing.call_count(13000.0) == 1 and timing.call_count(500.0) == 4
    assert timing.call_count(0.0) == 20 and timing.call_count(700.0, most=2) == 2
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)  # the CPU test machine has no GPU
    counts = {"fast": 0, "slow": 0}

    def launch(name, seconds):
        def run(i):
            counts[name] += 1
            _time.sleep(seconds)
        return run

    t = timing.time_call({"fast": launch("fast", 0.004), "slow": launch("slow", 0.008)}, sets=2, rounds=2)
    assert counts == {"fast": 4, "slow": 4}  # two warm-up calls, then 2 rounds of one call (4 ms > 2 ms)
    assert t["slow"] > t["fast"] > 3000


def test_each_offline_round_starts_behind_a_gpu_spin(monkeypatch):
    """Session 38: after a round's synchronize the stream is idle, so the first start event would fire before the
    first replay's launch reached the GPU and charge the host's launch time to whichever candidate the round put
    first. Each offline round now queues a spin first; server mode keeps its spin before every replay.
    Session 53: offline, L2 is flushed before every replay's start event (untimed; the default), never in server mode
    (its idle gaps are the point), and not at all with CUDAOPT_GEMM_L2_FLUSH=0."""
    seq = []
    monkeypatch.delenv(timing.L2_FLUSH_ENV, raising=False)
    monkeypatch.setattr(timing, "_flush_buffer", lambda: _FlushBuffer(seq))

    class Ev(_Event):
        def record(self):
            seq.append("record")

    monkeypatch.setattr(timing, "estimate_us", lambda fn, sets: 5.0)
    monkeypatch.setattr(timing, "capture", lambda fn, calls, sets: type(
        "G", (), {"replay": lambda self, n=fn.name: seq.append(f"replay {n}")})())
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: seq.append("sync"))
    monkeypatch.setattr(torch.cuda, "Event", Ev)
    monkeypatch.setattr(torch.cuda, "_sleep", lambda cycles: seq.append(f"spin {cycles}"))
    monkeypatch.setattr(timing.time, "sleep", lambda s: None)

    timing.time_gpu({"a": named("a"), "b": named("b")}, sets=2, rounds=3, rng=random.Random(0))
    rounds = "|".join(seq).split("sync")[1:-1]  # (after the warm-up replays' synchronize; each ends in one)
    assert len(rounds) == 3
    for r in rounds:
        steps = r.strip("|").split("|")
        assert steps[0] == f"spin {timing.ROUND_HEAD_START_CYCLES}" and steps[1:3] == ["flush", "record"], steps
        assert sorted(x for x in steps if x.startswith("replay")) == ["replay a", "replay b"]
        assert sum(x.startswith("spin") for x in steps) == 1
        # each replay: flush, then its start event and the replay (the flush is outside the timed interval)
        assert steps.count("flush") == 2 and all(steps[i + 1] == "record" and steps[i + 2].startswith("replay")
                                                 for i, x in enumerate(steps) if x == "flush")
    assert timing.ROUND_HEAD_START_CYCLES >= 50_000  # (covers a graph launch's host time at the card's clocks)
    seq.clear()
    timing.time_gpu({"a": named("a"), "b": named("b")}, sets=2, rounds=1, server=True, rng=random.Random(0))
    assert seq.count("spin 20000") == 2 and f"spin {timing.ROUND_HEAD_START_CYCLES}" not in seq
    assert "flush" not in seq  # (server mode: no flush)
    seq.clear()
    monkeypatch.setenv(timing.L2_FLUSH_ENV, "0")
    timing.time_gpu({"a": named("a"), "b": named("b")}, sets=2, rounds=2, rng=random.Random(0))
    assert "flush" not in seq and seq.count("replay a") == 3  # (the warm-up replay, then two rounds)
