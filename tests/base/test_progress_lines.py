"""Progress a log file can hold (pairstore.progress): a long stage writes a line every N seconds with its
count, rate and ETA, rates never round to 0, and a fast loop reads the clock rarely."""

from __future__ import annotations

import io
import re

import pytest

from pairstore.errors import BadInput
from pairstore.progress import LineProgress, duration_text, for_terminal, log_every, rate_text


def test_rates_and_durations_read_at_any_speed():
    assert [rate_text(x) for x in (12345.6, 56.4, 3.21, 0.0412, 0.0)] == ["12,346", "56", "3.2", "0.041", "0"]
    assert [duration_text(s) for s in (0.4, 12, 245, 11220)] == ["0 s", "12 s", "4 min 05 s", "3 h 07 min"]


def test_a_stage_writes_count_rate_and_eta_while_it_runs():
    out = io.StringIO()
    with LineProgress(out, every=0.0).stage("generate", total=4, unit="prompts") as stage:
        for _ in range(4):
            stage.advance()
    lines = out.getvalue().splitlines()
    running = [ln for ln in lines if " in " not in ln]
    assert len(running) == 4, lines
    pattern = r"generate: (\d) of 4 prompts, [\d.,e+]+ prompts/s, ETA \d+ s"
    assert [int(re.fullmatch(pattern, ln).group(1)) for ln in running] == [1, 2, 3, 4]
    assert re.fullmatch(r"generate: 4 prompts in \d+\.\d s, [\d.,]+ prompts/s", lines[-1]), lines[-1]


def test_a_quick_stage_writes_only_its_last_line_and_reads_the_clock_rarely(monkeypatch):
    import pairstore.progress as progress

    reads = []
    real = progress.time.perf_counter
    monkeypatch.setattr(progress.time, "perf_counter", lambda: reads.append(1) or real())
    out = io.StringIO()
    with LineProgress(out, every=30.0).stage("read", total=None) as stage:
        for _ in range(200_000):
            stage.advance()
    assert len(out.getvalue().splitlines()) == 1
    assert len(reads) < 200, len(reads)  # the stride grows while the clock says little time passed


def test_the_interval_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("PAIRSTORE_PROGRESS_EVERY", "5")
    assert log_every() == 5.0 and for_terminal(stream=io.StringIO()).every == 5.0
    monkeypatch.setenv("PAIRSTORE_PROGRESS_EVERY", "soon")
    with pytest.raises(BadInput, match="PAIRSTORE_PROGRESS_EVERY must be a number of seconds"):
        log_every()
