"""Each input format is declared once, in its own module (pairstore.ingest.formats): the CLI's format lists,
the messages that name formats and docs/schema.md's "Input formats" tables are made from the
declarations, and adding a format is adding one module."""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
import sys
import textwrap

import pytest
from click.testing import CliRunner

from pairstore.cli import cli
from pairstore.errors import BadInput
from pairstore.ingest import declare, format_docs
from pairstore.ingest import formats as registry
from pairstore.ingest.declare import ID, TEXT, Field, Format, Unread, unread_text
from pairstore.ingest.formats import all_formats, format_names, get_format
from tests.paths import ROOT


def test_docs_schema_md_lists_every_format_as_declared():
    text = (ROOT / "docs" / "schema.md").read_text(encoding="utf-8")
    assert text == format_docs.schema_doc(text), (
        "docs/schema.md's input formats differ from the declarations: run "
        ".venv/bin/python -m pairstore.ingest.format_docs"
    )


def test_every_table_has_its_formats_and_every_text_its_role():
    tables = {f.table for f in all_formats()}
    assert tables == {"battles", "problems", "generations", "evals", "judgments", "pairs"}
    assert set(format_names("battles")) >= {"native", "arena", "arena55k", "fastchat-log"}
    assert set(format_names("pairs")) >= {"trl", "hh-rlhf", "sharegpt", "alpaca", "ultrafeedback",
                                          "openai-messages", "openai-preference"}  # fmt: skip
    for fmt in all_formats():
        assert fmt.texts(), fmt.name  # a format that reads no text reads nothing
        for field in fmt.texts():
            assert field.role, (fmt.name, field.name)


def test_the_cli_offers_the_declared_formats():
    for command, table in (("battles", "battles"), ("generations", "generations"), ("evals", "evals")):
        out = CliRunner().invoke(cli, ["ingest", command, "--help"], terminal_width=200).output
        for name in format_names(table):
            assert name in out, (command, name)


def test_an_unknown_format_names_the_known_ones_and_a_close_one():
    with pytest.raises(BadInput, match=r"unknown format 'arena5k'.*arena55k.*did you mean 'arena55k'"):
        get_format("battles", "arena5k")


def test_a_format_is_declared_in_a_module_named_for_its_table():
    """formats_of(table) imports only the modules named `<table>_...`: a format elsewhere would be missed."""
    in_modules = []
    for info in pkgutil.iter_modules(registry.__path__):
        module = importlib.import_module(f"{registry.__name__}.{info.name}")
        for fmt in (v for v in vars(module).values() if isinstance(v, Format)):
            assert info.name.startswith(f"{fmt.table}_"), (info.name, fmt.table, fmt.name)
            in_modules.append((fmt.table, fmt.name))
    assert sorted(in_modules) == sorted((f.table, f.name) for f in all_formats())


def test_adding_a_format_is_one_module(tmp_path, monkeypatch):
    """A module dropped into the package is a format: listed, documented, offered."""
    module = registry.__path__[0] + "/battles_toy_for_test.py"
    source = textwrap.dedent("""
        from pairstore.ingest.declare import ID, LABEL, TEXT, Field, Format, declare

        FORMAT = declare(Format(
            name="toy", table="battles", summary="a toy form of battles",
            fields=(Field("id", ID, "its id"), Field("text", TEXT, "the question", role="user turn"),
                    Field("vote", LABEL, "the vote")),
            parse=lambda f: "not a vote",
        ))
    """)
    with open(module, "w") as f:
        f.write(source)
    try:
        registry._load.cache_clear()
        assert "toy" in format_names("battles")
        assert "#### `toy`" in declare.format_reference(all_formats())
        assert get_format("battles", "toy").field("text").role == "user turn"
    finally:
        os.remove(module)
        declare._REGISTRY.pop(("battles", "toy"), None)
        sys.modules.pop("pairstore.ingest.formats.battles_toy_for_test", None)
        registry._load.cache_clear()
        importlib.invalidate_caches()
    assert "toy" not in format_names("battles")


FMT = Format(
    "t",
    "battles",
    "test",
    (
        Field("id", ID, "an id"),
        Field("q", TEXT, "text", role="user turn"),
        Field("states[].messages", TEXT, "messages", role="turns"),
        Field("states[].conv_id", ID, "id"),
    ),
)


@pytest.mark.parametrize(
    "record, found",
    [
        ({"id": "1", "q": "hi", "n": 3, "flag": True, "xs": [1, 2.5, None]}, None),
        ({"id": "1", "note": "lost"}, ("note", "lost")),
        ({"id": "1", "meta": {"a": [1, {"b": "deep"}]}}, ("meta.a[1].b", "deep")),
        (
            {"states": [{"messages": [["u", "x"]], "conv_id": "c"}, {"system": "s"}]},
            ("states[1].system", "s"),
        ),
        ({"states": ["plain"]}, ("states[0]", "plain")),
    ],
)
def test_unread_text_is_found_wherever_it_sits(record, found):
    assert unread_text(FMT, record) == found
    if found:
        with pytest.raises(BadInput, match=rf"line 7, field '{re.escape(found[0])}'"):
            Unread(FMT).check(record, "f.jsonl", 7)
