"""The kernel log is input an attacker can shape: a device, filesystem or process name, a USB string, a file handed to
`gpuctl parse`. No line may make a rule, or the whole classifier, take long, or a storm of such lines would stall the
producer that must report real faults. Each line here is the longest the classifier reads (MAX_LINE), built where
backtracking hurts: a rule's anchor repeated, or followed by a long run of one character its quantifiers take."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator

import pytest

from producers.kernel import MAX_LINE, classify, rules

FILLERS = ("a", " ", "0", "-", ": ", "(", "[", ".", "a:")
# CPU seconds for one rule on one line: a linear rule takes < 3 ms (measured: 0.1-2.5 ms), one that backtracks
# quadratically 25 ms to seconds, a cubic one minutes.
BOUND_S = 0.02


def hostile(anchor: str) -> Iterator[str]:
    for filler in FILLERS:
        unit = anchor + filler * 20
        yield (unit * (MAX_LINE // len(unit) + 1))[:MAX_LINE]
        yield (anchor + filler * MAX_LINE)[:MAX_LINE]


def cpu_time(search: Callable[[str], object], line: str) -> float:
    """CPU seconds for search(line), cut off at 2 s of wall time (a cubic regex would otherwise run for minutes)."""

    def stop(signum: int, frame: object) -> None:
        raise TimeoutError

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, 2.0)
    start = time.process_time()
    try:
        search(line)
    except TimeoutError:
        return float("inf")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return time.process_time() - start


def steady_cpu_time(search: Callable[[str], object], line: str) -> float:
    """The least of three tries where the first is over the bound: a busy machine's interrupts only add time
    (a linear rule measured 14 ms steady, 27 ms once), while a backtracking one is slow every time."""
    first = cpu_time(search, line)
    return first if first < BOUND_S else min(first, cpu_time(search, line), cpu_time(search, line))


@pytest.mark.parametrize("index", range(len(rules())))
def test_no_rule_takes_long_on_a_hostile_line(index: int) -> None:
    rule = rules()[index]
    worst = max(steady_cpu_time(rule.regex.search, line) for anchor in rule.anchors[:4] for line in hostile(anchor))
    assert worst < BOUND_S, f"{worst:.3f} s: {rule.regex.pattern[:120]}"


# Shapes for the classifier's own regexes (heads, PCI ids, pid and comm fields), not any one rule's.
SHAPES = ("[", "[1", "<3>", "0000:", "0000:00:00.0 ", "pid=", "comm[", "a[1] ", "NVRM: ", "Xid (", "(PCI:", "\\x00")


@pytest.mark.parametrize("shape", SHAPES)
def test_the_whole_classifier_stays_quick_on_a_hostile_line(shape: str) -> None:
    line = (shape * (MAX_LINE // len(shape) + 1))[:MAX_LINE]
    classify.cache_clear()
    assert cpu_time(classify, line) < 5 * BOUND_S
    assert cpu_time(classify, "kernel: " + shape * 10 + "a" * MAX_LINE) < 5 * BOUND_S
