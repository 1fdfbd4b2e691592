"""Warm ``print(1)`` cells, timed by the host side (exec frame written ->
done frame read), in one thread with no reader-thread handoff.

    python3 pyruntime/tests/bench_exec.py [cells]

With CODEBRIDGE_TEST_COMMAND set (see harness.py) the runtime runs in a
container and the time includes the engine's stdio relay.

Also prints the time from spawning the runtime to its ready frame. Not a
test: timing targets are checked by ``make bench``, never by timed tests.
"""

import io
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tests.harness import COMMAND, LOADER, PYTHON, SERVERS, build_zip  # noqa: E402


def main(cells=1000, warmup=200):
    archive = build_zip()
    t0 = time.perf_counter()
    command = shlex.split(COMMAND) + [LOADER] if COMMAND else [PYTHON, "-I", "-u", "-c", LOADER]
    proc = subprocess.Popen(command, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, bufsize=0)
    out = io.BufferedReader(proc.stdout, 1 << 16)
    fd = proc.stdin.fileno()
    os.write(fd, b"%16d" % len(archive) + archive)
    os.write(fd, (json.dumps({"t": "hello", "servers": SERVERS}) + "\n").encode())
    assert json.loads(out.readline())["t"] == "ready"
    ready = time.perf_counter() - t0

    def cell(i):
        frame = (json.dumps({"t": "exec", "id": i, "code": "print(1)"}) + "\n").encode()
        start = time.perf_counter_ns()
        os.write(fd, frame)
        while True:
            f = json.loads(out.readline())
            if f["t"] == "done":
                elapsed = time.perf_counter_ns() - start
                assert f["id"] == i and f["status"] == "ok", f
                return elapsed
            assert f == {"t": "out", "id": i, "stream": "stdout", "data": "1\n"}, f

    for i in range(warmup):
        cell(i)
    times = [cell(warmup + i) for i in range(cells)]
    proc.stdin.close()
    proc.wait(5)
    times.sort()
    us = lambda ns: f"{ns / 1000:.0f} us"
    print(f"{COMMAND or PYTHON}: spawn -> ready {ready * 1000:.1f} ms")
    print(f"warm print(1), {cells} cells: median {us(statistics.median(times))}, "
          f"p10 {us(times[len(times) // 10])}, p90 {us(times[len(times) * 9 // 10])}, "
          f"p99 {us(times[len(times) * 99 // 100])}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
