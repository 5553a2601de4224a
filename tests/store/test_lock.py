"""Turns at the store file (pairstore.store.lock): a process waiting for the store gets it at the holder's
next release even when the holder opens it again at once, the holder is named while it waits, readers
share, a nested open in one thread does not wait on itself, and a killed holder leaves no lock."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

from pairstore.errors import StoreBusy
from pairstore.store.lock import StoreTurn, open_in_turn
from pairstore.store.store import open_store

# A holder that never pauses of its own accord: it lets the store go and takes it again at once, as the web
# app did between votes, for `seconds`; each turn is a row in audit_log and its number in the file `progress`.
GREEDY = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from pairstore.store.lock import open_in_turn
    path, seconds, progress = sys.argv[1], float(sys.argv[2]), Path(sys.argv[3])
    end = time.monotonic() + seconds
    turns = 0
    while time.monotonic() < end:
        store = open_in_turn(path, what="greedy holder", wait_s=60)
        turns += 1
        store.con.execute("INSERT INTO audit_log (action, subject) VALUES ('greedy', 'x')")
        progress.write_text(str(turns))
        if turns == 1:
            print("holding", flush=True)
        time.sleep(0.1)
        store.close()
""")


@pytest.mark.slow
def test_a_waiting_process_gets_the_store_at_the_next_release_of_a_holder_that_takes_it_again(
    db_path, tmp_path
):
    open_store(db_path).close()
    progress = tmp_path / "progress"
    greedy = subprocess.Popen([sys.executable, "-c", GREEDY, str(db_path), "30", str(progress)],
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert greedy.stdout is not None and greedy.stdout.readline().strip() == "holding"
    try:
        for _ in range(5):  # every time, not by luck
            started_in = int(progress.read_text())
            with open_in_turn(db_path, what="test", wait_s=30) as store:
                turns = store.scalar("SELECT count(*) FROM audit_log WHERE action = 'greedy'")
                store.con.execute("INSERT INTO audit_log (action, subject) VALUES ('waiter', 'x')")
            # in at the end of the holder's turn it waited in (or, read just as it changed, the next one)
            assert turns - started_in <= 1, (started_in, turns)
            time.sleep(0.3)  # the holder takes it back meanwhile
    finally:
        greedy.kill()
        greedy.wait()


HOLDER = textwrap.dedent("""
    import sys, time
    from pairstore.store.lock import open_in_turn
    store = open_in_turn(sys.argv[1], what="pairstore ingest battles")
    print("holding", flush=True)
    deadline = time.monotonic() + 10
    while not store.turn.someone_waits() and time.monotonic() < deadline:
        time.sleep(0.02)
    print("seen" if store.turn.someone_waits() else "unseen", flush=True)
    sys.stdin.read()
    store.close()
""")


def test_the_holder_is_named_while_one_waits_and_sees_the_waiter(db_path):
    open_store(db_path).close()
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(db_path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline().strip() == "holding"
        told: list[str] = []
        with pytest.raises(StoreBusy) as e:
            open_in_turn(db_path, what="pairstore sql", wait_s=1.2, read_only=True, on_wait=told.append)
        assert holder.stdout.readline().strip() == "seen"  # the holder saw a process in line
    finally:
        holder.stdin.close()
        holder.wait(30)
    assert told and told[0].startswith(f"pairstore ingest battles (process {holder.pid}, writing) since ")
    assert f"in use by pairstore ingest battles (process {holder.pid}" in str(e.value)
    assert "PAIRSTORE_BUSY_WAIT" in str(e.value)
    assert not StoreTurn(db_path).someone_waits() and StoreTurn(db_path).holder() == ""
    with open_in_turn(db_path, wait_s=0):  # let go: free at once
        pass


def test_readers_share_a_nested_open_does_not_wait_on_itself_and_a_killed_holder_leaves_no_lock(db_path):
    open_store(db_path).close()
    reader = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pairstore.store.lock import open_in_turn; "
         "s = open_in_turn(sys.argv[1], read_only=True, what='reader'); print('reading', flush=True); "
         "time.sleep(60)", str(db_path)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert reader.stdout is not None and reader.stdout.readline().strip() == "reading"
        with open_in_turn(db_path, read_only=True, wait_s=5, what="second reader") as s:  # at the same time
            assert s.scalar("SELECT 1") == 1
            assert StoreTurn(db_path).holder().count("reading") == 2
        # a writer waits for the reader, named (the second reader, gone, is not)
        with pytest.raises(
            StoreBusy, match=r"in use by reader \(process \d+, reading\) since [0-9:]+; waited"
        ):
            open_in_turn(db_path, wait_s=0.3)
    finally:
        reader.kill()
        reader.wait()
    # killed: the kernel let its lock go with it
    with open_in_turn(db_path, wait_s=1) as outer:
        with open_in_turn(db_path, wait_s=1) as inner:  # one thread, nested: no waiting on itself
            assert inner.scalar("SELECT 1") == 1
        assert outer.scalar("SELECT 1") == 1
