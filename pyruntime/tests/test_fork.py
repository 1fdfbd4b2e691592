"""fork() (mcp._fork): a real runtime with the loader's init (a subreaper
here, which follows a second runtime once a first rewind or a first fork
made it the init), driven like the host drives it: the cell that calls fork() ends
with ``fork`` in its done frame and a ``forked`` frame with a key; the
host reaches the fork through the relay with that key."""

import json
import os
import random
import shutil
import tempfile
import unittest
from unittest import mock

from mcp import _fork, _rewind
from tests.harness import Runtime, runtime_with_init
from tests.test_resume import Host


class ForkTest(unittest.TestCase):
    def setUp(self):
        self.ws = tempfile.mkdtemp(prefix="fork-ws-")
        self.addCleanup(shutil.rmtree, self.ws, True)
        self.rt = runtime_with_init(self.ws)
        self.addCleanup(self.rt.close)

    def ok(self, code, rt=None):
        cell = (rt or self.rt).run(code)
        self.assertEqual(cell.status, "ok", cell)
        return cell

    def become_init(self):
        """A rewind makes the runtime's first process the init (as in a
        Kubernetes Pod): a fork needs one."""
        self.ok("pass")
        self.ok("rewind(1)")
        self.rt.write(b'{"t":"rewind","n":1}\n')
        self.assertTrue(self.rt.rewounds.get(timeout=30)["ok"])

    def fork(self, rt=None):
        """fork() in a cell, answered as the host answers: a runtime that
        no init follows yet asks for a handover first."""
        rt = rt or self.rt
        cell = self.ok("fork()", rt)
        self.assertTrue(cell.done.get("fork"), cell.done)
        f = rt.forkeds.get(timeout=30)
        if f.get("handover"):
            self.assertFalse(f["ok"], f)
            rt.send({"t": "handover"})
            f = rt.forkeds.get(timeout=30)
        return f

    def test_without_an_init_a_fork_is_refused_clearly(self):
        """A runtime started without the loader's init (neither pid 1 nor
        CODEBRIDGE_INIT) has nothing to follow a second runtime."""
        rt = Runtime()
        self.addCleanup(rt.close)
        f = self.fork(rt)
        self.assertFalse(f["ok"])
        self.assertIn("fork needs the sandbox's init", f["error"])
        self.assertEqual(self.ok("print(1)", rt).stdout, "1\n")

    def test_a_first_fork_makes_the_init_and_keeps_the_state(self):
        """As in a Kubernetes Pod before any rewind: the first fork asks
        for a handover, a fresh copy takes the channel with the state as
        it was (variables, imports, working directory, random state), the
        process the host started becomes its init, the fork works, and a
        later rewind too."""
        sub = os.path.join(self.ws, "sub")
        self.ok(f"import json, os, random\nx = [1]\nos.mkdir('{sub}')\nos.chdir('{sub}')\nrandom.seed(7)")
        before = self.rt.proc.pid
        cell = self.ok("fork()")
        self.assertTrue(cell.done.get("fork"), cell.done)
        first = self.rt.forkeds.get(timeout=30)
        self.assertEqual(first, {"t": "forked", "ok": False, "handover": True})
        self.rt.send({"t": "handover"})
        f = self.rt.forkeds.get(timeout=30)
        self.assertTrue(f["ok"], f)
        seeded = random.Random(7).random()
        out = self.ok("print(x, os.getcwd(), json.dumps(1), random.random(), os.getppid())").stdout
        self.assertEqual(out, f"[1] {sub} 1 {seeded} {before}\n")  # its parent: the started process
        self.rt.wait_exec(before, b"--follow")  # the started process becomes the init
        host = Host(f["key"])
        self.addCleanup(host.close)
        host.until("resumed")
        host.send({"t": "exec", "id": 1, "code": "x.append('fork')\nprint(x)"})
        frames = host.until("done")
        self.assertEqual("".join(fr.get("data", "") for fr in frames if fr.get("t") == "out"), "[1, 'fork']\n")
        self.ok("x.append(2)")
        self.ok("rewind(1)")
        self.rt.send({"t": "rewind", "n": 1})
        self.assertTrue(self.rt.rewounds.get(timeout=30)["ok"])
        self.assertEqual(self.ok("print(x)").stdout, "[1]\n")
        f2 = self.fork()  # the init follows it already: no second handover
        self.assertTrue(f2["ok"], f2)
        Host(f2["key"]).close()

    def test_a_first_fork_with_checkpoints_off(self):
        """--checkpoints 0: no checkpoint is taken, and the first fork still
        makes the init through its own copy."""
        rt = runtime_with_init(self.ws, hello={"checkpoints": 0})
        self.addCleanup(rt.close)
        self.ok("z = 3", rt)
        f = self.fork(rt)
        self.assertTrue(f["ok"], f)
        host = Host(f["key"])
        self.addCleanup(host.close)
        host.until("resumed")
        self.assertEqual(self.ok("print(z)", rt).stdout, "3\n")

    def test_a_fork_that_cannot_start_its_threads_ends(self):
        """A fork whose threads cannot start (the kernel's pids limit, on
        Kubernetes below the bridge's --pids) ends, and the relay that
        reached it reads the end of its stream, instead of a runtime that
        serves nobody and a host that waits; the parent goes on."""
        self.become_init()
        self.ok("import os, mcp._channel as ch\nparent = os.getpid()\nreal = ch.Channel.start_reader\n"
                "def start_reader(self):\n"
                "    if os.getpid() != parent:\n"
                "        raise RuntimeError(\"can't start new thread\")\n"
                "    return real(self)\n"
                "ch.Channel.start_reader = start_reader")
        f = self.fork()
        self.assertTrue(f["ok"], f)
        host = Host(f["key"])
        self.addCleanup(host.close)
        with self.assertRaisesRegex(AssertionError, "the stream ended before a resumed frame"):
            host.until("resumed")
        self.assertEqual(self.ok("print(4)").stdout, "4\n")

    def test_a_copy_that_cannot_take_the_channel_ends_the_runtime(self):
        """The copy a first fork hands the channel to cannot start its
        threads: it ends, and with it the sandbox's runtime (the host sees
        the end and replaces the sandbox), rather than a process that
        holds the channel and serves nothing."""
        self.ok("import os, mcp._channel as ch\nfirst = os.getpid()\nreal = ch.Channel.start_reader\n"
                "def start_reader(self):\n"
                "    if os.getpid() != first:\n"
                "        raise RuntimeError(\"can't start new thread\")\n"
                "    return real(self)\n"
                "ch.Channel.start_reader = start_reader")
        cell = self.ok("fork()")
        self.assertTrue(cell.done.get("fork"), cell.done)
        self.assertTrue(self.rt.forkeds.get(timeout=30)["handover"])
        self.rt.send({"t": "handover"})
        self.assertEqual(self.rt.proc.wait(30), 1)  # the init exits as its runtime did

    def test_a_handover_nobody_asked_for_changes_nothing(self):
        self.ok("y = 5")
        self.rt.send({"t": "handover"})
        self.assertEqual(self.ok("print(y)").stdout, "5\n")
        self.assertTrue(any("handover" in str(log.get("msg")) for log in self.rt.logs), self.rt.logs)

    def test_the_fork_diverges_from_its_parent(self):
        self.become_init()
        self.ok(f"x = 1\nopen('{self.ws}/a.txt', 'w').write('parent')")
        f = self.fork()
        self.assertTrue(f["ok"], f)
        self.assertTrue(f["dir"].startswith(os.path.join(self.ws, ".forks")), f)
        host = Host(f["key"])
        self.addCleanup(host.close)
        self.assertEqual(host.until("resumed")[-1]["cell"], None)
        host.send({"t": "exec", "id": 1, "code": "x = 2\nopen('a.txt', 'w').write('fork')\nimport os\nprint(x, os.getcwd())"})
        frames = host.until("done")
        self.assertEqual(frames[-1]["status"], "ok", frames)
        out = "".join(fr.get("data", "") for fr in frames if fr.get("t") == "out")
        self.assertEqual(out, f"2 {f['dir']}\n")
        self.assertEqual(self.ok(f"print(x, open('{self.ws}/a.txt').read())").stdout, "1 parent\n")
        with open(os.path.join(f["dir"], "a.txt")) as fh:
            self.assertEqual(fh.read(), "fork")

    def test_a_wrong_key_reaches_no_fork(self):
        self.become_init()
        f = self.fork()
        self.assertTrue(f["ok"], f)
        wrong = Host("x" * 43)
        self.addCleanup(wrong.close)
        self.assertIsNone(wrong.frame())
        host = Host(f["key"])
        self.addCleanup(host.close)
        host.until("resumed")

    def test_a_fork_ends_with_its_stream_and_the_parent_goes_on(self):
        self.become_init()
        f = self.fork()
        host = Host(f["key"])
        host.until("resumed")
        host.close()
        self.assertEqual(self.ok("print(3)").stdout, "3\n")
        f2 = self.fork()  # a fork of the same parent again
        self.assertTrue(f2["ok"], f2)
        self.assertNotEqual(f2["dir"], f["dir"])
        Host(f2["key"]).close()  # the second fork ends with its stream too

    def test_an_end_frame_ends_the_runtime(self):
        """The host ends a runtime whose container its forks still use
        with an end frame: a detachable one would wait for a host."""
        self.ok("pass")
        self.rt.send({"t": "end"})
        self.assertEqual(self.rt.proc.wait(30), 0)


class PidsTest(unittest.TestCase):
    """The pids a fork checks: the cgroup's, or, where it shows no limit
    (a Kubernetes Pod's is on the Pod's cgroup, above the container's),
    the tasks this sandbox sees against the limit the host names."""

    def test_tasks_counts_the_threads_of_every_process(self):
        proc = tempfile.mkdtemp(prefix="fork-proc-")
        self.addCleanup(shutil.rmtree, proc, True)
        for pid, threads in (("1", 1), ("42", 3), ("self", 5)):
            for tid in range(threads):
                os.makedirs(os.path.join(proc, pid, "task", str(tid)))
        os.makedirs(os.path.join(proc, "7"))  # ended meanwhile: no task folder
        self.assertEqual(_fork.tasks(proc), 4)

    def test_without_a_cgroup_limit_the_hosts_limit_counts(self):
        with mock.patch.object(_rewind, "cgroup_use", return_value=None):
            used, limit = _fork.pids_use(128)
            self.assertEqual(limit, 128)
            self.assertGreaterEqual(used, 1)
            self.assertIsNone(_fork.pids_use(None))
        with mock.patch.object(_rewind, "cgroup_use", return_value=(5, 64)):
            self.assertEqual(_fork.pids_use(128), (5, 64))  # the cgroup's own limit comes first


if __name__ == "__main__":
    unittest.main()
