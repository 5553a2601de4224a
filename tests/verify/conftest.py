"""The property suite's coverage table, printed once at the end of a run (tests/verify/test_verify_property.py
records it on its report, which pytest-xdist carries from a worker to the controller)."""

from __future__ import annotations

import pytest

COVERAGE_PROPERTY = "verify property coverage"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for outcome in ("passed", "failed"):
        for report in terminalreporter.stats.get(outcome, []):
            for name, value in getattr(report, "user_properties", ()):
                if name == COVERAGE_PROPERTY:
                    terminalreporter.write_sep(
                        "-", f"{report.nodeid}: definite verdicts by presentation class"
                    )
                    terminalreporter.write_line(str(value))
