"""An input format, declared once: its fields and what each one is.

    FORMAT = declare(Format(
        name="arena55k", table="battles", summary="lmsys-arena-human-preference-55k rows",
        fields=(
            Field("id", ID, "the battle's id"),
            Field("prompt", TEXT, "the user turns (a JSON list of strings)", role="user"),
            ...
        ),
        parse=parse_arena55k,
    ))

A field is a text the gate reads (`what=TEXT`, with the `role` it takes in the stored row: a user turn,
the chosen answer, an output, ...) or one of the kinds of non-text (NON_TEXT: an id, a model name, a
score, a time, a label, a setting, other metadata). A field's name is a key of the record, or a path
into it (`states[].messages`: every element's `messages`); a field covers everything under it.

From the declaration come: the check that a record holds no text outside it (unread_text: every string
leaf of a record is under a declared field, or the file is refused naming the record and the field),
the format lists of the CLI (pairstore.ingest.formats), the messages that name a format, and the tables
of docs/schema.md's "Input formats" (format_reference; tests/ingest/test_formats.py keeps the page in
step). A columns format's fields also carry their kind (pairstore.ingest.kinds): how each value is read,
one record at a time or a whole column at once (pairstore.ingest.batches). A records format gives
`parse`, the per-record reading its table's ingest calls.

Formats register themselves when their module is imported; pairstore.ingest.formats imports every
module of its package, so adding a format is one file there (and its test).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pairstore.errors import BadInput
from pairstore.ingest.kinds import Kind

if TYPE_CHECKING:
    from pairstore.files import StrPath
    from pairstore.ingest.records import Fields

TEXT = "text"
ID, MODEL, SCORE, TIME, LABEL, SETTING, META = "id", "model", "score", "time", "label", "setting", "meta"
NON_TEXT = {
    ID: "an id",
    MODEL: "a model's name",
    SCORE: "a score, a metric or a flag",
    TIME: "a time",
    LABEL: "a label: a vote, a kind, a filter, a language, a category, a role",
    SETTING: "a sampling setting",
    META: "other metadata (its note says what)",
}
TABLES = ("battles", "problems", "generations", "evals", "judgments", "pairs")


@dataclass(frozen=True)
class Field:
    """One field of a format (module docstring)."""

    name: str  # the record's key, or a path into it: `a.b`, `a[].b`
    what: str  # TEXT or a key of NON_TEXT
    doc: str  # one line: what it holds
    role: str | None = None  # TEXT: where it lands in the stored row
    kind: Kind | None = None  # columns formats: how its values are read
    required: bool = False
    into: str | None = None  # columns formats: the column it fills (its name unless given)
    missing: str = "missing field"  # the message when a required field is not there
    # columns formats: the format's reshape decides whether a record needs it (a multi-turn battle has no
    # own_answer, an HH-RLHF row no prompt): a record without it is read record by record
    reshaped: bool = False

    def __post_init__(self) -> None:
        if self.what != TEXT and self.what not in NON_TEXT:
            raise ValueError(f"field {self.name!r}: unknown what {self.what!r}")
        if self.what == TEXT and not self.role:
            raise ValueError(f"field {self.name!r}: a text needs the role it lands in")

    @property
    def column(self) -> str:
        return self.into or self.name

    @property
    def top(self) -> str:
        """The record key the field is under."""
        return _path_tokens(self.name)[0]


@dataclass(frozen=True)
class Format:
    """One input format of one table's ingest (module docstring)."""

    name: str
    table: str
    summary: str  # one line: what files are in this format
    fields: tuple[Field, ...]
    notes: str = ""  # more about it, for docs/schema.md
    # The keys that say a record is in this format (the pair shapes are told apart by them, and a wrong
    # --format is named by them).
    signature: tuple[str, ...] = ()
    # records formats: the per-record reading (its signature is the table's business)
    parse: Callable[..., Any] | None = None
    # columns formats: what the kinds cannot say, for the fields only a record carries (a multi-turn
    # battle's `turns`): (checked values, the record's Fields) -> the checked values, or several rows
    reshape: Callable[[dict[str, Any], Fields], dict[str, Any] | list[dict[str, Any]]] | None = None
    files: Callable[[StrPath], list[Path]] | None = None  # a path's data files, where not the dataset's
    order: int = 50  # listing order, and the order the pair shapes are tried in
    extra: dict = field(default_factory=dict)  # what one table's ingest needs of it

    def __post_init__(self) -> None:
        if self.table not in TABLES:
            raise ValueError(f"format {self.name!r}: unknown table {self.table!r}")
        names = [f.name for f in self.fields]
        if len(set(names)) != len(names):
            raise ValueError(f"format {self.name!r}: a field declared twice")

    @property
    def reads_columns(self) -> bool:
        return self.parse is None

    def field(self, name: str) -> Field:
        return next(f for f in self.fields if f.name == name)

    def texts(self) -> list[Field]:
        return [f for f in self.fields if f.what == TEXT]

    def non_texts(self) -> list[Field]:
        return [f for f in self.fields if f.what != TEXT]

    def top_keys(self) -> set[str]:
        return {f.top for f in self.fields}


_REGISTRY: dict[tuple[str, str], Format] = {}


def declare(fmt: Format) -> Format:
    """Register a format (at import of its module); a second format of one name in one table is an error."""
    key = (fmt.table, fmt.name)
    if key in _REGISTRY and _REGISTRY[key] is not fmt:
        raise ValueError(f"format {fmt.name!r} of {fmt.table} declared twice")
    _REGISTRY[key] = fmt
    return fmt


def registered() -> dict[tuple[str, str], Format]:
    return dict(_REGISTRY)


# -- the whole record or nothing -----------------------------------------------------------------------


def _path_tokens(path: str) -> list[str]:
    tokens: list[str] = []
    for part in path.split("."):
        lists = 0
        while part.endswith("[]"):
            part, lists = part[:-2], lists + 1
        tokens.append(part)
        tokens.extend(["[]"] * lists)
    return tokens


_COVERED = object()


def _trie(fields: Iterable[Field]) -> dict:
    root: dict = {}
    for f in fields:
        node = root
        tokens = _path_tokens(f.name)
        for t in tokens[:-1]:
            nxt = node.get(t)
            if nxt is _COVERED:
                break
            node = node.setdefault(t, {})
        else:
            node[tokens[-1]] = _COVERED
    return root


def _first_string(value: Any, at: str) -> tuple[str, str] | None:
    stack = [(at, value)]
    while stack:
        where, v = stack.pop()
        if isinstance(v, str):
            return where, v
        if isinstance(v, dict):
            stack.extend((f"{where}.{k}" if where else str(k), x) for k, x in reversed(list(v.items())))
        elif isinstance(v, (list, tuple)):
            stack.extend((f"{where}[{i}]", x) for i, x in reversed(list(enumerate(v))))
    return None


def unread_text(fmt: Format, record: dict) -> tuple[str, str] | None:
    """(path, text) of the first string in `record` that no declared field of `fmt` covers, else None:
    text the format would not read."""
    return _unread(_trie(fmt.fields), record, "")


def _unread(node: dict, value: Any, at: str) -> tuple[str, str] | None:
    if isinstance(value, dict):
        for k, v in value.items():
            where = f"{at}.{k}" if at else str(k)
            child = node.get(k)
            if child is _COVERED:
                continue
            found = _first_string(v, where) if child is None else _unread(child, v, where)
            if found:
                return found
        return None
    if isinstance(value, (list, tuple)):
        child = node.get("[]")
        if child is _COVERED:
            return None
        for i, v in enumerate(value):
            found = _first_string(v, f"{at}[{i}]") if child is None else _unread(child, v, f"{at}[{i}]")
            if found:
                return found
        return None
    if isinstance(value, str):
        return at, value
    return None


class Unread:
    """The leaf check of one format, its declared paths compiled once."""

    def __init__(self, fmt: Format):
        self.fmt = fmt
        self.trie = _trie(fmt.fields)
        self.tops = {f.top for f in fmt.fields if _path_tokens(f.name) == [f.top]}

    def find(self, record: dict) -> tuple[str, str] | None:
        # The common record holds only whole declared keys: one set test.
        if record.keys() <= self.tops:
            return None
        return _unread(self.trie, record, "")

    def check(self, record: dict, path: StrPath, line: int, unit: str = "line") -> None:
        """BadInput naming the first text of `record` the format does not read."""
        found = self.find(record)
        if found is not None:
            raise unread_error(self.fmt, found[0], path, line, unit)


def unread_error(
    fmt: Format, where: str, path: StrPath | None, line: int | None, unit: str = "line"
) -> BadInput:
    """The refusal of a record holding text `fmt` does not read, at `where` (a path into the record)."""
    known = ", ".join(sorted(fmt.top_keys()))
    message = (
        f"holds text the {fmt.name} format does not read (it reads {known}): drop the field or move its "
        "text into one the format reads"
    )
    return BadInput(message, path=None if path is None else str(path), line=line, field=where, unit=unit)


# -- names ---------------------------------------------------------------------------------------------


def did_you_mean(given: str, seen: Iterable[str]) -> str:
    """'; did you mean X?' when `given` is close to one of `seen` (difflib), else ''."""
    import difflib  # (only a refusal needs it: not imported by every ingest)

    close = difflib.get_close_matches(given, sorted(set(seen)), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def counted(seen: dict[str, int], most: int = 8) -> str:
    """'a (3), b (1), ...': the most common of `seen`, with their counts."""
    top = sorted(seen.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = ", ".join(f"{k} ({v:,})" for k, v in top[:most])
    return shown + (f", and {len(top) - most} more" if len(top) > most else "")


# -- docs/schema.md ------------------------------------------------------------------------------------

REFERENCE_START = "<!-- input formats: made by pairstore.ingest.declare.format_reference -->"
REFERENCE_END = "<!-- end of input formats -->"
_TABLE_INTRO = {
    "battles": "`pairstore ingest battles FILE --format NAME`",
    "problems": "`pairstore ingest problems --dataset NAME --path FILE`",
    "generations": "`pairstore ingest generations FILE --format NAME`",
    "evals": "`pairstore ingest evals FILE --format NAME`",
    "judgments": "`pairstore ingest judgments FILE`",
    "pairs": "`pairstore ingest pairs FILE`, `round attach`, `audit leaks` (the shape of each record is "
    "told by its keys, tried in this order)",
}


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def format_reference(formats: Sequence[Format]) -> str:
    """The "Input formats" part of docs/schema.md: per table, each format's fields and what each is."""
    lines = [REFERENCE_START, ""]
    for table in TABLES:
        of_table = sorted((f for f in formats if f.table == table), key=lambda f: (f.order, f.name))
        if not of_table:
            continue
        lines += [f"### Formats of `{table}`", "", f"Read by {_TABLE_INTRO[table]}.", ""]
        for fmt in of_table:
            lines += [f"#### `{fmt.name}`", "", _cell(fmt.summary)]
            if fmt.notes:
                lines += ["", _cell(fmt.notes)]
            lines += ["", "| field name | is | what it holds |", "| --- | --- | --- |"]
            rows: list[tuple[list[str], str, str]] = []
            for f in fmt.fields:
                what = f"text: {f.role}" if f.what == TEXT else f.what
                kind = f" ({f.kind.describe()})" if f.kind is not None and f.kind.describe() else ""
                held = _cell(("required; " if f.required else "") + f.doc + kind)
                if rows and rows[-1][1:] == (what, held):  # fields alike (the usual id columns): one row
                    rows[-1][0].append(f.name)
                else:
                    rows.append(([f.name], what, held))
            lines += [
                f"| {', '.join(f'`{n}`' for n in names)} | {what} | {held} |" for names, what, held in rows
            ]
            lines.append("")
    lines.append(REFERENCE_END)
    return "\n".join(lines)


def with_reference(doc: str, formats: Sequence[Format]) -> str:
    """`doc` (docs/schema.md's text) with its input formats part made anew."""
    start, end = doc.find(REFERENCE_START), doc.find(REFERENCE_END)
    if start < 0 or end < start:
        raise ValueError("docs/schema.md has no input formats part (its two marker comments)")
    return doc[:start] + format_reference(formats) + doc[end + len(REFERENCE_END) :]
