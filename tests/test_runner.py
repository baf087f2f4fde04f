"""The runner against real children that crash, hang, flood their pipes and fork."""
import os
import signal
import sys
import textwrap
import time

import pytest

from diagnostics.runner import Collected, parse_record, run_child

PY = sys.executable


def py(code: str) -> list[str]:
    return [PY, "-c", textwrap.dedent(code)]


def test_ok_and_exit_status():
    r = run_child(py("print('hi')"), timeout=10)
    assert r.status == "ok" and r.stdout.strip() == "hi"
    r = run_child(py("import sys; sys.exit(3)"), timeout=10)
    assert r.status == "fail" and r.returncode == 3


def test_segfault_is_crashed_with_signal_and_stderr_tail():
    r = run_child(py("""
        import os, signal, sys
        sys.stderr.write('about to die\\n'); sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGSEGV)
    """), timeout=10)
    assert r.status == "crashed"
    assert r.signal == "SIGSEGV"
    assert "about to die" in r.stderr_tail()


def test_abort_is_crashed():
    r = run_child(py("import os; os.abort()"), timeout=10)
    assert r.status == "crashed" and r.signal == "SIGABRT"


def test_hang_times_out_and_keeps_partial_output():
    t0 = time.monotonic()
    r = run_child(py("""
        import time, sys
        print('partial line', flush=True)
        time.sleep(60)
    """), timeout=1.5)
    assert r.status == "timeout" and r.timed_out
    assert "partial line" in r.stdout
    assert time.monotonic() - t0 < 10


def test_sigterm_ignored_still_killed():
    r = run_child(py("""
        import signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print('ready', flush=True)
        time.sleep(60)
    """), timeout=1.0)
    assert r.status == "timeout"


def test_flooding_both_pipes_does_not_deadlock_and_is_bounded():
    r = run_child(py("""
        import sys
        chunk = 'x' * 1023 + '\\n'
        for _ in range(20 * 1024):  # 20 MiB on each stream, interleaved
            sys.stdout.write(chunk); sys.stderr.write(chunk)
        sys.stdout.write('END\\n')
    """), timeout=60)
    assert r.status == "ok"
    assert r.stdout_truncated and r.stderr_truncated
    assert r.stdout.rstrip().endswith("END")
    assert len(r.stdout) < 2 * 1024 * 1024


def test_forked_children_do_not_outlive_it(tmp_path):
    pidfile = tmp_path / "child.pid"
    r = run_child(py(f"""
        import os, time
        pid = os.fork()
        if pid == 0:
            time.sleep(120)
            os._exit(0)
        open({str(pidfile)!r}, 'w').write(str(pid))
        print('parent exits')
    """), timeout=10)
    assert r.status == "ok"
    pid = int(pidfile.read_text())
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        # a zombie is reaped by init; check its state
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split()[2] == "Z":
                    break
        except OSError:
            break
        time.sleep(0.1)
    else:
        pytest.fail("the forked child survived its parent's process group")


def test_streamed_records_survive_a_crash():
    col = Collected()
    r = run_child(py("""
        import json, os, signal, sys
        print('@@DIAG ' + json.dumps({'fact': 'torch.version', 'value': '2.5.1+rocm6.2'}), flush=True)
        print('@@DIAG ' + json.dumps({'stage': 'device query'}), flush=True)
        sys.stderr.write('hipErrorNoBinaryForGpu: Unable to find code object for all current devices!\\n')
        sys.stderr.flush()
        os.abort()
    """), timeout=10, on_line=lambda s, ln: (col.feed(parse_record(ln)) if parse_record(ln) else None))
    assert r.status == "crashed"
    assert col.facts == {"torch.version": "2.5.1+rocm6.2"}
    assert col.stage == "device query"
    assert "hipErrorNoBinaryForGpu" in r.stderr


def test_missing_and_not_executable(tmp_path):
    r = run_child([str(tmp_path / "nope")], timeout=5)
    assert r.status == "fail" and "not found" in r.start_error
    f = tmp_path / "tool"
    f.write_text("#!/bin/sh\necho hi\n")
    f.chmod(0o644)
    r = run_child([str(f)], timeout=5)
    assert r.status == "fail" and "not executable" in r.start_error


def test_invalid_utf8_output_is_replaced():
    r = run_child(py("import sys; sys.stdout.buffer.write(b'ok \\xff\\xfe bad\\n')"), timeout=10)
    assert r.status == "ok" and "\ufffd" in r.stdout
