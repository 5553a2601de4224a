"""docs/schema.md's "Input formats" part, made from the format declarations (pairstore.ingest.formats).

    .venv/bin/python -m pairstore.ingest.format_docs      # rewrite the part in docs/schema.md

tests/ingest/test_formats.py fails when the page and the declarations differ, naming this command.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pairstore.files import atomic_write_text
from pairstore.ingest.declare import with_reference
from pairstore.ingest.formats import all_formats

SCHEMA_DOC = Path(__file__).resolve().parents[2] / "docs" / "schema.md"


def schema_doc(text: str) -> str:
    """`text` (docs/schema.md) with its input formats part made from today's declarations."""
    return with_reference(text, all_formats())


def main() -> int:
    text = SCHEMA_DOC.read_text(encoding="utf-8")
    atomic_write_text(SCHEMA_DOC, schema_doc(text))
    print(f"wrote {SCHEMA_DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
