"""Mixture hash check: recompute the SHA-256 of every registered mixture and bundle evidence file.

    pairstore audit mixtures            # exit 3 naming any changed or missing file
    pairstore audit mixtures --json

Checked, each against the hash the store recorded when it was written or attached:
- every registered mixture (`exports`: written exports and attached history); a
  registration another export superseded (`export --replace`) is listed, not
  checked: its path holds the new bytes;
- every export's `NAME.training_evidence.json`: its SHA-256 (`exports.evidence_sha256`),
  so an edited or deleted evidence file fails; where none is recorded, its
  "parquet_sha256" (or "sft_parquet_sha256") must still name the registered bytes;
- every checkpoint with a path: its training_evidence.json must say what the
  registry recorded (compared as JSON), and the file hashes its evidence
  records: merged bundles' weight shards ("shard_sha256"), soups' output
  shards ("output.shards_sha256", always recorded for a registered soup),
  adapters' weights ("adapter_sha256").

- every round's latest export through today's holdout gate (the holdout sets, eval items and
  benchmarks as they are now): a mixture the gate would now refuse is "refused" (exit 3), with what
  changed since the export.

Also listed, without failing the audit: what an interrupted export left in an
export folder (temp files, final files whose bytes no registration has).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from pairstore.errors import GateRefused
from pairstore.export.gate import exported_system_prompt, regate_export
from pairstore.export.overwrites import leftovers, started_exports
from pairstore.export.paths import evidence_beside, is_sft_file, relocated
from pairstore.keys import sha256_file
from pairstore.progress import current as current_progress

FAILING = ("changed", "missing", "refused")


@dataclass
class FileCheck:
    what: str  # export | attached | export evidence | shard | adapter | leftover
    owner: str  # round or checkpoint name
    path: str
    expected: str | None
    actual: str | None  # None: missing
    status: str  # ok | changed | missing | refused (these three fail) | superseded | leftover
    detail: str | None = None  # why the gate refuses it today
    # Set when the file was not at its registered path but beside the moved store (`path` is where it
    # was checked, this the path the registry holds).
    registered_path: str | None = None

    def as_dict(self) -> dict:
        out = {
            "what": self.what,
            "owner": self.owner,
            "path": self.path,
            "expected": self.expected,
            "actual": self.actual,
            "status": self.status,
            "detail": self.detail,
        }
        if self.registered_path is not None:
            out["registered_path"] = self.registered_path
        return out


def _check(what: str, owner: str, path: Path, expected: str, store_path=None) -> FileCheck:
    moved = relocated(store_path, path)
    registered = None
    if moved is not None:
        path, registered = moved, str(path)
    if not path.is_file():
        return FileCheck(what, owner, str(path), expected, None, "missing")
    actual = sha256_file(path)
    status = "ok" if actual == expected else "changed"
    return FileCheck(what, owner, str(path), expected, actual, status, registered_path=registered)


def _evidence_check(ex: dict) -> FileCheck | None:
    """The export's training evidence (ROUND.training_evidence.json beside it) must name the registered bytes:
    "parquet_sha256" for the pair file, "sft_parquet_sha256" for NAME.sft.parquet."""
    path = Path(ex["path"])
    ev_path = evidence_beside(path, ex["round"])
    if not ev_path.is_file():
        return None
    try:
        evidence = json.loads(ev_path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        return FileCheck("export evidence", ex["round"], str(ev_path), ex["sha256"], "unreadable", "changed")
    if not isinstance(evidence, dict):
        return None
    key = "sft_parquet_sha256" if is_sft_file(path) else "parquet_sha256"
    recorded = evidence.get(key)
    if recorded is None:
        return None
    return FileCheck(
        "export evidence",
        ex["round"],
        str(ev_path),
        ex["sha256"],
        recorded,
        "ok" if recorded == ex["sha256"] else "changed",
    )


def _bundle_evidence_check(owner: str, bundle: Path, registered: dict) -> FileCheck:
    """The training_evidence.json inside a registered bundle must say what the registry recorded (an edited
    alpha, a swapped input hash): compared as JSON, so formatting alone is no change."""
    path = bundle / "training_evidence.json"
    expected = _json_sha(registered)
    if not path.is_file():
        return FileCheck("bundle evidence", owner, str(path), expected, None, "missing")
    try:
        actual = _json_sha(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, UnicodeDecodeError):
        actual = "unreadable"
    return FileCheck(
        "bundle evidence", owner, str(path), expected, actual, "ok" if actual == expected else "changed"
    )


def _json_sha(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def _recorded_files(evidence: dict) -> list[tuple[str, str, str]]:
    """(what, file name inside the bundle, sha256) recorded in a checkpoint's evidence."""
    out = []
    for name, sha in sorted((evidence.get("shard_sha256") or {}).items()):
        out.append(("shard", name, sha))
    output = evidence.get("output")
    if isinstance(output, dict):
        for name, sha in sorted((output.get("shards_sha256") or {}).items()):
            out.append(("shard", name, sha))
    for name, sha in sorted((evidence.get("adapter_sha256") or {}).items()):
        out.append(("adapter", name, sha))
    return out


def check_mixtures(store, *, gate: bool = False) -> list[FileCheck]:
    """Every recorded file hash, recomputed; with `gate`, every round's latest export through today's
    holdout gate too (_gate_checks). Never raises for a mismatch (see audit_mixtures)."""
    checks: list[FileCheck] = []
    exports = store.rows(
        "SELECT export_id, round, kind, path, sha256, evidence_path, evidence_sha256, "
        "superseded_by FROM exports ORDER BY created_at, export_id"
    )
    progress = current_progress()
    for ex in progress.track(exports, "audit mixtures: exports", unit="files"):
        path = Path(ex["path"])
        if ex["superseded_by"] is not None:
            checks.append(FileCheck(ex["kind"], ex["round"], str(path), ex["sha256"], None, "superseded"))
            continue
        checks.append(_check(ex["kind"], ex["round"], path, ex["sha256"], store.path))
        if ex["evidence_sha256"] is not None:
            checks.append(
                _check(
                    "export evidence",
                    ex["round"],
                    Path(ex["evidence_path"]),
                    ex["evidence_sha256"],
                    store.path,
                )
            )
            continue
        ev = _evidence_check(ex)
        if ev is not None:
            checks.append(ev)
    for ck in store.rows(
        "SELECT name, path, evidence FROM checkpoints WHERE path IS NOT NULL "
        "AND evidence IS NOT NULL ORDER BY name"
    ):
        evidence = json.loads(ck["evidence"]) if isinstance(ck["evidence"], str) else ck["evidence"]
        if not isinstance(evidence, dict):
            continue
        if evidence.get("kind") in ("merge", "soup"):  # a bundle pairstore wrote carries its evidence
            checks.append(_bundle_evidence_check(ck["name"], Path(ck["path"]), evidence))
        for what, name, sha in _recorded_files(evidence):
            checks.append(_check(what, ck["name"], Path(ck["path"]) / name, sha, store.path))
    if gate:
        with progress.stage("audit mixtures: latest exports through the gate", unit="checks") as stage:
            gate_checks = _gate_checks(store)
            stage.advance(len(gate_checks))
    return checks + (gate_checks if gate else []) + _leftovers(store)


def _gate_checks(store) -> list[FileCheck]:
    """Each round's latest export, through today's holdout gate (pairstore.export.gate.regate_export): a
    mixture it would now refuse (a member added since, a stronger gate) is 'refused'."""
    out = []
    for r in store.rows(
        "SELECT round, list(export_id ORDER BY path) AS ids, list(path ORDER BY path) AS paths, "
        "list(sha256 ORDER BY path) AS shas FROM exports e "
        "WHERE kind = 'export' AND superseded_at IS NULL "
        "AND created_at = (SELECT max(created_at) FROM exports "
        "  WHERE round = e.round AND kind = 'export' AND superseded_at IS NULL) GROUP BY round ORDER BY round"
    ):
        system = next((s for s in map(exported_system_prompt, r["paths"]) if s is not None), None)
        try:
            regate_export(store, list(r["ids"]), system)
            status, detail = "ok", None
        except GateRefused as e:
            status, detail = "refused", str(e).splitlines()[0]
        out.append(
            FileCheck("holdout gate today", r["round"], r["paths"][0], r["shas"][0], None, status, detail)
        )
    return out


def _leftovers(store) -> list[FileCheck]:
    """What interrupted exports left: temp files and unregistered final files in every export folder."""
    finals: dict[str, dict[str, str]] = {}  # folder -> final file -> round
    for started in started_exports(store):
        for f in started["files"]:
            finals.setdefault(started["out"], {})[f] = started["round"]
    out = []
    for folder, files in finals.items():
        for path, why in leftovers(store, Path(folder), [Path(f) for f in sorted(files)]):
            owner = files.get(str(path)) or next(iter(files.values()))
            out.append(FileCheck(f"leftover: {why}", owner, str(path), None, None, "leftover"))
    return out


def refuse_if_changed(checks: list[FileCheck]) -> None:
    """GateRefused (exit 3) naming every changed or missing file."""
    bad = [c for c in checks if c.status in FAILING]
    if bad:
        listed = "; ".join(
            f"{c.path} ({c.what} of {c.owner}) {c.status}" + (f": {c.detail}" if c.detail else "")
            for c in bad
        )
        raise GateRefused(
            f"{len(bad)} registered file(s) changed, missing or refused by today's holdout gate: {listed}"
        )


def audit_mixtures(store) -> list[FileCheck]:
    """check_mixtures with today's gate, refusing (GateRefused, exit 3) when any file changed or is missing
    or the gate would now refuse a mixture."""
    checks = check_mixtures(store, gate=True)
    refuse_if_changed(checks)
    return checks
