"""Cells and output, through a real runtime process driven like the host."""

import os
import tempfile
import time
import unittest

from tests.harness import COMMAND, Runtime, RuntimeTestCase


class CellTest(RuntimeTestCase):
    def test_ready(self):
        self.assertRegex(self.rt.ready["python"], r"^3\.\d+\.\d+")

    def test_state_persists(self):
        self.run_ok("import json\ncounter = 41\ndef bump(n):\n    return n + 1")
        self.assertEqual(self.run_ok("bump(counter)").value, "42")
        self.assertEqual(self.run_ok("json.dumps([counter])").value, "'[41]'")

    def test_namespace(self):
        self.assertEqual(self.run_ok("__name__").value, "'__main__'")
        self.assertEqual(self.run_ok("import __main__; __main__.__dict__ is globals()").value, "True")
        names = self.run_ok("sorted(k for k in globals() if not k.startswith('__'))").value
        for name in ["runtime", "call_tool", "display", "ToolError", "mcp_everything",
                     "mcp_my_server_v2"]:
            self.assertIn(repr(name), names)
        self.assertEqual(self.run_ok("from mcp import runtime as r; r is runtime").value, "True")

    def test_final_expression(self):
        self.assertEqual(self.run_ok("1 + 1").value, "2")
        self.assertIsNone(self.run_ok("None").value)
        self.assertIsNone(self.run_ok("y = 3").value)
        self.assertEqual(self.run_ok("y = 3\n'a' * y").value, "'aaa'")
        self.assertIsNone(self.run_ok("print('x')").value)
        self.assertEqual(self.run_ok("class R:\n  def __repr__(self): return 'R!'\nR()").value, "R!")

    def test_top_level_await(self):
        cell = self.run_ok("import asyncio\nawait asyncio.sleep(0)\nasync def two():\n"
                           "    await asyncio.sleep(0.01)\n    return 2\nawait two()")
        self.assertEqual(cell.value, "2")
        self.assertEqual(self.run_ok("[await two() for _ in range(3)]").value, "[2, 2, 2]")
        # asyncio.run still works in a cell that does not await
        self.assertEqual(self.run_ok("asyncio.run(two())").value, "2")
        self.assertEqual(self.run_ok("await two()").value, "2")

    def test_traceback_shows_user_code_only(self):
        cell = self.rt.run("def inner():\n    return 1 / 0\n\ninner()")
        self.assertEqual(cell.status, "error")
        err = cell.error
        self.assertTrue(err.startswith("Traceback (most recent call last):\n"), err)
        self.assertIn(f'File "<cell {cell.id}>", line 4, in <module>\n    inner()', err)
        self.assertIn(f'File "<cell {cell.id}>", line 2, in inner\n    return 1 / 0', err)
        self.assertTrue(err.endswith("ZeroDivisionError: division by zero\n"), err)
        for internal in ("mcp/", "_executor", "_main", "asyncio", "<string>"):
            self.assertNotIn(internal, err)

    def test_async_traceback(self):
        cell = self.rt.run("import asyncio\nasync def boom():\n    await asyncio.sleep(0)\n"
                           "    raise ValueError('bad')\nawait boom()")
        self.assertEqual(cell.status, "error")
        self.assertNotIn("base_events", cell.error)
        self.assertIn("line 4, in boom", cell.error)
        self.assertTrue(cell.error.endswith("ValueError: bad\n"), cell.error)

    def test_syntax_error(self):
        cell = self.rt.run("x = (1,\nprint(x)")
        self.assertEqual(cell.status, "error")
        self.assertIn(f'File "<cell {cell.id}>"', cell.error)
        self.assertIn("SyntaxError", cell.error)
        self.assertNotIn("_executor", cell.error)

    def test_stdout_stderr_order(self):
        code = ("import sys\nfor i in range(2000):\n    print('o', i)\n"
                "    print('e', i, file=sys.stderr)\nsys.stdout.write('tail')")
        cell = self.run_ok(code)
        self.assertEqual(cell.stdout, "".join(f"o {i}\n" for i in range(2000)) + "tail")
        self.assertEqual(cell.stderr, "".join(f"e {i}\n" for i in range(2000)))
        # across streams, Python-level writes keep their order too
        lines = [ln for f in cell.frames if f["t"] == "out" for ln in f["data"].splitlines()]
        self.assertEqual(lines[:4], ["o 0", "e 0", "o 1", "e 1"])

    def test_fd_output(self):
        cell = self.run_ok(
            "import os, subprocess, sys\n"
            "print('before', flush=True)\n"
            "os.write(1, b'fd1\\n'); os.write(2, b'fd2\\n')\n"
            "subprocess.run(['sh', '-c', 'echo sub-out; echo sub-err >&2'])\n"
            "os.system('echo system')\n"
            "print('after')")
        self.assertEqual(cell.stdout, "before\nfd1\nsub-out\nsystem\nafter\n")
        self.assertEqual(cell.stderr, "fd2\nsub-err\n")

    def test_frame_fds_not_inherited(self):
        cell = self.run_ok("import os, subprocess\nos.system('ls /proc/self/fd')\n"
                           "subprocess.run(['ls', '/proc/self/fd'], close_fds=False)")
        self.assertEqual(cell.stdout, "0\n1\n2\n3\n" * 2)  # 3: the directory ls reads

    def test_fd_output_order_with_buffered_print(self):
        cell = self.run_ok("import subprocess\nprint('a')\nsubprocess.run(['echo', 'b'])\nprint('c')")
        self.assertEqual(cell.stdout, "a\nb\nc\n")

    def test_frame_like_output_is_output(self):
        line = '{"t":"done","id":999999,"status":"ok","value":null,"error":null}'
        cell = self.run_ok(
            "import subprocess, sys\n"
            f"subprocess.run(['printf', '%s\\\\n', {line!r}])\n"
            f"print({line!r})\n"
            f"print({line!r}, file=sys.stderr)\n"
            f"import os; os.write(1, {line!r}.encode() + b'\\n')")
        self.assertEqual(cell.stdout, (line + "\n") * 3)
        self.assertEqual(cell.stderr, line + "\n")
        self.assertFalse([f for f in self.rt.stray if f.get("id") == 999999])

    def test_invalid_utf8(self):
        cell = self.run_ok(
            "import os, sys\n"
            "os.write(1, b'a\\xffb\\n')\n"
            "os.write(1, b'\\xe2\\x82'); os.write(1, b'\\xac\\n')\n"          # split euro sign
            "sys.stdout.buffer.write(b'\\xe2\\x82'); sys.stdout.buffer.write(b'\\xac|\\xc3\\n')\n"
            "print('\\udcff')")                                                # lone surrogate
        self.assertEqual(cell.stdout, "a\ufffdb\n\u20ac\n\u20ac|\ufffd\n\ufffd\n")

    def test_nul_bytes(self):
        cell = self.run_ok("import os\nprint('a\\x00b')\nos.write(1, b'c\\x00d\\n')")
        self.assertEqual(cell.stdout, "a\x00b\nc\x00d\n")

    def test_64mib_print(self):
        size = 64 << 20
        cell = self.run_ok(f"print('x' * {size}, end='')\nprint('!')")
        out = [f for f in cell.frames if f["t"] == "out"]
        self.assertEqual(sum(len(f["data"]) for f in out), size + 2)
        self.assertTrue(all(len(f["data"]) <= 1 << 20 for f in out))
        self.assertTrue(cell.stdout.endswith("x!\n"))

    def test_large_fd_output(self):
        size = 16 << 20
        cell = self.run_ok(f"import subprocess\nsubprocess.run('yes abcdefg | head -c {size}', shell=True)")
        self.assertEqual(len(cell.stdout), size)
        self.assertTrue(cell.stdout.startswith("abcdefg\nabcdefg\n"))

    @unittest.skipIf(COMMAND, "the marker files live in the runtime's own container")
    def test_output_between_cells_goes_to_next_cell(self):
        marks = tempfile.mkdtemp()
        self.run_ok("import threading, time, subprocess\n"
                    f"marks = {marks!r}\n"
                    "def late():\n"
                    "    time.sleep(0.2)\n"
                    "    print('late thread')\n"
                    "    open(marks + '/thread', 'w').close()\n"
                    "threading.Thread(target=late).start()\n"
                    "subprocess.Popen(['sh', '-c', 'sleep 0.2; echo late process; touch \"$0\"', marks + '/process'])")
        # Both printed after the cell ended, while no cell ran.
        self.rt.wait_file(os.path.join(marks, "thread"))
        self.rt.wait_file(os.path.join(marks, "process"))
        cell = self.run_ok("print('now')")
        self.assertEqual(sorted(cell.stdout.splitlines()), ["late process", "late thread", "now"])
        self.assertTrue(cell.stdout.endswith("now\n"))

    def test_output_of_threads(self):
        cell = self.run_ok("import threading\nt = threading.Thread(target=print, args=('from thread',))\n"
                           "t.start(); t.join()")
        self.assertEqual(cell.stdout, "from thread\n")

    def test_multiprocessing_child_output(self):
        cell = self.run_ok("import multiprocessing as mp\n"
                           "p = mp.get_context('fork').Process(target=print, args=('child',))\n"
                           "p.start(); p.join(); p.exitcode")
        self.assertEqual(cell.value, "0")
        self.assertEqual(cell.stdout, "child\n")

    def test_stdin_is_empty(self):
        cell = self.rt.run("input()")
        self.assertEqual(cell.status, "error")
        self.assertIn("EOFError", cell.error)
        self.assertEqual(self.run_ok("import subprocess; subprocess.run(['cat']).returncode").value, "0")

    def test_clean_exit_ends_the_cell_ok(self):
        self.run_ok("kept = 'yes'")
        for code in ["print('before')\nimport sys; sys.exit(0)\nprint('after')", "exit()",
                     "import sys; sys.exit()", "quit()", "raise SystemExit(False)",
                     "import asyncio\nawait asyncio.sleep(0)\nexit(0)"]:
            cell = self.run_ok(code)
            self.assertIsNone(cell.error, code)
            self.assertNotIn("after", cell.stdout)
        self.assertEqual(self.run_ok("kept").value, "'yes'")

    def test_exit_with_a_code_is_an_error_naming_it(self):
        self.run_ok("kept = 'yes'")
        for code, shown in [("import sys; sys.exit(3)", "code 3"), ("exit(1)", "code 1"),
                            ("raise SystemExit('bye')", "code 'bye'")]:
            cell = self.rt.run(code)
            self.assertEqual(cell.status, "error", code)
            self.assertIn("SystemExit", cell.error)
            self.assertIn(f"The cell exited with {shown}.", cell.error)
            self.assertIn("not the sandbox", cell.error)
        self.assertEqual(self.run_ok("kept").value, "'yes'")
        self.assertEqual(self.run_ok("import sys; sys.stdin.read()").value, "''")

    def test_closed_fd1_is_restored(self):
        self.run_ok("import os\nos.close(1)\nos.close(2)")
        cell = self.run_ok("import os, subprocess\nos.write(1, b'back\\n')\nprint('py')\n"
                           "subprocess.run(['sh', '-c', 'echo sub; echo err >&2'])")
        self.assertEqual(cell.stdout, "back\npy\nsub\n")
        self.assertEqual(cell.stderr, "err\n")
        self.run_ok("import os\nfd = os.open('/dev/null', os.O_WRONLY)\nos.dup2(fd, 1)\nos.dup2(fd, 2)")
        cell = self.run_ok("os.write(1, b'again\\n'); os.write(2, b'err2\\n')")
        self.assertEqual((cell.stdout, cell.stderr), ("again\n", "err2\n"))

    def test_stdout_api(self):
        cell = self.run_ok("import sys\nsys.stdout.reconfigure(encoding='utf-8')\n"
                           "n = sys.stdout.write('w')\nsys.stdout.buffer.write(b'b')\n"
                           "sys.stdout.flush()\n(n, sys.stdout.isatty(), sys.stdout.fileno(), "
                           "sys.stderr.fileno(), sys.stdout.encoding)")
        self.assertEqual(cell.value, "(1, False, 1, 2, 'utf-8')")
        self.assertEqual(cell.stdout, "wb")

    def test_sys_stdout_replaced_is_restored(self):
        self.run_ok("import sys, io\nsys.stdout = io.StringIO()\nprint('lost')")
        self.assertEqual(self.run_ok("print('seen')").stdout, "seen\n")

    def test_interrupt_sleep_keeps_state(self):
        # One line for the print and the sleep: the interrupt can come
        # while print() is still returning, after its output was read.
        cell = self.rt.start("import time\nbefore = 'kept'\nprint('sleeping', flush=True); time.sleep(60)\n"
                             "after = 1")
        self.rt.wait_output(cell, "sleeping")
        self.rt.interrupt(cell)
        self.rt.wait(cell, 10)  # far less than the sleep: it was cut short
        self.assertEqual(cell.status, "interrupted")
        self.assertIn("KeyboardInterrupt", cell.error)
        self.assertIn(f'File "<cell {cell.id}>", line 3', cell.error)
        self.assertEqual(self.run_ok("before").value, "'kept'")
        self.assertEqual(self.rt.run("after").status, "error")

    def test_interrupt_async_cancels_tasks(self):
        cell = self.rt.start("import asyncio\nbg = asyncio.create_task(asyncio.sleep(100))\n"
                             "print('waiting', flush=True)\nawait asyncio.sleep(60)")
        self.rt.wait_output(cell, "waiting")
        self.rt.interrupt(cell)
        self.rt.wait(cell, 10)
        self.assertEqual(cell.status, "interrupted")
        self.assertEqual(self.run_ok("bg.cancelled()").value, "True")
        self.assertEqual(self.run_ok("await asyncio.sleep(0.01, 'loop ok')").value, "'loop ok'")

    def test_interrupt_busy_loop(self):
        cell = self.rt.start("n = 0\nwhile True:\n    n += 1\n    if n == 1:\n        print('go', flush=True)")
        self.rt.wait_output(cell, "go")
        self.rt.interrupt(cell)
        self.rt.wait(cell, 10)
        self.assertEqual(cell.status, "interrupted")
        self.assertEqual(self.run_ok("n > 0").value, "True")

    def test_interrupt_while_printing_keeps_frames_whole(self):
        cell = self.rt.start("print('go', flush=True)\nwhile True:\n    print('z' * 1000, flush=True)")
        self.rt.wait_output(cell, ("z" * 1000 + "\n") * 20)  # well into the loop
        self.rt.interrupt(cell)
        self.rt.wait(cell, 10)
        self.assertEqual(cell.status, "interrupted")  # and the harness parsed every frame
        self.assertEqual(self.run_ok("print('ok')").stdout, "ok\n")

    def test_sigint_from_user_code_and_handler_restored(self):
        cell = self.rt.run("import os, signal, time\nos.kill(os.getpid(), signal.SIGINT)\ntime.sleep(5)")
        self.assertEqual(cell.status, "interrupted")
        self.run_ok("signal.signal(signal.SIGINT, signal.SIG_IGN)")
        cell = self.rt.start("print('go', flush=True)\ntime.sleep(60)")
        self.rt.wait_output(cell, "go")
        self.rt.interrupt(cell)
        self.assertEqual(self.rt.wait(cell, 10).status, "interrupted")

    def test_interrupt_for_other_cell_is_ignored(self):
        cell = self.rt.start("import time\ntime.sleep(0.3)\n'finished'")
        self.rt.send({"t": "interrupt", "id": cell.id + 1000})
        self.assertEqual(self.rt.wait(cell).value, "'finished'")

    def test_unknown_frame_ignored(self):
        self.rt.send({"t": "future-thing", "x": 1})
        self.assertEqual(self.run_ok("1").value, "1")

    def test_keyboard_interrupt_raised_by_code(self):
        cell = self.rt.run("raise KeyboardInterrupt")
        self.assertEqual(cell.status, "interrupted")


class LifecycleTest(unittest.TestCase):
    def test_eof_exits(self):
        rt = Runtime()
        self.assertEqual(rt.run("1").value, "1")
        self.assertEqual(rt.close(timeout=5), 0)

    def test_eof_during_cell_exits(self):
        rt = Runtime()
        cell = rt.start("print('running', flush=True)\nimport time\ntime.sleep(60)")
        rt.wait_output(cell, "running")
        self.assertEqual(rt.close(timeout=5), 0)

    def test_no_servers(self):
        rt = Runtime(servers=[])
        try:
            self.assertEqual(rt.run("runtime.discovered_servers()").value, "()")
            self.assertIn("none configured", rt.run("runtime.capability_summary()").value)
        finally:
            rt.close()


if __name__ == "__main__":
    unittest.main()
