"""The worker's audit-hook sandbox, in a subprocess (an audit hook cannot be removed once installed)."""

import subprocess
import sys
import textwrap

import torch


def _run_fresh(code: str) -> str:
    """Run `code` in a fresh interpreter (the audit hook must not stay in this one); its stdout, stripped."""
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


def test_sandbox_blocks_writes_processes_and_reports_peeks(tmp_path):
    out = _run_fresh(
        f"""
        import gc, os, subprocess, sys
        from cudaopt.evaluate.sandbox import Sandbox
        box = Sandbox({str(tmp_path / "scratch")!r}, [])
        os.makedirs(box.scratch, exist_ok=True)
        blocked = []
        with box:
            for attempt in (
                lambda: open({str(tmp_path / "outside.txt")!r}, "w"),
                lambda: os.open({str(tmp_path / "outside2.txt")!r}, os.O_WRONLY | os.O_CREAT),
                lambda: subprocess.run(["true"]),
            ):
                try:
                    attempt()
                except PermissionError:
                    blocked.append(True)
            open(os.path.join(box.scratch, "ok.txt"), "w").close()  # inside the scratch folder: fine
            open(os.devnull, "w").close()
            gc.get_objects()
            try:
                raise ValueError
            except ValueError as e:
                e.__traceback__.tb_frame
        open({str(tmp_path / "after.txt")!r}, "w").close()  # disarmed: the harness itself may write
        print(len(blocked), sorted({{c for c, _, _ in box.events}}))
        """
    )
    assert out == "3 ['process_escape', 'reference_peek']"
    assert not (tmp_path / "outside.txt").exists() and not (tmp_path / "outside2.txt").exists()
    assert (tmp_path / "after.txt").exists()


def test_new_threads_names_threads_started_since():
    import threading
    import time

    from cudaopt.evaluate.sandbox import new_threads, thread_ids

    # Only this test's thread is asserted on: earlier tests in the same process may leave library threads
    # that start or end at any moment (CI once saw an unnamed one appear mid-test).
    before = thread_ids()
    stop = threading.Event()
    t = threading.Thread(target=stop.wait, name="leftover-worker")
    t.start()
    mine = f"({t.native_id})"
    try:
        started = new_threads(before)
        assert len([s for s in started if s.endswith(mine)]) == 1, started
    finally:
        stop.set()
        t.join()
    # joined: gone, once the OS thread has finished exiting (it can outlive join() by a moment)
    deadline = time.monotonic() + 2.0
    while [s for s in new_threads(before) if s.endswith(mine)] and time.monotonic() < deadline:
        time.sleep(0.005)
    assert not [s for s in new_threads(before) if s.endswith(mine)]


def test_sandbox_lets_ldconfig_list_libraries_and_nothing_more(tmp_path):
    # Triton's driver (every Triton or torch.compile candidate on a GPU) and ctypes.util.find_library run
    # `ldconfig -p` to find libraries; that listing is allowed, any other ldconfig call is not.
    out = _run_fresh(
        f"""
        import ctypes.util, shutil, subprocess
        from cudaopt.evaluate.sandbox import Sandbox
        box = Sandbox({str(tmp_path / "scratch")!r}, [])
        ldconfig = shutil.which("ldconfig") or "/sbin/ldconfig"
        with box:
            listed = subprocess.run([ldconfig, "-p"], capture_output=True).returncode
            ctypes.util.find_library("m")
            try:
                subprocess.run([ldconfig, "-n", {str(tmp_path)!r}])
                rebuilt = "ran"
            except PermissionError:
                rebuilt = "refused"
        print(listed, rebuilt, sorted({{c for c, _, _ in box.events}}))
        """
    )
    assert out == "0 refused ['process_escape']"


def test_a_borrowed_compiler_file_name_does_not_start_processes(tmp_path):
    # Processes started from torch._inductor's own code are allowed (its compile-time helpers); code the
    # candidate compiles under one of its file names, in a namespace of its own, is not.
    out = _run_fresh(
        f"""
        import subprocess, torch._inductor.codecache as cc
        from cudaopt.evaluate.sandbox import Sandbox
        box = Sandbox({str(tmp_path / "scratch")!r}, [])
        forged = compile("import subprocess\\nsubprocess.run(['true'])", cc.__file__, "exec")
        with box:
            try:
                exec(forged, {{"__name__": "torch._inductor.codecache"}})
                print("ran")
            except PermissionError:
                print("refused")
        """
    )
    assert out == "refused"


def test_spawning_with_posix_spawn_gets_the_same_rules_as_popen(tmp_path):
    # Triton starts ptxas with close_fds=False and an absolute path, so subprocess spawns it with
    # posix_spawn, which raises an audit event of its own after "subprocess.Popen": a build tool allowed by
    # the first must not be refused by the second (every torch.compile candidate failed on the H200 so),
    # and any other program stays refused on both paths.
    out = _run_fresh(
        f"""
        import shutil, subprocess
        from cudaopt.evaluate.sandbox import Sandbox
        box = Sandbox({str(tmp_path / "scratch")!r}, [])
        which, true = shutil.which("which"), shutil.which("true")
        out = []
        with box:
            out.append(subprocess.run([which, "ls"], close_fds=False, capture_output=True).returncode)
            try:
                subprocess.run([true], close_fds=False)
                out.append("ran")
            except PermissionError:
                out.append("refused")
        print(out, sorted({{c for c, _, _ in box.events}}))
        """
    )
    assert out == "[0, 'refused'] ['process_escape']"


def test_reading_system_facts_is_not_a_peek_but_reading_a_process_is(tmp_path):
    # Inductor's vector-ISA probe reads /proc/cpuinfo, and a torch.compile candidate on the H200 read the
    # boot id: honest candidates were rejected for both. A process's own files stay a finding, also when
    # read through the standard library (pathlib).
    out = _run_fresh(
        f"""
        import pathlib
        from cudaopt.evaluate.sandbox import Sandbox
        box = Sandbox({str(tmp_path / "scratch")!r}, [])
        with box:
            open("/proc/cpuinfo").read(10)
            open("/proc/sys/kernel/random/boot_id").read()
        print(len(box.events), end=" ")
        with box:
            pathlib.Path("/proc/self/status").read_text()
        print(sorted({{(c, e) for c, _, e in box.events}}))
        """
    )
    assert out == "0 [('reference_peek', '/proc/self/status')]"


def test_torch_compile_reading_its_own_tracebacks_is_not_a_peek(tmp_path):
    # Dynamo formats the traceback of an error it recovers from, and the standard library reads tb_frame
    # for it: torch.compile of the GRU and LSTM tasks was rejected as reference_peek on the H200 (session
    # 8). The same read from the candidate's own code, and from code it compiles under one of Dynamo's
    # file names, stays a finding.
    out = _run_fresh(
        f"""
        import torch, torch._dynamo.convert_frame as cf
        from cudaopt.evaluate.sandbox import Sandbox
        box = Sandbox({str(tmp_path / "scratch")!r}, [])
        gru = torch.compile(torch.nn.GRU(8, 16, num_layers=2, batch_first=True, bidirectional=True))
        with box, torch.no_grad():
            gru(torch.randn(2, 5, 8))
        print(len(box.events), end=" ")
        forged = compile("try:\\n    1 / 0\\nexcept ZeroDivisionError as e:\\n    e.__traceback__.tb_frame", cf.__file__, "exec")
        with box:
            exec(forged, {{"__name__": "torch._dynamo.convert_frame"}})
        print(len(box.events), end=" ")
        box.events.clear(); box._seen.clear()
        with box:
            try:
                1 / 0
            except ZeroDivisionError as e:
                e.__traceback__.tb_frame
        print(sorted({{c for c, _, _ in box.events}}))
        """
    )
    assert out == "0 1 ['reference_peek']"


def test_api_watch_names_replaced_torch_functions_and_nothing_benign():
    import torch.nn as nn
    import torch.nn.functional as F

    from cudaopt.evaluate.sandbox import ApiWatch

    watch = ApiWatch()
    assert watch.changed() == []
    forward, linear = nn.Linear.forward, F.linear

    class AlwaysEqual:  # must not pass for the original through ==
        def __eq__(self, other):
            return True

        def __call__(self, *a, **k):
            return None

    try:
        type.__setattr__(nn.Linear, "forward", lambda self, x: forward(self, x))
        F.linear = AlwaysEqual()
        assert sorted(watch.changed()) == ["torch.nn.Linear.forward", "torch.nn.functional.linear"]
    finally:
        nn.Linear.forward, F.linear = forward, linear
    assert watch.changed() == []
    # a name added to a class that hides an inherited one is a replacement; a new helper name is not
    nn.ReLU.__call__ = lambda *a: None
    try:
        assert watch.changed() == ["torch.nn.ReLU.__call__"]
    finally:
        del nn.ReLU.__call__
    nn.ReLU.cudaopt_test_helper = lambda *a: None
    try:
        assert watch.changed() == []
    finally:
        del nn.ReLU.cudaopt_test_helper
    # torch._VF serves its functions through __getattr__: a name set on it hides one
    torch._VF.dropout = lambda *a: None
    try:
        assert watch.changed() == ["torch._VF.dropout"]
    finally:
        del torch._VF.dropout
    assert watch.changed() == []
    # a module a torch module calls through, swapped for a look-alike
    import importlib
    import types

    import torch.nn.modules.linear as linear_module

    real = linear_module.F
    linear_module.F = types.SimpleNamespace(linear=real.linear)
    try:
        assert watch.changed() == ["torch.nn.modules.linear.F"]
    finally:
        linear_module.F = real
    importlib.import_module("torch.utils.cpp_extension")  # a submodule imported late is no change
    assert watch.changed() == []


def test_api_watch_excuses_what_torch_replaces_itself():
    import torch.nn as nn

    from cudaopt.evaluate.sandbox import ApiWatch

    watch = ApiWatch()
    init, seed = nn.Module.__init__, torch.manual_seed
    try:  # Dynamo wraps these on its first compile; the timed calls run neither
        nn.Module.__init__ = lambda self, *a, **k: init(self, *a, **k)
        torch.manual_seed = lambda s: seed(s)
        assert watch.changed() == []
    finally:
        nn.Module.__init__, torch.manual_seed = init, seed
