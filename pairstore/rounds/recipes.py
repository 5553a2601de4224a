"""Round recipes: TOML files parsed into validated dataclasses and stored in `rounds`.

    pairstore round add pairstore/recipes/m11a.toml
    pairstore round list
    pairstore round show m11a

A recipe (docs/recipes.md) names a round, its kind (dpo, soup or
base), its parents, and for a dpo round the mixture (`[[mix]]` blocks) and the
training settings (`[train]`); a soup names `a`, `b` and `alpha` instead. Every
mistake is one plain error naming the file, the line and the field: an unknown
key, an unknown source, a missing parent, an alpha outside [0, 1], a name that
would not be a safe file name.

Rules chosen here (the issue leaves them open):

- Names: letters, digits, '.', '_' and '-' only, not starting with '.', at most
  100 characters. Round names become file names (NAME.parquet).
- Sources: known_sources() (every source declared by what writes it: each
  miner on its registration, the ingests of datasets and Arena battles, and
  'attached' for rows of attached files) and any source already present in the
  store's `pairs` (pairs ingested with `--source X`). The miners' sources are
  known once miners.registry is imported (the `pairstore` command imports it;
  it adds a loader that imports every miner when the sources are read).
- upsample: a number in (0, UPSAMPLE_MAX], i.e. at most 100 copies of a block.
- alpha: a number in [0, 1]. Soups here interpolate, out = a + alpha*(b - a); the
  card's "dose test" soups (0.75, 0.625) are interpolations too. Extrapolation
  (alpha > 1) would need a recipe kind of its own.
- A dpo round needs `parent`, a `seed`, at least one `[[mix]]` block and every
  `[train]` key; a soup needs `a`, `b`, `alpha` and has neither `mix` nor
  `train`; a base round has no parents and may name `model` and `revision`.
- `adapter_step` + `adapter_of` (m10b): the round is `parent` plus the LoRA
  delta saved at that step of round `adapter_of`; its mix and train are those
  of the run that produced the adapter.

`round add` stores the parsed recipe as JSON (the layout of
`Recipe.to_json`), the TOML text and the SHA-256 of its bytes. Adding the same
file again changes nothing; another recipe under an existing name is an error.
"""

from __future__ import annotations

import importlib
import json
import math
import re
import tomllib
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from pairstore.errors import BadInput, NotFound
from pairstore.keys import sha256_text
from pairstore.store.sql_guard import check_condition
from pairstore.tables.pairs import declared_sources

KINDS = ("dpo", "soup", "base")
# The core modules that write pairs and declare their sources (pairstore.tables.pairs.declare_sources);
# a miner declares its own on its registration (miners.registry), loaded by whoever runs miners.
_CORE_PRODUCERS = (
    "pairstore.ingest.arena",
    "pairstore.ingest.ultrafeedback",
    "pairstore.ingest.compliance",
    "pairstore.export.attach",
)
NAME_RE = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}")
# transformers' SchedulerType values.
LR_SCHEDULERS = (
    "linear",
    "cosine",
    "cosine_with_restarts",
    "polynomial",
    "constant",
    "constant_with_warmup",
    "inverse_sqrt",
    "reduce_lr_on_plateau",
    "cosine_with_min_lr",
    "warmup_stable_decay",
)

TOP_KEYS = (
    "name",
    "kind",
    "parent",
    "seed",
    "system_prompt",
    "job_id",
    "note",
    "mix",
    "train",
    "a",
    "b",
    "alpha",
    "adapter_step",
    "adapter_of",
    "model",
    "revision",
)
MIX_KEYS = ("source", "where", "limit", "upsample")
# The most copies a block may ask for. The shipped recipes use at most 24 (battle pairs); a typo such as
# 1200 for 12 would write a mixture a hundred times too large (and copies are counted in 32 bits).
UPSAMPLE_MAX = 100
TRAIN_KEYS = (
    "beta",
    "sft_weight",
    "lora_rank",
    "lora_alpha",
    "lora_dropout",
    "target_modules",
    "learning_rate",
    "lr_scheduler",
    "warmup_ratio",
    "max_steps",
    "global_batch",
    "per_device_batch",
    "max_length",
)


@dataclass(frozen=True)
class MixBlock:
    source: str
    where: str | None = None
    limit: int | None = None  # seeded sample of at most this many pairs
    upsample: float = 1  # copies: 12 = twelve; 1.5 = one copy plus a seeded half


@dataclass(frozen=True)
class TrainConfig:
    beta: float
    sft_weight: float
    lora_rank: int
    lora_alpha: float
    lora_dropout: float
    target_modules: str | list
    learning_rate: float
    lr_scheduler: str
    warmup_ratio: float
    max_steps: int
    global_batch: int  # per-device batch x grad accumulation x world size
    per_device_batch: int
    max_length: int


@dataclass(frozen=True)
class Recipe:
    name: str
    kind: str
    parent: str | None = None
    seed: int | None = None
    system_prompt: str | None = None  # "bundle": the parent bundle's system_prompt.txt; else a literal
    job_id: str | None = None
    note: str | None = None
    mix: tuple = ()
    train: TrainConfig | None = None
    a: str | None = None
    b: str | None = None
    alpha: float | None = None
    adapter_step: int | None = None
    adapter_of: str | None = None
    model: str | None = None
    revision: str | None = None
    sha256: str = field(default="", compare=False)

    @property
    def parents(self) -> list[str]:
        if self.kind == "soup":
            assert self.a is not None and self.b is not None  # read_recipe requires both
            return [self.a, self.b]
        if self.kind == "dpo":
            assert self.parent is not None  # read_recipe requires it
            return [self.parent] + ([self.adapter_of] if self.adapter_of else [])
        return []

    def to_json(self) -> dict:
        """The recipe JSON stored in rounds.recipe (the cross-team layout)."""
        out: dict[str, Any] = {
            "name": self.name,
            "kind": self.kind,
            "parent": self.parent,
            "parents": self.parents,
            "seed": self.seed,
            "system_prompt": self.system_prompt,
            "job_id": self.job_id,
            "note": self.note,
            "mix": [asdict(m) for m in self.mix],
            "train": asdict(self.train) if self.train else None,
        }
        if self.kind == "soup":
            out.update(a=self.a, b=self.b, alpha=self.alpha)
        if self.adapter_step is not None:
            out.update(adapter_step=self.adapter_step, adapter_of=self.adapter_of)
        if self.kind == "base":
            out.update(model=self.model, revision=self.revision)
        return out

    @classmethod
    def from_json(cls, data: dict, sha256: str = "") -> Recipe:
        train = TrainConfig(**data["train"]) if data.get("train") else None
        mix = tuple(MixBlock(**m) for m in data.get("mix") or [])
        keep: dict[str, Any] = {
            k: data.get(k)
            for k in (
                "name",
                "kind",
                "parent",
                "seed",
                "system_prompt",
                "job_id",
                "note",
                "a",
                "b",
                "alpha",
                "adapter_step",
                "adapter_of",
                "model",
                "revision",
            )
        }
        return cls(mix=mix, train=train, sha256=sha256, **keep)


# -- parsing -------------------------------------------------------------------


class _Lines:
    """Finds the line of a key in a TOML text, for error messages (tomllib reports none)."""

    def __init__(self, text: str):
        self.lines = text.splitlines()
        self.sections: list[tuple[str, int]] = [("", 1)]  # (section, first line)
        mix_n = 0
        for i, line in enumerate(self.lines, start=1):
            s = line.strip()
            if s.startswith("[[mix]]"):
                self.sections.append((f"mix{mix_n}", i))
                mix_n += 1
            elif s.startswith("["):
                self.sections.append((s.strip("[] ").split("#")[0].strip(" ]"), i))

    def of(self, section: str, key: str | None = None) -> int | None:
        starts = [(s, i) for s, i in self.sections]
        for n, (s, start) in enumerate(starts):
            if s != section:
                continue
            end = starts[n + 1][1] if n + 1 < len(starts) else len(self.lines) + 1
            if key is None:
                return start
            pat = re.compile(rf"\s*{re.escape(key)}\s*=")
            for i in range(start, end):
                if pat.match(self.lines[i - 1]):
                    return i
            return start
        return None


class _Checker:
    def __init__(self, path, text: str):
        self.path = str(path) if path is not None else None
        self.where = _Lines(text)

    def fail(self, msg: str, section: str, key: str | None, field_name: str | None = None):
        raise BadInput(msg, path=self.path, line=self.where.of(section, key), field=field_name or key)

    def number(self, value, section, key, *, lo=None, hi=None, integer=False, lo_open=False, label=None):
        name = label or key
        ok_type = isinstance(value, int) if integer else isinstance(value, (int, float))
        if isinstance(value, bool) or not ok_type or (isinstance(value, float) and not math.isfinite(value)):
            self.fail(
                f"{name} must be {'an integer' if integer else 'a number'}, got {value!r}", section, key, name
            )
        if lo is not None and (value <= lo if lo_open else value < lo):
            self.fail(f"{name} must be {'>' if lo_open else '>='} {lo}, got {value!r}", section, key, name)
        if hi is not None and value > hi:
            self.fail(f"{name} must be <= {hi}, got {value!r}", section, key, name)
        return value

    def string(self, value, section, key, label=None):
        if not isinstance(value, str) or not value.strip():
            self.fail(f"{label or key} must be a non-empty string, got {value!r}", section, key, label)
        return value

    def name(self, value, section, key):
        self.string(value, section, key)
        if not NAME_RE.fullmatch(value):
            self.fail(
                f"bad round name {value!r}: letters, digits, '.', '_', '-' only (not starting with '.', "
                "at most 100 characters); round names become file names",
                section,
                key,
            )
        return value


def parse_recipe(text: str, *, path=None, sources=None) -> Recipe:
    """Parse and validate one recipe. `sources`: allowed mix sources (default known_sources())."""
    allowed = tuple(sources) if sources is not None else known_sources()
    c = _Checker(path, text)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"line (\d+)", str(e))
        raise BadInput(f"not valid TOML: {e}", path=c.path, line=int(m.group(1)) if m else None) from None
    for key in data:
        if key not in TOP_KEYS:
            c.fail(f"unknown key {key!r} (known: {', '.join(TOP_KEYS)})", "", key)
    if "name" not in data:
        c.fail("missing 'name'", "", None, "name")
    name = c.name(data["name"], "", "name")
    kind = data.get("kind")
    if kind not in KINDS:
        c.fail(f"kind must be one of {', '.join(KINDS)}, got {kind!r}", "", "kind")

    def forbid(keys, why):
        for k in keys:
            if k in data:
                c.fail(f"{k!r} does not belong in a {kind} recipe ({why})", "", k)

    job_id = data.get("job_id")
    if job_id is not None:
        if isinstance(job_id, bool) or not isinstance(job_id, (int, str)):
            c.fail(f"job_id must be a string or an integer, got {job_id!r}", "", "job_id")
        job_id = str(job_id)
    note = data.get("note")
    if note is not None:
        c.string(note, "", "note")
    common = {"name": name, "kind": kind, "job_id": job_id, "note": note}

    if kind == "base":
        forbid(
            (
                "parent",
                "mix",
                "train",
                "a",
                "b",
                "alpha",
                "adapter_step",
                "adapter_of",
                "seed",
                "system_prompt",
            ),
            "a base model has no parents and no training",
        )
        for k in ("model", "revision"):
            if k in data:
                c.string(data[k], "", k)
        return Recipe(
            **common, model=data.get("model"), revision=data.get("revision"), sha256=sha256_text(text)
        )

    forbid(("model", "revision"), "only a base names a model")
    if kind == "soup":
        forbid(
            ("parent", "mix", "train", "seed", "system_prompt", "adapter_step", "adapter_of"),
            "a soup names a, b and alpha and runs no training",
        )
        for k in ("a", "b", "alpha"):
            if k not in data:
                c.fail(f"a soup needs {k!r}", "", None, k)
        a = c.name(data["a"], "", "a")
        b = c.name(data["b"], "", "b")
        if a == b:
            c.fail("a soup of a checkpoint with itself", "", "b")
        alpha = c.number(data["alpha"], "", "alpha", lo=0, hi=1)
        return Recipe(**common, a=a, b=b, alpha=float(alpha), sha256=sha256_text(text))

    # dpo
    forbid(("a", "b", "alpha"), "a dpo round names one parent")
    for k in ("parent", "seed", "mix", "train"):
        if k not in data:
            c.fail(f"a dpo round needs {k!r}", "", None, k)
    parent = c.name(data["parent"], "", "parent")
    seed = c.number(data["seed"], "", "seed", integer=True, lo=0)
    system_prompt = data.get("system_prompt")
    if system_prompt is not None and not isinstance(system_prompt, str):
        c.fail(
            f'system_prompt must be a string ("bundle" or the prompt itself), got {system_prompt!r}',
            "",
            "system_prompt",
        )
    adapter_step = adapter_of = None
    if ("adapter_step" in data) != ("adapter_of" in data):
        c.fail(
            "adapter_step and adapter_of go together",
            "",
            "adapter_step" if "adapter_step" in data else "adapter_of",
        )
    if "adapter_step" in data:
        adapter_step = c.number(data["adapter_step"], "", "adapter_step", integer=True, lo=1)
        adapter_of = c.name(data["adapter_of"], "", "adapter_of")

    blocks = data["mix"]
    if not isinstance(blocks, list) or not blocks or not all(isinstance(b, dict) for b in blocks):
        c.fail("mix must be one or more [[mix]] tables", "", "mix")
    mix = []
    for i, blk in enumerate(blocks):
        sec = f"mix{i}"
        for key in blk:
            if key not in MIX_KEYS:
                c.fail(
                    f"unknown key {key!r} in [[mix]] block {i + 1} (known: {', '.join(MIX_KEYS)})",
                    sec,
                    key,
                    f"mix[{i}].{key}",
                )
        if "source" not in blk:
            c.fail(f"[[mix]] block {i + 1} needs a source", sec, None, f"mix[{i}].source")
        source = blk["source"]
        if source not in allowed:
            c.fail(
                f"unknown source {source!r} in [[mix]] block {i + 1} (known: {', '.join(sorted(allowed))})",
                sec,
                "source",
                f"mix[{i}].source",
            )
        where = blk.get("where")
        if where is not None:
            c.string(where, sec, "where", f"mix[{i}].where")
            check_condition(where, field=f"mix[{i}].where", path=c.path, line=c.where.of(sec, "where"))
        limit = blk.get("limit")
        if limit is not None:
            limit = c.number(limit, sec, "limit", integer=True, lo=1, label=f"mix[{i}].limit")
        upsample = c.number(
            blk.get("upsample", 1),
            sec,
            "upsample",
            lo=0,
            lo_open=True,
            hi=UPSAMPLE_MAX,
            label=f"mix[{i}].upsample",
        )
        mix.append(
            MixBlock(
                source=source,
                where=where,
                limit=limit,
                upsample=int(upsample) if float(upsample).is_integer() else float(upsample),
            )
        )

    t = data["train"]
    if not isinstance(t, dict):
        c.fail("train must be a [train] table", "", "train")
    for key in t:
        if key not in TRAIN_KEYS:
            c.fail(
                f"unknown key {key!r} in [train] (known: {', '.join(TRAIN_KEYS)})",
                "train",
                key,
                f"train.{key}",
            )
    for key in TRAIN_KEYS:
        if key not in t:
            c.fail(f"[train] needs {key!r}", "train", None, f"train.{key}")

    def num(key, **kw):
        return c.number(t[key], "train", key, label=f"train.{key}", **kw)

    tm = t["target_modules"]
    if not (isinstance(tm, str) and tm.strip()) and not (
        isinstance(tm, list) and tm and all(isinstance(x, str) and x for x in tm)
    ):
        c.fail(
            'train.target_modules must be a string ("all-linear") or a list of module names',
            "train",
            "target_modules",
            "train.target_modules",
        )
    if t["lr_scheduler"] not in LR_SCHEDULERS:
        c.fail(
            f"train.lr_scheduler must be one of {', '.join(LR_SCHEDULERS)}, got {t['lr_scheduler']!r}",
            "train",
            "lr_scheduler",
            "train.lr_scheduler",
        )
    train = TrainConfig(
        beta=float(num("beta", lo=0, lo_open=True)),
        sft_weight=float(num("sft_weight", lo=0)),
        lora_rank=num("lora_rank", integer=True, lo=1),
        lora_alpha=num("lora_alpha", lo=0, lo_open=True),
        lora_dropout=float(num("lora_dropout", lo=0, hi=1)),
        target_modules=tm,
        learning_rate=float(num("learning_rate", lo=0, lo_open=True)),
        lr_scheduler=t["lr_scheduler"],
        warmup_ratio=float(num("warmup_ratio", lo=0, hi=1)),
        max_steps=num("max_steps", integer=True, lo=1),
        global_batch=num("global_batch", integer=True, lo=1),
        per_device_batch=num("per_device_batch", integer=True, lo=1),
        max_length=num("max_length", integer=True, lo=1),
    )
    if train.global_batch % train.per_device_batch:
        c.fail(
            f"train.global_batch ({train.global_batch}) must be a multiple of train.per_device_batch "
            f"({train.per_device_batch})",
            "train",
            "global_batch",
            "train.global_batch",
        )
    return Recipe(
        **common,
        parent=parent,
        seed=seed,
        system_prompt=system_prompt,
        mix=tuple(mix),
        train=train,
        adapter_step=adapter_step,
        adapter_of=adapter_of,
        sha256=sha256_text(text),
    )


def read_recipe_file(path, *, sources=None) -> Recipe:
    """Read and parse a recipe file; the SHA-256 is of the file's bytes."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise BadInput(f"cannot read recipe: {e.strerror}", path=str(path)) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(f"not UTF-8 text (byte {e.start})", path=str(path)) from None
    return parse_recipe(text, path=path, sources=sources)


# -- the store -------------------------------------------------------------------


def known_sources() -> tuple[str, ...]:
    """Every declared pair source: the core's producers (imported here) and every miner registered so far."""
    for module in _CORE_PRODUCERS:
        importlib.import_module(module)
    return tuple(declared_sources())


def store_sources(store) -> tuple[str, ...]:
    """known_sources() plus every source present in the store's pairs."""
    present = [r[0] for r in store.con.execute("SELECT DISTINCT source FROM pairs").fetchall()]
    return tuple(sorted(set(known_sources()) | set(present)))


def add_round(store, path) -> tuple[Recipe, bool]:
    """Register the recipe file at `path`. Returns (recipe, added); the same file again adds nothing."""
    recipe = read_recipe_file(path, sources=store_sources(store))
    text = Path(path).read_bytes().decode("utf-8")
    with store.transaction():
        existing = store.one("SELECT recipe_sha256 FROM rounds WHERE name = ?", [recipe.name])
        if existing is not None:
            if existing[0] == recipe.sha256:
                return recipe, False
            raise BadInput(
                f"round {recipe.name!r} is already registered with another recipe "
                f"(sha256 {existing[0][:12]}, this file {recipe.sha256[:12]}); recipes are never "
                "replaced: give the new one another name",
                path=str(path),
                field="name",
            )
        named = (
            [("a", recipe.a), ("b", recipe.b)]
            if recipe.kind == "soup"
            else [("parent", recipe.parent), ("adapter_of", recipe.adapter_of)]
        )
        for key, p in named:
            if p is not None and not store.one("SELECT 1 FROM rounds WHERE name = ?", [p]):
                raise BadInput(
                    f"parent {p!r} is not a registered round (add its recipe first)",
                    path=str(path),
                    line=_Lines(text).of("", key),
                    field=key,
                )
        store.con.execute(
            "INSERT INTO rounds (name, kind, parents, alpha, job_id, recipe, recipe_toml, recipe_sha256) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                recipe.name,
                recipe.kind,
                recipe.parents,
                recipe.alpha,
                recipe.job_id,
                json.dumps(recipe.to_json(), sort_keys=True),
                text,
                recipe.sha256,
            ],
        )
        store.audit(
            "round.add",
            recipe.name,
            {"kind": recipe.kind, "parents": recipe.parents, "sha256": recipe.sha256, "path": str(path)},
        )
    return recipe, True


def get_round(store, name: str) -> Recipe:
    row = store.one("SELECT recipe, recipe_sha256 FROM rounds WHERE name = ?", [name])
    if row is None:
        raise NotFound(f"no round {name!r} (add its recipe with `pairstore round add FILE`)")
    return Recipe.from_json(json.loads(row[0]), sha256=row[1])


def list_rounds(store) -> list[dict]:
    return store.rows("""
        SELECT r.name, r.kind, array_to_string(r.parents, ',') AS parents, r.alpha, r.job_id,
               (SELECT count(*) FROM exports e WHERE e.round = r.name) AS exports,
               left(r.recipe_sha256, 12) AS sha256
        FROM rounds r ORDER BY r.added_at, r.name""")


def show_round(store, name: str) -> dict:
    """The stored recipe JSON plus its SHA-256, TOML text and registered mixtures."""
    row = store.one("SELECT recipe, recipe_sha256, recipe_toml, added_at FROM rounds WHERE name = ?", [name])
    if row is None:
        raise NotFound(f"no round {name!r} (add its recipe with `pairstore round add FILE`)")
    exports = store.rows(
        "SELECT export_id, kind, path, rows, sha256, created_at FROM exports "
        "WHERE round = ? ORDER BY created_at, export_id",
        [name],
    )
    return {
        "recipe": json.loads(row[0]),
        "sha256": row[1],
        "toml": row[2],
        "added_at": str(row[3]),
        "exports": exports,
    }


# -- shipped recipes ------------------------------------------------------------------


def shipped_recipe_paths() -> list[Path]:
    """The recipes under pairstore/recipes/, one per documented stage of the model card."""
    folder = resources.files("pairstore") / "recipes"
    return sorted(Path(str(p)) for p in folder.iterdir() if p.name.endswith(".toml"))


def parents_first(recipes: list[Recipe]) -> list[Recipe]:
    """Recipes ordered so that every parent comes before its children (name order among equals)."""
    by_name = {r.name: r for r in recipes}
    out, done, visiting = [], set(), set()

    def visit(r: Recipe):
        if r.name in done:
            return
        if r.name in visiting:
            raise BadInput(f"round {r.name!r} is its own ancestor", field="parent")
        visiting.add(r.name)
        for p in r.parents:
            if p in by_name:
                visit(by_name[p])
        visiting.discard(r.name)
        done.add(r.name)
        out.append(r)

    for r in sorted(recipes, key=lambda r: r.name):
        visit(r)
    return out


def load_shipped_recipes(store, paths=None) -> dict:
    """Add every shipped recipe (parents first). Returns {"added": [...], "unchanged": [...]}."""
    sources = store_sources(store)
    files: dict[str, tuple[Recipe, Path]] = {}
    for p in paths or shipped_recipe_paths():
        r = read_recipe_file(p, sources=sources)
        if r.name in files:
            raise BadInput(f"two recipes name round {r.name!r} ({files[r.name][1]} and {p})", path=str(p))
        files[r.name] = (r, p)
    added: list[str] = []
    unchanged: list[str] = []
    with store.transaction():
        for r in parents_first([r for r, _ in files.values()]):
            _, new = add_round(store, files[r.name][1])
            (added if new else unchanged).append(r.name)
    return {"added": added, "unchanged": unchanged}
