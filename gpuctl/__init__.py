"""gpuctl, the one command people type: read the stack (status, events, sql, watch, report), act on it
(inject-fault, set-healthy, check) and run it (up, serve …).

It sits above the stages and is the only package that wires them together: ``up`` and ``serve``
import producers/, rules/ and sinks/ (lazily, so that reading commands start fast); none of them
imports gpuctl.
"""
