"""What the held-out verifier corpora's draw scripts share: reading public repositories from local bare
git copies, the seeded random source per file, and joining a draw with its hand labels (labels.tsv)
into heldout.jsonl. Each corpus's draw.py names its sources and how many rows each gives; nothing
here runs a verifier or a grader.

labels.tsv has one line per row id: id, ``T``/``F`` (equal), tag, ``NA`` where the output commits to
no answer, and a note (the last three may be empty).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
from collections.abc import Callable
from pathlib import Path


class Mirror:
    """A folder of bare git copies, one per repository: ``ROOT/owner+name/repo``. Files are read at
    ``HEAD``."""

    def __init__(self, root: Path):
        self.root = root

    def git_dir(self, repo: str) -> Path:
        base = self.root / repo.replace("/", "+") / "repo"
        # some copies are clones with a work tree; their git directory is one level down
        return base / ".git" if (base / ".git").is_dir() else base

    def read_bytes(self, repo: str, path: str) -> bytes:
        command = ["git", f"--git-dir={self.git_dir(repo)}", "show", f"HEAD:{path}"]
        return subprocess.run(command, check=True, capture_output=True).stdout

    def read(self, repo: str, path: str) -> str:
        return self.read_bytes(repo, path).decode("utf-8")


def read_at(mirror: Mirror, repo: str, commit: str, path: str) -> str:
    """A file of a repository's copy as it stood at `commit` (a draw names the commit it read)."""
    command = ["git", f"--git-dir={mirror.git_dir(repo)}", "show", f"{commit}:{path}"]
    return subprocess.run(command, check=True, capture_output=True).stdout.decode("utf-8")


def json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def rng_for(seed: str, repo: str, path: str) -> random.Random:
    """The draw's random source for one source file: the same file always gives the same rows."""
    return random.Random(f"{seed}:{repo}:{path}")


def read_labels(path: Path) -> dict[str, dict]:
    labels = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        row_id, equal, tag, no_answer, note = (line.split("\t") + ["", "", ""])[:5]
        labels[row_id] = {"equal": equal == "T", "tag": tag, "no_answer": no_answer == "NA", "note": note}
    return labels


def join(drawn: list[dict], labels: dict[str, dict]) -> list[dict]:
    """The corpus rows: each drawn row with its label, in the field order every held-out corpus uses."""
    if set(labels) != {row["id"] for row in drawn}:
        raise SystemExit("labels.tsv and the draw name different rows")
    out = []
    for row in drawn:
        lab = labels[row["id"]]
        joined = {k: row[k] for k in ("id", "pred", "gold", "kind")}
        joined["equal"] = lab["equal"]
        joined["source"] = row["source"]
        joined["tag"] = lab["tag"]
        if lab["no_answer"]:
            joined["no_answer"] = True
        if lab["note"]:
            joined["note"] = lab["note"]
        if row.get("options"):
            joined["options"] = row["options"]
        joined["source_label"] = row["source_label"]
        joined["heldout"] = True
        out.append(joined)
    return out


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def main(description: str, here: Path, draw: Callable[[Mirror], list[dict]]) -> None:
    """The command line every draw.py has: ``--mirror DIR`` rebuilds here/heldout.jsonl from the draw
    and here/labels.tsv; ``--drawn FILE`` writes the unlabelled draw instead (what was read to label)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--mirror", type=Path, required=True, help="folder of bare git copies (owner+name/repo)"
    )
    parser.add_argument("--drawn", type=Path, help="write the unlabelled draw here instead, and stop")
    args = parser.parse_args()
    drawn = draw(Mirror(args.mirror))
    if args.drawn:
        write_jsonl(args.drawn, drawn)
        return
    write_jsonl(here / "heldout.jsonl", join(drawn, read_labels(here / "labels.tsv")))
