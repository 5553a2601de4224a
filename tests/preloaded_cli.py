"""`pairstore` commands run as real processes, each forked from one that has already imported the modules
they need, instead of started from a bare interpreter.

The fault tests kill a command with SIGKILL at every publish point and run it again after each kill: dozens
of processes per test. Started bare, each spends seconds importing torch, transformers and peft before it
reaches its first publish point (about 8 s on a loaded 2-core machine, for a command that itself takes
about one). A fork of a process that has done those imports starts in milliseconds and is still a
separate process with its own memory: SIGKILL at a publish point, what it leaves on disk and its exit
status are those of the command run bare.

What a fork could change is only what a module reads once, at import: the imports ran under the
preloading process's environment. So a run shares that environment except for variables the library reads
at the moment it acts (PAIRSTORE_FAULT_KILL_AT and PAIRSTORE_FAULT_TRACE, read by
pairstore.files.publish_point at every point); a run under any other difference gets a new preloading
process started under its environment. The preloading process itself never runs a command (it only
imports), so every fork starts from the same state, its publish-point count at zero.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

# Variables the library reads when it acts, never at import (see the module's docstring).
READ_WHEN_USED = ("PAIRSTORE_FAULT_KILL_AT", "PAIRSTORE_FAULT_TRACE")
# Variables that differ from test to test and that nothing reads at import: pytest names the running test
# and its phase in PYTEST_CURRENT_TEST. Compared, it would start a new preloading process (torch,
# transformers and peft imported again) for every test of a module; each run still gets the value.
CHANGES_PER_TEST = ("PYTEST_CURRENT_TEST",)

# The preloading process: import the modules named on its command line, then, for each request line on
# stdin, fork; the child takes the request's environment, working folder and output files and runs the
# CLI's main() exactly as `python -c "from pairstore.cli import main; main()"` would (its exit, atexit
# handlers included, is the interpreter's own); the parent reports the child's pid, then its exit status
# (negative: the signal that ended it).
_PRELOADER = r"""
import json, os, sys
for name in sys.argv[1:]:
    __import__(name)
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        for fd, path, flags in (
            (0, os.devnull, os.O_RDONLY),
            (1, request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
            (2, request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        ):
            os.dup2(os.open(path, flags, 0o644), fd)
        sys.argv = ["-c", *request["args"]]
        from pairstore.cli import main
        main()
        sys.exit(0)
    print(json.dumps({"pid": pid}), flush=True)
    _, status = os.waitpid(pid, 0)
    print(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}), flush=True)
"""


class PreloadedCli:
    """run(args, env=..., timeout=...) -> subprocess.CompletedProcess of `pairstore ARGS` in a fresh process,
    forked from one that imported `modules` under the same environment (less READ_WHEN_USED). A run under
    another environment starts a new preloading process for it first."""

    def __init__(self, modules: list[str], scratch: Path):
        self.modules = list(modules)
        self.scratch = scratch  # the runs' stdout and stderr files
        scratch.mkdir(parents=True, exist_ok=True)
        self.runs = 0
        self.process: subprocess.Popen | None = None
        self.env: dict[str, str] = {}

    def _start(self, env: dict[str, str]) -> None:
        self.close()
        self.env = env
        self.process = subprocess.Popen(
            [sys.executable, "-c", _PRELOADER, *self.modules],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        # Replies are read from the pipe's descriptor, not through a buffered reader: a reader could take
        # two replies in one read and leave select() waiting for the second, already taken.
        self._pending = b""
        self._reply(600)

    def _reply(self, timeout: float) -> dict:
        assert self.process is not None and self.process.stdout is not None
        fd = self.process.stdout.fileno()
        while b"\n" not in self._pending:
            ready, _, _ = select.select([fd], [], [], timeout)
            if not ready:
                raise TimeoutError(f"no answer from the preloading process in {timeout} s")
            chunk = os.read(fd, 65536)
            if not chunk:
                raise RuntimeError(f"the preloading process ended (status {self.process.wait()})")
            self._pending += chunk
        line, self._pending = self._pending.split(b"\n", 1)
        return json.loads(line)

    def run(self, args: list[str], *, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
        base = {k: v for k, v in env.items() if k not in READ_WHEN_USED + CHANGES_PER_TEST}
        if self.process is None or base != self.env:
            self._start(base)
        assert self.process is not None and self.process.stdin is not None
        self.runs += 1
        out, err = self.scratch / f"run{self.runs}.out", self.scratch / f"run{self.runs}.err"
        request = {"args": list(args), "env": env, "cwd": os.getcwd(), "stdout": str(out), "stderr": str(err)}
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        pid = self._reply(60)["pid"]
        try:
            code = self._reply(timeout)["returncode"]
        except TimeoutError:
            os.kill(pid, signal.SIGKILL)
            self._reply(60)
            raise subprocess.TimeoutExpired(args, timeout) from None
        return subprocess.CompletedProcess(args, code, out.read_text(), err.read_text())

    def close(self) -> None:
        if self.process is None:
            return
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()
        self.process.wait(60)
        self.process = None
