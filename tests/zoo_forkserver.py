"""A fork server for the suite's ``zoo`` processes: ``zoo_testing.run_zoo`` runs its commands through it.

Most of a tiny ``zoo fit`` in a fresh interpreter is spent importing torch, Lightning and torchmetrics (seconds
idle, about twice that on a loaded 2-core machine), and 16 of the suite's files start ``zoo`` processes. The
server (this file run as a script, one per pytest worker) imports those third-party packages once, then forks a
child per command. The child is a process of its own, as with ``subprocess.run``: its own environment, working
directory, ``sys.path`` (the request's ``PYTHONPATH``), argv, stdin from /dev/null, stdout and stderr to files, and
an exit status. It runs ``python -m zoo.cli.main ARGS`` through ``runpy`` as the interpreter does. Nothing of
``zoo`` or of a plugin is imported before the fork, so the code under test is imported in the child, with the
child's environment. No library offers a fork server for a command line (multiprocessing's forkserver runs Python
functions, not ``-m`` modules with their own stdio and environment), hence this file.

Protocol, one request at a time, JSON lines: the client writes ``{"args", "env", "cwd", "stdout", "stderr"}``; the
server answers ``{"pid": N}`` once the child exists and ``{"returncode": R}`` when it has ended (``-S`` for signal
S, as ``subprocess`` reports it). The server never runs a parallel region, so the child can start OpenMP threads.

``ZOO_TEST_FORK_SERVER=0`` makes ``run_zoo`` start a fresh interpreter per command instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

SWITCH = "ZOO_TEST_FORK_SERVER"


class ForkServer:
    """The client: starts the server lazily and restarts it if it died."""

    def __init__(self) -> None:
        self._server: subprocess.Popen | None = None
        self._pending = b""

    def _start(self) -> subprocess.Popen:
        if self._server is None or self._server.poll() is not None:
            env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
            # -P: this folder stays off sys.path (tests/ holds folders such as utils/ and nn/ that could shadow a
            # package while the server imports); the child sets the sys.path of `python -m` itself
            self._server = subprocess.Popen(
                [sys.executable, "-P", __file__],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
                cwd=tempfile.gettempdir(),
            )
            self._pending = b""
        return self._server

    def _reply(self, server: subprocess.Popen, timeout: float | None) -> dict | None:
        """The server's next line, or None when ``timeout`` passes first."""
        fd = server.stdout.fileno()
        while b"\n" not in self._pending:
            ready, _, _ = select.select([fd], [], [], timeout)
            if not ready:
                return None
            chunk = os.read(fd, 4096)
            if not chunk:
                raise RuntimeError(f"the fork server ended (exit status {server.wait()}); see the test's stderr")
            self._pending += chunk
        line, self._pending = self._pending.split(b"\n", 1)
        return json.loads(line)

    def run(self, args: list[str], env: dict[str, str], cwd: Path, timeout: float) -> subprocess.CompletedProcess:
        server = self._start()
        command = [sys.executable, "-m", "zoo.cli.main", *args]
        with tempfile.TemporaryDirectory() as folder:
            out, err = Path(folder) / "stdout", Path(folder) / "stderr"
            request = dict(args=list(args), env=dict(env), cwd=str(cwd), stdout=str(out), stderr=str(err))
            server.stdin.write((json.dumps(request) + "\n").encode())
            server.stdin.flush()
            pid = self._reply(server, None)["pid"]
            done = self._reply(server, timeout)
            if done is None:  # what subprocess.run does on a timeout: kill the child, then raise
                os.kill(pid, signal.SIGKILL)
                self._reply(server, None)
                raise subprocess.TimeoutExpired(command, timeout, out.read_bytes(), err.read_bytes())
            return subprocess.CompletedProcess(
                command,
                done["returncode"],
                out.read_text(errors="replace"),
                err.read_text(errors="replace"),
            )


# ------------------------------------------------------------------------------------------------ the server


def _redirect(request: dict) -> None:
    for fd, path, flags in (
        (0, os.devnull, os.O_RDONLY),
        (1, request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        (2, request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
    ):
        opened = os.open(path, flags, 0o600)
        os.dup2(opened, fd)
        os.close(opened)


def _exit_code(stop: SystemExit) -> int:
    if stop.code is None:
        return 0
    if isinstance(stop.code, int):
        return stop.code
    print(stop.code, file=sys.stderr)  # what the interpreter does with sys.exit("message")
    return 1


def _child(request: dict, base_path: list[str], default_threads: int) -> None:
    """Become ``python -m zoo.cli.main ARGS`` run in ``cwd`` with ``env``; never returns."""
    import atexit
    import runpy
    import threading

    import torch

    code = 1
    try:
        _redirect(request)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        extra = [p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
        sys.path[:] = [os.getcwd(), *extra, *base_path]  # what `python -m` puts on sys.path
        threads = request["env"].get("OMP_NUM_THREADS", "")
        torch.set_num_threads(int(threads) if threads.isdigit() and int(threads) > 0 else default_threads)
        sys.argv = ["zoo", *request["args"]]
        try:
            runpy.run_module("zoo.cli.main", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as stop:
            code = _exit_code(stop)
        threading._shutdown()  # as at an interpreter's exit: wait for non-daemon threads, then run atexit
        atexit._run_exitfuncs()
    except BaseException:  # noqa: BLE001 (as an interpreter does with an uncaught exception; never return to the loop)
        import traceback

        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)


def _serve() -> None:
    # sys.path of a plain interpreter (-P kept this folder off it), less the PYTHONPATH this server started with
    started_with = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    base_path = [p for p in sys.path if p and p not in started_with]
    import pytorch_lightning  # noqa: F401  (the imports this server is for)
    import pytorch_lightning.cli  # noqa: F401
    import torch
    import torchmetrics  # noqa: F401

    default_threads = torch.get_num_threads()
    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            _child(request, base_path, default_threads)
        print(json.dumps({"pid": pid}), flush=True)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}), flush=True)


if __name__ == "__main__":
    _serve()
