"""Export a round's mixture through the holdout gate: NAME.parquet (+ NAME.sft.parquet) and
NAME.training_evidence.json.

    pairstore export --round m11a --out mixtures/

In order, each step in a module of its own:

1. plan the mixture in SQL (pairstore.export.plan: source, `where`, seeded `limit`, `upsample`);
2. the holdout gate (pairstore.export.gate) checks every distinct pair against every active holdout member,
   eval item and benchmark reference; a hit that is not exempted raises GateRefused (exit 3) and
   nothing is written;
3. the rows are streamed to parquet under temporary names in the output folder
   (pairstore.export.writer: fixed order and writer options, so the same store and recipe give
   byte-identical files);
4. the evidence (pairstore.export.evidence) is written beside them; a registered file at one of the
   final paths with other bytes refuses the export (exit 2) unless `replace`, which supersedes that
   registration (pairstore.export.overwrites); then every file is renamed to its final name, and the files,
   their rows and the evidence file's SHA-256 are registered (pairstore.export.registry).

What an interrupted export left in the folder (temp files, files never registered) is named in the
result's notes.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa

from pairstore.errors import BadInput
from pairstore.export.card import write_card
from pairstore.export.evidence import export_evidence
from pairstore.export.gate import run_gate
from pairstore.export.overwrites import leftovers, recover_interrupted, replacements, set_aside
from pairstore.export.paths import export_paths
from pairstore.export.plan import planned_mixture
from pairstore.export.registry import ExportedFile, record_export
from pairstore.export.writer import ESTIMATE_MARGIN_BYTES, estimated_bytes, write_mixture_file
from pairstore.files import (
    StrPath,
    check_free_space,
    free_space,
    fsync_dir,
    fsync_file,
    missing_folders,
    publish_point,
    remove_empty_folders,
    temp_path,
    write_failure,
    writes_into,
)
from pairstore.holdout.matching import EMBED_MIN_WORDS, FUZZY_MIN_CHARS, FUZZY_THRESHOLD
from pairstore.holdout.sets import removed_members
from pairstore.keys import sha256_file
from pairstore.progress import Progress, as_progress
from pairstore.rounds.recipes import NAME_RE, DpoRecipe, get_round
from pairstore.tables.audit_log import log_action

if TYPE_CHECKING:
    from pairstore.store.store import Store

# DuckDB's buffer memory while exporting (it spills to disk beyond this): with the arrow chunks on the
# Python side the export stays well under 1.5 GB whatever the size of the store.
EXPORT_MEMORY_LIMIT = "512MB"


@dataclass
class GateEvidence:
    """What the holdout gate checked for an export that passed (the evidence's `gate`)."""

    members_checked: dict[str, int]  # member kind -> count checked
    pairs_checked: int
    fuzzy_pairs_scored: int
    exempted: list[dict]  # the exempted hits, each with its reason
    notes: list[str]
    removed_members: list[dict] = field(default_factory=list)  # members removed at export time
    # pairs --drop-held-out took out, each with its hit and place (pairstore.export.refusal.HitPlace)
    dropped_held_out: list[dict] = field(default_factory=list)
    passed: bool = True
    fuzzy_threshold: float = FUZZY_THRESHOLD
    fuzzy_min_chars: int = FUZZY_MIN_CHARS
    embed_min_words: int = EMBED_MIN_WORDS

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ExportResult:
    round: str
    out_dir: str
    files: dict[str, ExportedFile] = field(default_factory=dict)  # "dpo" / "sft" -> the file written
    evidence_path: str = ""
    blocks: list = field(default_factory=list)
    rows_by_source: dict = field(default_factory=dict)
    gate: GateEvidence | None = None
    export_ids: list = field(default_factory=list)
    superseded: list = field(default_factory=list)  # export ids this export replaced (--replace)
    notes: list = field(default_factory=list)  # leftovers of an interrupted export, ...
    card_path: str | None = None  # the folder's dataset card (README.md), when pairstore may write it


def resolve_system_prompt(
    store: Store,
    recipe: DpoRecipe,
    *,
    bundle: StrPath | None = None,
    system_prompt_file: StrPath | None = None,
) -> tuple[str | None, str]:
    """(system prompt or None, where it came from)."""
    sp = recipe.system_prompt
    if sp != "bundle":
        if system_prompt_file is not None or bundle is not None:
            raise BadInput(
                f"round {recipe.name!r} has {'no' if sp is None else 'its own literal'} system prompt; "
                '--bundle and --system-prompt-file apply only to system_prompt = "bundle"',
                field="system_prompt",
            )
        return sp, ("none" if sp is None else "recipe")
    if system_prompt_file is not None:
        path = Path(system_prompt_file)
    elif bundle is not None:
        path = Path(bundle) / "system_prompt.txt"
    else:
        row = store.one("SELECT path FROM checkpoints WHERE name = ?", [recipe.parent])
        if row is None or not row[0]:
            raise BadInput(
                f"round {recipe.name!r} takes the system prompt of its parent bundle "
                '(system_prompt = "bundle") '
                f"but checkpoint {recipe.parent!r} has no registered path; pass --bundle DIR or "
                "--system-prompt-file FILE",
                field="system_prompt",
            )
        path = Path(row[0]) / "system_prompt.txt"
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as e:
        raise BadInput(
            f"cannot read the system prompt: {getattr(e, 'strerror', None) or e}",
            path=str(path),
            field="system_prompt",
        ) from None
    if not text:
        raise BadInput("the system prompt file is empty", path=str(path), field="system_prompt")
    return text, str(path)


def _out_paths(out: Path, name: str) -> tuple[Path, dict[str, Path], Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = export_paths(out, name)
    return paths.folder, paths.mixture_files(), paths.evidence


def _size_estimate(con: duckdb.DuckDBPyConnection, plan_table: str) -> int:
    """The bytes the export's files will take (pairstore.export.writer.estimated_bytes: a sample of the
    plan written with the writer's own settings, scaled up), for the free-space check."""
    return estimated_bytes(con, plan_table)


# Up to this many plan entries the raw upper bound (one SQL sum over the texts) costs less than the
# sampled estimate, whose cost does not grow with the plan (measured: 0.03 s against 0.15 s at 20,000
# entries, 0.12 s against 0.17 s at 200,000).
RAW_BOUND_MAX_ENTRIES = 100_000


def _raw_bound(con: duckdb.DuckDBPyConnection, plan_table: str) -> int:
    """An upper bound of the export's bytes: its texts as stored, every copy (parquet's compression only
    makes the files smaller), plus the estimate's margin. Each message is counted as its role and content
    plus 32 bytes, each row 64 bytes more."""
    raw = con.execute(
        "SELECT coalesce(sum((coalesce(list_sum(list_transform(p.prompt, "
        "lambda m: strlen(m.role) + strlen(m.content) + 32)), 0) + strlen(p.chosen) "
        f"+ coalesce(strlen(p.rejected), 0) + 64) * m.copies), 0) "
        f"FROM {plan_table} m JOIN pairs p ON p.rowid = m.prow"
    ).fetchall()[0][0]
    return int(raw) + ESTIMATE_MARGIN_BYTES


def _needed_space(con: duckdb.DuckDBPyConnection, plan_table: str, entries: int, out: Path) -> int:
    """The bytes the free-space check asks for: a small plan's raw upper bound where the folder has that
    much free (nothing closer is needed then), else the sampled estimate (_size_estimate)."""
    if entries <= RAW_BOUND_MAX_ENTRIES:
        raw = _raw_bound(con, plan_table)
        if raw <= free_space(out):
            return raw
    return _size_estimate(con, plan_table)


def _check_writable(out: Path) -> None:
    """The folder `out`, or the nearest folder above it that exists, can take new files."""
    probe = out.absolute()
    while not probe.exists() and not probe.is_symlink() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise BadInput(f"{probe} is not a folder, so --out cannot be made there", path=str(out), field="out")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise write_failure(probe, PermissionError(13, "Permission denied", str(probe)))


def export_round(
    store: Store,
    name: str,
    out_dir: StrPath = ".",
    *,
    bundle: StrPath | None = None,
    system_prompt_file: StrPath | None = None,
    replace: bool = False,
    drop_held_out: bool = False,
    progress: Progress | bool | None = None,
) -> ExportResult:
    """Export round `name` to OUT_DIR/NAME.parquet (+ NAME.sft.parquet) and NAME.training_evidence.json.

    `replace`: supersede a registered file at those paths that would get other bytes (else BadInput).
    `drop_held_out`: drop the pairs the gate finds held-out text in (recorded in the evidence), instead of
    refusing; the gate checks what is left again.
    `progress` (pairstore.progress) hears the stages: plan, gate, write."""
    progress = as_progress(progress)
    recipe = get_round(store, name)
    if not NAME_RE.fullmatch(recipe.name):
        raise BadInput(f"round name {recipe.name!r} is not a safe file name", field="round")
    if not isinstance(recipe, DpoRecipe):
        raise BadInput(f"round {name!r} is a {recipe.kind}: it has no mixture to export", field="round")
    system_prompt, sp_from = resolve_system_prompt(
        store, recipe, bundle=bundle, system_prompt_file=system_prompt_file
    )
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise BadInput("--out must name a folder", path=str(out), field="out")
    if out.is_symlink() and not out.exists():
        raise BadInput("--out is a symbolic link to nothing", path=str(out), field="out")
    _check_writable(out)  # before the gate: a folder that cannot be written fails fast
    con = store.con
    memory_limit = con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
    con.execute(f"SET memory_limit = '{EXPORT_MEMORY_LIMIT}'")
    plan_scope = ExitStack()  # the planned mixture lives until the export is done, whatever happens
    # A failed export leaves no empty --out folder it made (a successful one has filled it).
    plan_scope.callback(remove_empty_folders, missing_folders(out))
    try:
        with progress.stage(f"export {name}: plan", unit="pairs") as stage:
            mix = plan_scope.enter_context(planned_mixture(store, recipe))
            plans = mix.blocks
            mixture_entries = mix.entries()
            stage.advance(mixture_entries)
        if not mixture_entries:
            raise BadInput(
                f"round {name!r}: the mixture selects no pairs "
                f"({'; '.join(f'block {p.index + 1} {p.source}: {p.matched}' for p in plans)})",
                field="mix",
            )
        with progress.stage(f"export {name}: holdout gate", total=mixture_entries, unit="pairs") as stage:
            # raises before anything is written
            outcome = run_gate(store, name, mix, system_prompt, drop_held_out=drop_held_out)
            gate, exempted = outcome.result, outcome.exempted
            stage.advance(mixture_entries)
        # (mixture_entries: the plan before any drop, enough to choose how to estimate)
        needed = _needed_space(con, mix.table, mixture_entries, out)
        check_free_space(out, needed, what=f"the export of {name}")
        with writes_into(out):
            out_real, finals, evidence_path = _out_paths(out, name)
        kinds_present = mix.kinds()
        result = ExportResult(round=name, out_dir=str(out_real), blocks=[p.as_dict() for p in plans])
        every_file = [finals["dpo"], finals["sft"], evidence_path]
        result.notes = recover_interrupted(store, out_real, every_file)
        result.notes += [f"{path}: {why}" for path, why in leftovers(store, out_real, every_file)]
        with store.transaction():
            log_action(
                store, "export.started", name, {"out": str(out_real), "files": [str(p) for p in every_file]}
            )
        temps: dict[str, Path] = {}
        by_source: Counter = Counter()
        by_family: Counter = Counter()
        try:
            for kind in ("dpo", "sft"):
                if kind not in kinds_present:
                    continue
                tmp = temps[kind] = temp_path(finals[kind])
                with progress.stage(f"export {name}: write {finals[kind].name}", unit="rows") as stage:
                    rows, chash, counts, file_sha = write_mixture_file(store, tmp, mix, kind, system_prompt)
                    stage.advance(rows)
                for (s, f), n in counts.items():
                    by_source[s] += n
                    by_family[f or "(none)"] += n
                result.files[kind] = ExportedFile(
                    path=str(finals[kind]), sha256=file_sha, rows=rows, content_hash=chash
                )
            result.rows_by_source = dict(sorted(by_source.items()))
            result.gate = GateEvidence(
                members_checked=gate.members,
                pairs_checked=gate.candidates,
                fuzzy_pairs_scored=gate.fuzzy_pairs_scored,
                exempted=exempted,
                removed_members=removed_members(store),
                notes=gate.notes,
                dropped_held_out=outcome.dropped,
            )
            evidence = export_evidence(
                store,
                recipe,
                result.files,
                file_names={k: p.name for k, p in finals.items()},
                blocks=result.blocks,
                rows_by_source=result.rows_by_source,
                rows_by_family=dict(sorted(by_family.items())),
                gate=result.gate.as_dict(),
                system_prompt=system_prompt,
                system_prompt_from=sp_from,
            )
            temps["evidence"] = temp_path(evidence_path)
            temps["evidence"].write_text(
                json.dumps(evidence, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
            )
            evidence_sha = sha256_file(temps["evidence"])
            new_sha = {finals[k]: (result.files[k].sha256 if k in result.files else None) for k in finals}
            result.superseded = replacements(store, {**new_sha, evidence_path: evidence_sha}, replace=replace)
            result.evidence_path = str(evidence_path)
            for tmp in temps.values():
                fsync_file(tmp)
            # The registry's transaction is the commit point: inside it, every file already at a final path
            # is renamed aside, every new file renamed onto its final path, and only then does the
            # registration commit. A crash before the commit leaves the old registration, and the next
            # export (recover_interrupted) puts the files renamed aside back; after it, the new one, and the
            # next export removes what was renamed aside.
            aside: dict[Path, Path] = {}
            placed: list[Path] = []
            try:
                with store.transaction():
                    result.export_ids = record_export(
                        store,
                        name,
                        result.files,
                        evidence,
                        evidence_path=result.evidence_path,
                        evidence_sha256=evidence_sha,
                        exempted=exempted,
                        mixture=mix,
                        supersede=result.superseded,
                    )
                    for final in every_file:
                        if final.exists():
                            aside[final] = set_aside(final)
                    for kind, final in (
                        ("dpo", finals["dpo"]),
                        ("sft", finals["sft"]),
                        ("evidence", evidence_path),
                    ):
                        if kind in temps:
                            publish_point(f"rename {final.name}")
                            os.replace(temps.pop(kind), final)
                            placed.append(final)
                    fsync_dir(out_real)
                    publish_point(f"commit export {name}")
            except BaseException:
                # Rolled back: the files renamed aside go back, the new ones go.
                for final in placed:
                    if final not in aside:
                        final.unlink(missing_ok=True)
                for final, old in aside.items():
                    os.replace(old, final)
                raise
            publish_point(f"remove what export {name} replaced")  # committed: the new state from here
            for old in aside.values():
                old.unlink(missing_ok=True)
        except OSError as e:
            raise write_failure(out_real, e) from None
        except pa.ArrowException as e:
            raise write_failure(out_real, e) from None
        finally:
            for tmp in temps.values():
                tmp.unlink(missing_ok=True)
        # After the commit: the card is derived from the registry, so a crash before this line leaves a
        # card the next export into the folder rebuilds.
        with writes_into(out_real):
            card, why_not = write_card(store, out_real)
        result.card_path = str(card) if card else None
        if why_not:
            result.notes.append(why_not)
        return result
    finally:
        plan_scope.close()
        con.execute(f"SET memory_limit = '{memory_limit}'")
