"""The library's exceptions. The CLI turns each into one line and an exit status.

Exit status (docs/design.md): 0 success, 2 bad usage or bad input, 3 refused by a
gate (holdout, tamper), 1 anything else.
"""

from __future__ import annotations


class PairstoreError(Exception):
    """Base class; `exit_code` is what the CLI exits with."""

    exit_code = 1


class BadInput(PairstoreError):
    """Bad input: names the file, the line (or row) and the field where known."""

    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        field: str | None = None,
        unit: str | None = None,
    ):
        self.path, self.line, self.field = path, line, field
        where = []
        if path is not None:
            where.append(str(path))
        if line is not None:
            # Parquet has rows, text files have lines.
            unit = unit or ("row" if str(path or "").lower().endswith(".parquet") else "line")
            where.append(f"{unit} {line}")
        if field is not None:
            where.append(f"field '{field}'")
        self.reason = message
        super().__init__(f"{': '.join([', '.join(where), message]) if where else message}")


class BadInputs(BadInput):
    """Several mistakes found at once (every mistake of a recipe file, say): one line each, in `problems`."""

    def __init__(self, problems: list[BadInput]):
        first = problems[0]
        super().__init__(first.reason, path=first.path, line=first.line, field=first.field)
        self.problems = list(problems)
        self.args = (f"{len(problems)} mistakes:\n" + "\n".join(f"  {p}" for p in problems),)


class NotFound(PairstoreError):
    """A named thing (round, holdout set, checkpoint, ...) does not exist."""

    exit_code = 2


class StoreBusy(PairstoreError):
    """Another process holds the store file."""

    exit_code = 1


class GateRefused(PairstoreError):
    """A gate refused: a holdout hit at export, a tampered mixture, ...

    `hits` holds what the gate found (pairstore.holdout.matching.Hit for a holdout refusal), so callers read
    the held-out ids from it rather than from the message."""

    exit_code = 3

    def __init__(self, message: str, *, hits: list | None = None):
        super().__init__(message)
        self.hits = list(hits or [])


# The lines of a DuckDB error that help the user fix it: its hint ("Did you mean "pairs"?") and the
# columns it could have meant ("Candidate bindings: ..."). The rest (the LINE pointer) is left out, so the
# error stays one line.
_DUCKDB_HINTS = ("did you mean", "candidate bindings")


def duckdb_message(error: BaseException) -> str:
    """A DuckDB error as one line: its first line and its hints, joined."""
    lines = [ln.strip() for ln in str(error).splitlines() if ln.strip()]
    if not lines:
        return type(error).__name__
    hints = [ln for ln in lines[1:] if ln.lower().startswith(_DUCKDB_HINTS)]
    return " ".join([lines[0], *hints])
