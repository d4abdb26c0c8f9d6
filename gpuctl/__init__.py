"""gpuctl, the one command people type: read the stack (status, events, sql, watch, report), act on it
(inject-fault, set-healthy, check) and run it (up, serve …).

It sits above the stages and is the only package that wires them together: ``up`` and ``serve``
import producers/, rules/ and sinks/ (lazily, so that reading commands start fast); none of them
imports gpuctl.
"""

import sys


def main() -> None:
    """The console script. Python takes a while to load gpuctl's commands on a busy node: Ctrl-C meanwhile
    is an interruption like any later one (exit 130), not a traceback from deep inside an import."""
    import faulthandler
    import signal

    # `kill -USR1 <pid>` writes every thread's stack to stderr: a process that hangs says where, and keeps running.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    # A shell starts a background job with SIGINT ignored, and Python keeps it so: up's own handler, installed once
    # it starts, would honour a SIGINT that the first second of start-up had lost. Honour it from the first instant.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        from gpuctl.main import main as run
    except KeyboardInterrupt:
        sys.exit(130)
    run()
