"""A training run's loss as a log file can hold it: one JSON object per logging step in training_log.jsonl
beside the adapter, and one line on stderr when stderr is not a terminal (Slurm, nohup, a CI log).

    log = TrainingLog("m11a", max_steps=250, history=[], jsonl=open(".../training_log.jsonl", "w"),
                      stream=sys.stderr)
    log.begin(step=0)
    log.log(10, {"loss": 0.6931, "rewards/accuracies": 0.5, "rewards/margins": 0.0123}, main=True)
    # train dpo m11a: step 10 of 250, loss 0.6931, reward accuracy 0.500, margin 0.0123, 0.41 steps/s,
    #   9 min 45 s left

train/dpo.py calls it from a TrainerCallback's on_log. Every process keeps the history (the evidence's
log_history); only the main process writes the file and the line.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import IO, Any

from pairstore.progress import duration_text, rate_text

LOG_FILE = "training_log.jsonl"

# What a line shows of TRL's logs, in this order: key, label, format.
_SHOWN = (
    ("loss", "loss", "{:.4f}"),
    ("rewards/accuracies", "reward accuracy", "{:.3f}"),
    ("rewards/margins", "margin", "{:.4f}"),
    ("learning_rate", "lr", "{:.2e}"),
    ("train_loss", "mean loss", "{:.4f}"),
)


class TrainingLog:
    """The logs of one run: `history` (every process), the JSONL file and the stderr line (the main
    process; either may be None)."""

    def __init__(
        self,
        round_name: str,
        max_steps: int,
        history: list[dict[str, Any]],
        jsonl: IO[str] | None,
        stream: IO[str] | None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.round, self.max_steps, self.history = round_name, max_steps, history
        self.jsonl, self.stream, self.clock = jsonl, stream, clock
        self.start_step = 0
        self.started = clock()

    def begin(self, step: int) -> None:
        """Training starts (or resumes) at `step`: the rate counts from here."""
        self.start_step, self.started = step, self.clock()

    def log(self, step: int, logs: dict[str, Any], *, main: bool) -> None:
        entry = dict(logs, step=step)
        self.history.append(entry)
        if not main:
            return
        if self.jsonl is not None:
            self.jsonl.write(json.dumps(entry, sort_keys=True, default=str) + "\n")
            self.jsonl.flush()
        if self.stream is not None:
            print(self.line(step, logs), file=self.stream, flush=True)

    def line(self, step: int, logs: dict[str, Any]) -> str:
        """The stderr line: step, loss, reward accuracy, margin, lr, rate and time left."""
        parts = [f"train dpo {self.round}: step {step} of {self.max_steps}"]
        for key, label, fmt in _SHOWN:
            value = logs.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                parts.append(f"{label} {fmt.format(value)}")
        seconds = self.clock() - self.started
        done = step - self.start_step
        if done > 0 and seconds > 0:
            parts.append(rate_text(done, seconds, "steps"))
            if step < self.max_steps:
                parts.append(f"{duration_text((self.max_steps - step) * seconds / done)} left")
        return ", ".join(parts)
