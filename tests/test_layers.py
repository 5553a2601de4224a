"""The layout holds: each layer imports only from the layers below it, and every table has one writer.

Layers (docs/design.md, "Layers"):
  1. core   pairstore/ (everything but the app modules)
  2. domain generators/, miners/, audits/, train/  (sideways only: audits.loops, miners.verify and
            the task families generators.registry / generators.tasks / generators.rng)
  3. app    pairstore/cli/ (the commands, their reference and the demo)

The import graph is read from the source with ast, imports inside functions included, so a lazy
import cannot hide a dependency.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("pairstore", "generators", "miners", "audits", "train")
# The app layer is the package pairstore.cli: the commands, their reference and the demo.
APP_PACKAGE = "pairstore.cli"
DOMAIN = {"generators", "miners", "audits", "train"}
# Sideways imports inside the domain layer that the flow needs (docs/design.md names them).
SIDEWAYS = {"audits.loops", "miners.verify", "generators.registry", "generators.tasks", "generators.rng"}


def module_name(path: Path, root: Path = ROOT) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def layer_of(module: str) -> str:
    if module == APP_PACKAGE or module.startswith(APP_PACKAGE + "."):
        return "app"
    top = module.split(".")[0]
    if top == "pairstore":
        return "core"
    return "domain" if top in DOMAIN else "outside"


def project_imports(path: Path) -> list[tuple[int, str]]:
    """(line, imported project module) for every import in the file, at any depth."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # `from train import _soup_kernel` names a module too
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            if name.split(".")[0] in PACKAGES:
                out.append((node.lineno, name))
    return out


def _known(name: str, modules: set[str]) -> str | None:
    """The project module an imported name refers to (the longest module prefix)."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        if ".".join(parts[:i]) in modules:
            return ".".join(parts[:i])
    return None


def layer_violations(root: Path = ROOT) -> list[str]:
    files = [p for pkg in PACKAGES for p in sorted((root / pkg).rglob("*.py"))]
    modules = {module_name(p, root) for p in files} | set(PACKAGES)
    problems = []
    for path in files:
        src = module_name(path, root)
        src_layer = layer_of(src)
        seen = set()
        for line, name in project_imports(path):
            target = _known(name, modules)
            if target is None or target == src or (line, target) in seen:
                continue
            seen.add((line, target))
            dst_layer = layer_of(target)
            where = f"{path.relative_to(root)}:{line} imports {target}"
            if src_layer == "core" and dst_layer != "core":
                problems.append(f"{where}: core may import only core")
            elif src_layer == "domain" and dst_layer == "app":
                problems.append(f"{where}: domain may not import the app layer")
            elif src_layer == "domain" and dst_layer == "domain":
                same_package = src.split(".")[0] == target.split(".")[0]
                if not same_package and target not in SIDEWAYS:
                    problems.append(
                        f"{where}: sideways in the domain layer only to {', '.join(sorted(SIDEWAYS))}"
                    )
    return problems


def test_every_import_respects_the_layers():
    problems = layer_violations()
    assert not problems, "layer violations:\n" + "\n".join(problems)


def test_the_layer_check_catches_a_core_module_importing_a_domain_package(tmp_path):
    for pkg in PACKAGES:
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text("")
    (tmp_path / "pairstore" / "keys.py").write_text("def f():\n    from audits.loops import scan\n")
    (tmp_path / "audits" / "loops.py").write_text("")
    assert layer_violations(tmp_path) == [
        "pairstore/keys.py:2 imports audits.loops: core may import only core"
    ]


def test_the_layer_check_catches_domain_sideways_and_app_imports(tmp_path):
    for pkg in PACKAGES:
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text("")
    (tmp_path / "audits" / "report.py").write_text(
        "import miners.battle\nfrom pairstore.cli.demo import run_demo\n"
    )
    (tmp_path / "miners" / "battle.py").write_text("")
    (tmp_path / "pairstore" / "cli").mkdir()
    (tmp_path / "pairstore" / "cli" / "__init__.py").write_text("")
    (tmp_path / "pairstore" / "cli" / "demo.py").write_text("")
    assert layer_violations(tmp_path) == [
        "audits/report.py:1 imports miners.battle: sideways in the domain layer only to audits.loops, "
        "generators.registry, generators.rng, generators.tasks, miners.verify",
        "audits/report.py:2 imports pairstore.cli.demo: domain may not import the app layer",
    ]


# -- rooms inside the core ------------------------------------------------------------------------

# The core's rooms, lowest first (docs/design.md, "Layers"): a module may import its own room and the
# rooms before it, never one after it. "base" is the modules directly under pairstore/ (errors, keys,
# normalize, files, ...); "api" is the package itself (pairstore.open), which only the app imports.
ROOMS = ("base", "store", "tables", "rounds", "holdout", "ingest", "export", "api", "cli")
# Imports that break the order today and are being moved; each entry names the import exactly, so a new
# one fails. Empty once the rooms are in order.
PENDING: set[str] = set()


def room_of(module: str, root: Path = ROOT) -> str:
    parts = module.split(".")
    if parts == ["pairstore"]:
        return "api"
    if len(parts) == 2 and not (root / "pairstore" / parts[1]).is_dir():
        return "base"
    return parts[1]


def core_modules(root: Path) -> dict[str, Path]:
    return {module_name(p, root): p for p in sorted((root / "pairstore").rglob("*.py"))}


def core_edges(root: Path = ROOT) -> list[tuple[str, str, int, Path]]:
    """(importer, imported, line, file) for every import between two core modules, lazy ones included."""
    modules = core_modules(root)
    edges = []
    for src, path in modules.items():
        for line, name in project_imports(path):
            target = _known(name, set(modules))
            if target is not None and target != src:
                edges.append((src, target, line, path))
    return edges


def room_violations(root: Path = ROOT) -> list[str]:
    problems = []
    for src, target, line, path in core_edges(root):
        a, b = room_of(src, root), room_of(target, root)
        if a not in ROOMS or b not in ROOMS:
            problems.append(f"{path.relative_to(root)}: room {a if a not in ROOMS else b} is not declared")
        elif ROOMS.index(b) > ROOMS.index(a):
            where = f"{path.relative_to(root)} imports {target}"
            if where not in PENDING:
                problems.append(
                    f"{path.relative_to(root)}:{line} imports {target}: room {a} may not import {b}"
                )
    return sorted(set(problems))


def import_circles(root: Path = ROOT) -> list[list[str]]:
    """Every set of core modules that import each other in a circle (strongly connected, Tarjan)."""
    graph: dict[str, set[str]] = {}
    for src, target, _, _ in core_edges(root):
        graph.setdefault(src, set()).add(target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                circles.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(circles)


# Circles being taken apart; a new one fails.
PENDING_CIRCLES: list[list[str]] = []


def test_the_core_rooms_import_only_downward():
    problems = room_violations()
    assert not problems, "imports against the rooms' order:\n" + "\n".join(problems)


def test_the_core_has_no_import_circle():
    circles = [c for c in import_circles() if c not in PENDING_CIRCLES]
    assert not circles, "import circles: " + "; ".join(" <-> ".join(c) for c in circles)


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_the_room_check_catches_an_upward_import_and_a_circle(tmp_path):
    root = _tree(
        tmp_path,
        {
            "pairstore/__init__.py": "",
            "pairstore/keys.py": "",
            "pairstore/store/__init__.py": "",
            "pairstore/store/store.py": "def f():\n    from pairstore.export.run import x\n",
            "pairstore/export/__init__.py": "",
            "pairstore/export/run.py": "from pairstore.store.store import f\n",
        },
    )
    assert room_violations(root) == [
        "pairstore/store/store.py:2 imports pairstore.export.run: room store may not import export"
    ]
    assert import_circles(root) == [["pairstore.export.run", "pairstore.store.store"]]


def test_every_core_folder_is_a_declared_room():
    folders = {p.name for p in (ROOT / "pairstore").iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders <= set(ROOMS), f"undeclared rooms: {sorted(folders - set(ROOMS))}"


# -- one writer per table -------------------------------------------------------------------------

WRITE = re.compile(r"\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+([a-z_][a-z0-9_]*)\b", re.I)


def table_writers() -> dict[str, set[str]]:
    """table -> the modules whose source holds an INSERT/UPDATE/DELETE of it (string literals only)."""
    from pairstore.store.migrations import MIGRATIONS

    del MIGRATIONS  # the tables themselves come from the schema below
    writers: dict[str, set[str]] = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            if (
                path.name == "migrations.py"
                or path.relative_to(ROOT).as_posix() == "pairstore/store/rekey.py"
            ):
                # migrations create and fill tables, and re-keying remakes every stored key when the
                # normalization changes: they are the schema, not a writer
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    for table in WRITE.findall(node.value):
                        writers.setdefault(table.lower(), set()).add(module_name(path))
    return writers


def documented_owners() -> dict[str, str]:
    """The table -> owner list of docs/design.md ("| `table` | `module` |" rows under "Tables and owners")."""
    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    section = text.split("## Tables and their owners", 1)[1].split("\n## ", 1)[0]
    return {t: m for t, m in re.findall(r"^\| `([a-z_]+)` \| `([a-z_.]+)` \|", section, re.M)}


def store_tables() -> set[str]:
    import tempfile

    from pairstore.store.store import open_store

    with tempfile.TemporaryDirectory() as d, open_store(Path(d) / "s.duckdb") as store:
        return {
            r[0]
            for r in store.con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE'"
            ).fetchall()
        }


def test_every_table_has_one_writing_module_and_it_is_the_documented_owner():
    writers = {t: w for t, w in table_writers().items() if not t.startswith("_")}
    tables = store_tables()
    owners = documented_owners()
    assert set(owners) == tables, f"docs/design.md lists {sorted(set(owners) ^ tables)} wrongly"
    several = {t: sorted(w) for t, w in writers.items() if t in tables and len(w) > 1}
    assert not several, f"tables written from more than one module: {several}"
    wrong = {
        t: (sorted(w)[0], owners[t]) for t, w in writers.items() if t in tables and sorted(w)[0] != owners[t]
    }
    assert not wrong, f"writer differs from the documented owner: {wrong}"


# Tables not written from pairstore/tables/, each with the reason. The store's own bookkeeping is
# written below the tables room, while the store opens or re-keys: schema_version by the migration runner
# (before any Store exists; the store room may not import tables) and key_versions by re-keying.
STORE_BOOKKEEPING = {"schema_version": "pairstore.store.store", "key_versions": "pairstore.store.rekey"}
# The ingested tables are written by the shared staged insert of pairstore.ingest.base with the kind's
# table name (a formatted string the scan cannot read); their owner is the ingest of that table.
INGESTED = {
    "battles": "pairstore.ingest.battles",
    "problems": "pairstore.ingest.problems",
    "judgments": "pairstore.ingest.judgments",
}


def writer_module_problems(
    writers: dict[str, set[str]], owners: dict[str, str], families: dict[str, str]
) -> list[str]:
    """Every way the writers found in the source, the owners docs/design.md lists and the tables room's
    TABLE_FAMILIES disagree with "a table is written by pairstore/tables/<its family>.py"."""
    problems = []
    for table, owner in sorted(owners.items()):
        if table in STORE_BOOKKEEPING or table in INGESTED:
            expected = STORE_BOOKKEEPING.get(table) or INGESTED[table]
            if table in families:
                problems.append(f"{table}: declared a family, but it is {expected}'s to write")
        elif table not in families:
            problems.append(f"{table}: no family in pairstore.tables.TABLE_FAMILIES")
            continue
        else:
            expected = f"pairstore.tables.{families[table]}"
        if owner != expected:
            problems.append(f"{table}: docs/design.md names {owner}, not {expected}")
        found = writers.get(table, set())
        if found - {expected}:
            problems.append(f"{table}: written from {', '.join(sorted(found - {expected}))}, not {expected}")
    return problems


def test_every_table_is_written_by_the_tables_module_of_its_family():
    from pairstore.tables import TABLE_FAMILIES

    tables = store_tables()
    assert set(TABLE_FAMILIES) <= tables, f"families of no table: {sorted(set(TABLE_FAMILIES) - tables)}"
    missing = [
        f for f in set(TABLE_FAMILIES.values()) if not (ROOT / "pairstore" / "tables" / f"{f}.py").exists()
    ]
    assert not missing, f"families without a module: {sorted(missing)}"
    problems = writer_module_problems(table_writers(), documented_owners(), TABLE_FAMILIES)
    assert not problems, "tables not written by their family's module:\n" + "\n".join(problems)


def test_the_family_check_catches_a_writer_outside_its_module():
    owners = {"rounds": "pairstore.tables.rounds", "holdout": "pairstore.holdout.sets"}
    writers = {"rounds": {"pairstore.rounds.recipes"}, "holdout": {"pairstore.holdout.sets"}}
    assert writer_module_problems(writers, owners, {"rounds": "rounds"}) == [
        "holdout: no family in pairstore.tables.TABLE_FAMILIES",
        "rounds: written from pairstore.rounds.recipes, not pairstore.tables.rounds",
    ]


@pytest.mark.parametrize(
    "sql,table",
    [
        ("INSERT INTO evals (model) VALUES (?)", "evals"),
        ("UPDATE generations g SET verdict = 'x'", "generations"),
        ("delete from holdout where 1", "holdout"),
    ],
)
def test_the_writer_scan_reads_sql_strings(sql, table):
    assert WRITE.findall(sql)[0].lower() == table


# -- audits are read-only -------------------------------------------------------------------------

# What a name that writes the store looks like in this project (the owners' functions).
WRITER_NAME = re.compile(r"^(add|insert|register|record|write|log|ingest|import|attach|delete|remove)_")
# Named like writers, but they write nothing to the store: one adds the store's origin ids to rows held
# in memory, the other builds the one-line error of a failed file write.
READS_ONLY = {"pairstore.ingest.pair_files.add_store_origins", "pairstore.files.write_failure"}


def audit_writes(root: Path = ROOT) -> list[str]:
    """Every place an audits/ module writes a table itself or imports a core function that does."""
    problems = []
    for path in sorted((root / "audits").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            where = f"{path.relative_to(root)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                problems += [f"{where} writes {t}" for t in WRITE.findall(node.value)]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pairstore."):
                problems += [
                    f"{where} imports {node.module}.{a.name}"
                    for a in node.names
                    if WRITER_NAME.match(a.name) and f"{node.module}.{a.name}" not in READS_ONLY
                ]
            elif isinstance(node, ast.Attribute) and node.attr in {"transaction", "audit"}:
                problems.append(f"{where} calls store.{node.attr}")
    return problems


def test_audits_write_nothing():
    """docs/design.md: audits are read-only analyses; what they find goes to reports, not to the store."""
    problems = audit_writes()
    assert not problems, "audits that write:\n" + "\n".join(problems)


def test_the_audit_check_catches_a_write(tmp_path):
    (tmp_path / "audits").mkdir()
    (tmp_path / "audits" / "x.py").write_text(
        "from pairstore.tables.evals import add_scores, lm_eval_doc_text\n"
        "def f(store):\n    store.con.execute('UPDATE pairs SET kind = 1')\n"
    )
    assert audit_writes(tmp_path) == [
        "audits/x.py:1 imports pairstore.tables.evals.add_scores",
        "audits/x.py:3 writes pairs",
    ]


# -- no tracker references ------------------------------------------------------------------------

TRACKER_REF = re.compile(r"\b(?:issues?|ticket|tracker item)s? ?#?\d+", re.I)


def tracker_references(root: Path = ROOT) -> list[str]:
    """Comments and strings (docstrings included) that cite an issue number: the tracker is not in the
    repository, so the reference tells a reader nothing."""
    import io
    import tokenize

    found = []
    for top in (*PACKAGES, "tests", "bench", "scripts"):
        for path in sorted((root / top).rglob("*.py")) if (root / top).is_dir() else []:
            with open(path, encoding="utf-8") as f:
                tokens = tokenize.generate_tokens(io.StringIO(f.read()).readline)
                for tok in tokens:
                    if tok.type in (tokenize.COMMENT, tokenize.STRING) and TRACKER_REF.search(tok.string):
                        found.append(
                            f"{path.relative_to(root)}:{tok.start[0]}: {TRACKER_REF.search(tok.string)[0]}"
                        )
    return found


def test_no_comment_or_docstring_cites_an_issue_number():
    found = tracker_references()
    assert not found, "issue numbers in the source:\n" + "\n".join(found)


def test_the_tracker_check_catches_one(tmp_path):
    word = "iss" + "ue"  # spelled apart, so this file does not cite one itself
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text(f'"""Covers {word} 13."""\nx = 1  # see {word} #4\n')
    assert tracker_references(tmp_path) == [f"tests/test_x.py:1: {word} 13", f"tests/test_x.py:2: {word} #4"]
