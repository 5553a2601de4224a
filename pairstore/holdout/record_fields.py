"""The field names a record's prompt, conversation and ids are found under: the holdout's file reader
(pairstore.holdout.file_texts) and the pair files' reading (pairstore.ingest.pair_rows) share them. A
module of names only, so a reader that needs the names does not import the file reader."""

from __future__ import annotations

PROMPT_FIELDS = ("prompt", "question", "instruction", "input", "query")
CONVERSATION_FIELDS = ("chosen", "messages", "conversations")
INSTRUCTION_PARTS = ("history", "instruction", "input", "context")  # an Alpaca prompt, in order
ID_FIELDS = (
    "battle_id",
    "origin_id",
    "item_id",
    "source_id",
    "task_id",
    "question_id",
    "prompt_id",
    "problem_id",
    "conversation_id",
    "unique_id",
    "doc_id",
    "sample_id",
    "example_id",
    "uid",
    "id",
)
