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

Rules chosen here:

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

import functools
import importlib
import json
import math
import re
import tomllib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import MISSING, asdict, dataclass, field, fields
from importlib import resources
from pathlib import Path
from typing import Any, NoReturn

import duckdb

from pairstore.errors import BadInput, BadInputs, NotFound, PairstoreError, duckdb_message
from pairstore.files import StrPath
from pairstore.keys import sha256_text
from pairstore.store.sql_guard import check_condition
from pairstore.store.store import Store
from pairstore.tables.pairs import declared_sources
from pairstore.tables.rounds import insert_round

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

# The most copies a block may ask for. The shipped recipes use at most 24 (battle pairs); a typo such as
# 1200 for 12 would write a mixture a hundred times too large (and copies are counted in 32 bits).
UPSAMPLE_MAX = 100


@dataclass(frozen=True)
class MixBlock:
    source: str
    where: str | None = None
    limit: int | None = None  # seeded sample of at most this many pairs
    upsample: float = 1  # copies: 12 = twelve; 1.5 = one copy plus a seeded half


@dataclass(frozen=True)
class TrainConfig:
    """A dpo round's `[train]` table: every key required; train/ takes this object as it is."""

    beta: float
    sft_weight: float
    lora_rank: int
    lora_alpha: float
    lora_dropout: float
    target_modules: str | list[str]
    learning_rate: float
    lr_scheduler: str
    warmup_ratio: float
    max_steps: int
    global_batch: int  # per-device batch x grad accumulation x world size
    per_device_batch: int
    max_length: int


def keys_of(cls: type) -> tuple[str, ...]:
    """The TOML keys of a recipe table: its dataclass's init fields, in order (`sha256` is not a key)."""
    return tuple(f.name for f in fields(cls) if f.init and f.name != "sha256")


MIX_KEYS = keys_of(MixBlock)
TRAIN_KEYS = keys_of(TrainConfig)


@dataclass(frozen=True, kw_only=True)
class _RecipeBase:
    """What every recipe has. Each kind below adds its own keys; `keys_of(kind class)` are its TOML keys."""

    name: str
    kind: str
    job_id: str | None = None
    note: str | None = None
    sha256: str = field(default="", compare=False)

    @property
    def parents(self) -> list[str]:
        return []

    def to_json(self) -> dict[str, Any]:
        """The recipe JSON stored in rounds.recipe (the cross-team layout: the same keys for every kind,
        None where a kind has no such key, plus the kind's own extras)."""
        get = functools.partial(getattr, self)
        mix = get("mix", ())
        train = get("train", None)
        return {
            "name": self.name,
            "kind": self.kind,
            "parent": get("parent", None),
            "parents": self.parents,
            "seed": get("seed", None),
            "system_prompt": get("system_prompt", None),
            "job_id": self.job_id,
            "note": self.note,
            "mix": [asdict(m) for m in mix],
            "train": asdict(train) if train else None,
        }


@dataclass(frozen=True, kw_only=True)
class BaseRecipe(_RecipeBase):
    """A base model: no parents, no training; may name the model and its revision."""

    kind: str = "base"
    model: str | None = None
    revision: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "model": self.model, "revision": self.revision}


@dataclass(frozen=True, kw_only=True)
class SoupRecipe(_RecipeBase):
    """out = a + alpha * (b - a) of two merged checkpoints."""

    kind: str = "soup"
    a: str
    b: str
    alpha: float

    @property
    def parents(self) -> list[str]:
        return [self.a, self.b]

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "a": self.a, "b": self.b, "alpha": self.alpha}


@dataclass(frozen=True, kw_only=True)
class DpoRecipe(_RecipeBase):
    """DPO+NLL with LoRA on `parent`: a mixture (`[[mix]]` blocks) and the training settings (`[train]`);
    or, with `adapter_step` + `adapter_of`, `parent` plus the LoRA delta saved at that step of that round."""

    kind: str = "dpo"
    parent: str
    seed: int
    mix: tuple[MixBlock, ...]
    train: TrainConfig
    system_prompt: str | None = None  # "bundle": the parent bundle's system_prompt.txt; else a literal
    adapter_step: int | None = None
    adapter_of: str | None = None

    @property
    def parents(self) -> list[str]:
        return [self.parent] + ([self.adapter_of] if self.adapter_of else [])

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        if self.adapter_step is not None:
            out.update(adapter_step=self.adapter_step, adapter_of=self.adapter_of)
        return out


Recipe = BaseRecipe | SoupRecipe | DpoRecipe
RECIPE_CLASSES: dict[str, type[BaseRecipe] | type[SoupRecipe] | type[DpoRecipe]] = {
    "dpo": DpoRecipe,
    "soup": SoupRecipe,
    "base": BaseRecipe,
}
KINDS = tuple(RECIPE_CLASSES)
# Every key some kind of recipe has (an unknown key is none of these).
ALL_KEYS = tuple(dict.fromkeys(k for cls in RECIPE_CLASSES.values() for k in keys_of(cls)))


def recipe_from_json(data: dict, sha256: str = "") -> Recipe:
    """The recipe stored as JSON (to_json) back as its dataclass."""
    cls = RECIPE_CLASSES[data["kind"]]
    values: dict[str, Any] = {k: data.get(k) for k in keys_of(cls) if k in data}
    if cls is DpoRecipe:
        values["mix"] = tuple(MixBlock(**m) for m in data.get("mix") or [])
        values["train"] = TrainConfig(**data["train"])
    return cls(**values, sha256=sha256)


class _Lines:
    """Line numbers of sections and keys in a recipe's TOML text (tomllib gives none)."""

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


class _Invalid(Exception):
    """One value failed its check (recorded in _Checker.problems); the value is left out."""


class _Checker:
    """Checks a recipe's values, recording every mistake (file, line, field) instead of
    stopping at the first."""

    def __init__(self, path: StrPath | None, text: str) -> None:
        self.path = str(path) if path is not None else None
        self.where = _Lines(text)
        self.problems: list[BadInput] = []

    def fail(self, msg: str, section: str, key: str | None, field_name: str | None = None) -> NoReturn:
        """Record a mistake and abandon the value being checked."""
        self.note(msg, section, key, field_name)
        raise _Invalid

    def note(self, msg: str, section: str, key: str | None, field_name: str | None = None) -> None:
        self.problems.append(
            BadInput(msg, path=self.path, line=self.where.of(section, key), field=field_name or key)
        )

    def value(self, check: Callable[[], Any]) -> Any:
        """check() or, where it recorded a mistake, None (the rest of the recipe is still checked)."""
        try:
            return check()
        except _Invalid:
            return None

    def raise_problems(self) -> None:
        if len(self.problems) == 1:
            raise self.problems[0]
        if self.problems:
            raise BadInputs(self.problems)

    def number(
        self,
        value: Any,
        section: str,
        key: str,
        *,
        lo: float | None = None,
        hi: float | None = None,
        integer: bool = False,
        lo_open: bool = False,
        label: str | None = None,
    ) -> Any:
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

    def string(self, value: Any, section: str, key: str, label: str | None = None) -> Any:
        if not isinstance(value, str) or not value.strip():
            self.fail(f"{label or key} must be a non-empty string, got {value!r}", section, key, label)
        return value

    def name(self, value: Any, section: str, key: str) -> Any:
        self.string(value, section, key)
        if not NAME_RE.fullmatch(value):
            self.fail(
                f"bad round name {value!r}: letters, digits, '.', '_', '-' only (not starting with '.', "
                "at most 100 characters); round names become file names",
                section,
                key,
            )
        return value


# Why a key of another kind does not belong in a recipe of this kind.
_NOT_HERE = {
    "base": "a base model has no parents and no training",
    "soup": "a soup names a, b and alpha and runs no training",
    "dpo": "a dpo round names one parent",
}


def parse_recipe(text: str, *, path: StrPath | None = None, sources: Iterable[str] | None = None) -> Recipe:
    """Parse and validate one recipe. `sources`: allowed mix sources (default known_sources()).

    Every mistake is found, not only the first: one BadInput, or BadInputs holding one per mistake."""
    allowed = tuple(sources) if sources is not None else known_sources()
    c = _Checker(path, text)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"line (\d+)", str(e))
        raise BadInput(f"not valid TOML: {e}", path=c.path, line=int(m.group(1)) if m else None) from None
    kind = data.get("kind")
    if kind not in KINDS:
        c.note(f"kind must be one of {', '.join(KINDS)}, got {kind!r}", "", "kind")
    cls = RECIPE_CLASSES.get(kind) if isinstance(kind, str) else None
    own = keys_of(cls) if cls is not None else ALL_KEYS
    for key in data:
        if key not in ALL_KEYS:
            c.note(f"unknown key {key!r} (known: {', '.join(ALL_KEYS)})", "", key)
        elif key not in own:
            why = "only a base names a model" if key in ("model", "revision") else _NOT_HERE[str(kind)]
            c.note(f"{key!r} does not belong in a {kind} recipe ({why})", "", key)
    required = [f.name for f in fields(cls) if f.init and f.default is MISSING] if cls else ["name"]
    for key in required:
        if key not in data:
            need = {"soup": "a soup needs", "dpo": "a dpo round needs"}.get(str(kind), "missing")
            c.note(f"{'missing' if key == 'name' else need} {key!r}", "", None, key)
    values: dict[str, Any] = {}
    if "name" in data:
        values["name"] = c.value(lambda: c.name(data["name"], "", "name"))
    if "job_id" in data:
        job_id = data["job_id"]
        if isinstance(job_id, bool) or not isinstance(job_id, (int, str)):
            c.note(f"job_id must be a string or an integer, got {job_id!r}", "", "job_id")
        else:
            values["job_id"] = str(job_id)
    if "note" in data:
        values["note"] = c.value(lambda: c.string(data["note"], "", "note"))
    if cls is BaseRecipe:
        for k in ("model", "revision"):
            if k in data:
                values[k] = c.value(functools.partial(c.string, data[k], "", k))
    elif cls is SoupRecipe:
        _soup_values(c, data, values)
    elif cls is DpoRecipe:
        _dpo_values(c, data, values, allowed)
    c.raise_problems()
    assert cls is not None
    return cls(**values, sha256=sha256_text(text))


def _soup_values(c: _Checker, data: dict, values: dict[str, Any]) -> None:
    for k in ("a", "b"):
        if k in data:
            values[k] = c.value(functools.partial(c.name, data[k], "", k))
    if values.get("a") is not None and values.get("a") == values.get("b"):
        c.note("a soup of a checkpoint with itself", "", "b")
    if "alpha" in data:
        alpha = c.value(lambda: c.number(data["alpha"], "", "alpha", lo=0, hi=1))
        values["alpha"] = None if alpha is None else float(alpha)


def _dpo_values(c: _Checker, data: dict, values: dict[str, Any], allowed: tuple[str, ...]) -> None:
    if "parent" in data:
        values["parent"] = c.value(lambda: c.name(data["parent"], "", "parent"))
    if "seed" in data:
        values["seed"] = c.value(lambda: c.number(data["seed"], "", "seed", integer=True, lo=0))
    system_prompt = data.get("system_prompt")
    if system_prompt is not None and not isinstance(system_prompt, str):
        c.note(
            f'system_prompt must be a string ("bundle" or the prompt itself), got {system_prompt!r}',
            "",
            "system_prompt",
        )
    else:
        values["system_prompt"] = system_prompt
    if ("adapter_step" in data) != ("adapter_of" in data):
        c.note(
            "adapter_step and adapter_of go together",
            "",
            "adapter_step" if "adapter_step" in data else "adapter_of",
        )
    elif "adapter_step" in data:
        values["adapter_step"] = c.value(
            lambda: c.number(data["adapter_step"], "", "adapter_step", integer=True, lo=1)
        )
        values["adapter_of"] = c.value(lambda: c.name(data["adapter_of"], "", "adapter_of"))
    if "mix" in data:
        values["mix"] = _mix_blocks(c, data["mix"], allowed)
    if "train" in data:
        values["train"] = c.value(lambda: _train_table(c, data["train"]))


def _mix_blocks(c: _Checker, blocks: Any, allowed: tuple[str, ...]) -> tuple[MixBlock, ...] | None:
    if not isinstance(blocks, list) or not blocks or not all(isinstance(b, dict) for b in blocks):
        c.note("mix must be one or more [[mix]] tables", "", "mix")
        return None
    mix = [c.value(functools.partial(_mix_block, c, i, blk, allowed)) for i, blk in enumerate(blocks)]
    return tuple(mix)


def _mix_block(c: _Checker, i: int, blk: dict, allowed: tuple[str, ...]) -> MixBlock:
    sec = f"mix{i}"
    for key in blk:
        if key not in MIX_KEYS:
            c.note(
                f"unknown key {key!r} in [[mix]] block {i + 1} (known: {', '.join(MIX_KEYS)})",
                sec,
                key,
                f"mix[{i}].{key}",
            )
    source = blk.get("source")
    if source is None:
        c.note(f"[[mix]] block {i + 1} needs a source", sec, None, f"mix[{i}].source")
    elif source not in allowed:
        c.note(
            f"unknown source {source!r} in [[mix]] block {i + 1} (known: {', '.join(sorted(allowed))})",
            sec,
            "source",
            f"mix[{i}].source",
        )

    def where() -> str:
        w = c.string(blk["where"], sec, "where", f"mix[{i}].where")
        try:
            check_condition(w, field=f"mix[{i}].where", path=c.path, line=c.where.of(sec, "where"))
        except BadInput as e:
            c.problems.append(e)
            raise _Invalid from None
        return w

    where_value = c.value(where) if blk.get("where") is not None else None
    limit = blk.get("limit")
    if limit is not None:
        limit = c.value(lambda: c.number(limit, sec, "limit", integer=True, lo=1, label=f"mix[{i}].limit"))
    upsample = c.value(
        lambda: c.number(
            blk.get("upsample", 1),
            sec,
            "upsample",
            lo=0,
            lo_open=True,
            hi=UPSAMPLE_MAX,
            label=f"mix[{i}].upsample",
        )
    )
    if upsample is None or source is None:
        raise _Invalid
    return MixBlock(
        source=source,
        where=where_value,
        limit=limit,
        upsample=int(upsample) if float(upsample).is_integer() else float(upsample),
    )


def _train_table(c: _Checker, t: Any) -> TrainConfig:
    if not isinstance(t, dict):
        c.fail("train must be a [train] table", "", "train")
    for key in t:
        if key not in TRAIN_KEYS:
            c.note(
                f"unknown key {key!r} in [train] (known: {', '.join(TRAIN_KEYS)})",
                "train",
                key,
                f"train.{key}",
            )
    for key in TRAIN_KEYS:
        if key not in t:
            c.note(f"[train] needs {key!r}", "train", None, f"train.{key}")

    def num(key: str, **kw: Any) -> Any:
        if key not in t:
            return None
        return c.value(lambda: c.number(t[key], "train", key, label=f"train.{key}", **kw))

    tm = t.get("target_modules")
    if (
        tm is not None
        and not (isinstance(tm, str) and tm.strip())
        and not (isinstance(tm, list) and tm and all(isinstance(x, str) and x for x in tm))
    ):
        c.note(
            'train.target_modules must be a string ("all-linear") or a list of module names',
            "train",
            "target_modules",
            "train.target_modules",
        )
        tm = None
    scheduler = t.get("lr_scheduler")
    if scheduler is not None and scheduler not in LR_SCHEDULERS:
        c.note(
            f"train.lr_scheduler must be one of {', '.join(LR_SCHEDULERS)}, got {scheduler!r}",
            "train",
            "lr_scheduler",
            "train.lr_scheduler",
        )
        scheduler = None
    values = {
        "beta": num("beta", lo=0, lo_open=True),
        "sft_weight": num("sft_weight", lo=0),
        "lora_rank": num("lora_rank", integer=True, lo=1),
        "lora_alpha": num("lora_alpha", lo=0, lo_open=True),
        "lora_dropout": num("lora_dropout", lo=0, hi=1),
        "target_modules": tm,
        "learning_rate": num("learning_rate", lo=0, lo_open=True),
        "lr_scheduler": scheduler,
        "warmup_ratio": num("warmup_ratio", lo=0, hi=1),
        "max_steps": num("max_steps", integer=True, lo=1),
        "global_batch": num("global_batch", integer=True, lo=1),
        "per_device_batch": num("per_device_batch", integer=True, lo=1),
        "max_length": num("max_length", integer=True, lo=1),
    }
    if (
        values["global_batch"]
        and values["per_device_batch"]
        and values["global_batch"] % values["per_device_batch"]
    ):
        c.note(
            f"train.global_batch ({values['global_batch']}) must be a multiple of train.per_device_batch "
            f"({values['per_device_batch']})",
            "train",
            "global_batch",
            "train.global_batch",
        )
    if any(v is None for v in values.values()):
        raise _Invalid
    for key in ("beta", "sft_weight", "lora_dropout", "learning_rate", "warmup_ratio"):
        values[key] = float(values[key])
    return TrainConfig(**values)


def read_recipe_file(path: StrPath, *, sources: Iterable[str] | None = None) -> Recipe:
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


def store_sources(store: Store) -> tuple[str, ...]:
    """known_sources() plus every source present in the store's pairs."""
    present = [r[0] for r in store.con.execute("SELECT DISTINCT source FROM pairs").fetchall()]
    return tuple(sorted(set(known_sources()) | set(present)))


def mix_rows_sql(where: str | None) -> str:
    """The rows one [[mix]] block selects from, as SQL with one parameter (the source): the export's
    plan and the check at `round add` read the same text, so a condition that binds here binds there.
    The condition runs inside a subquery already limited to the source, so it can only narrow it."""
    rows = "(SELECT rowid AS prow, * FROM pairs WHERE source = ?) AS pairs"
    return f"{rows} WHERE ({where})" if where else rows


def bind_mix_conditions(store: Store, recipe: Recipe, path: StrPath | None, text: str) -> list[BadInput]:
    """Each [[mix]] block's `where`, bound against the store's `pairs` (nothing is read: LIMIT 0), so a
    wrong column is found when the round is added, not at its export after its name is taken. One
    BadInput per block that does not bind, naming the file, the line of its `where` and DuckDB's hint."""
    if not isinstance(recipe, DpoRecipe):
        return []
    problems = []
    lines = _Lines(text)
    for i, blk in enumerate(recipe.mix):
        if not blk.where:
            continue
        try:
            store.con.execute(f"SELECT 1 FROM {mix_rows_sql(blk.where)} LIMIT 0", [blk.source]).fetchall()
        except duckdb.Error as e:
            problems.append(
                BadInput(
                    f"[[mix]] block {i + 1} (source {blk.source!r}): its where does not bind against "
                    f"pairs: {duckdb_message(e)}",
                    path=None if path is None else str(path),
                    line=lines.of(f"mix{i}", "where"),
                    field=f"mix[{i}].where",
                )
            )
    return problems


def add_round(store: Store, path: str | Path) -> tuple[Recipe, bool]:
    """Register the recipe file at `path`. Returns (recipe, added); the same file again adds nothing."""
    return add_rounds(store, [path])[0]


def add_rounds(
    store: Store, paths: Sequence[StrPath], *, check_only: bool = False
) -> list[tuple[Recipe, bool]]:
    """Register recipe files as rounds, all or nothing: every mistake of every file is reported (one
    BadInput, or BadInputs with one per mistake) and then nothing is added. A parent may be a registered
    round or a recipe among `paths`; every [[mix]] `where` is bound against `pairs` first. Returns (recipe,
    added) per file, in the order given; the same file again adds nothing. `check_only`: every check, and
    nothing added (each `added` is False)."""
    sources = store_sources(store)
    problems: list[BadInput] = []
    parsed: list[tuple[Recipe, Path, str]] = []
    for path in paths:
        try:
            recipe = read_recipe_file(path, sources=sources)
        except BadInputs as e:
            problems += e.problems
            continue
        except BadInput as e:
            problems.append(e)
            continue
        text = Path(path).read_bytes().decode("utf-8")
        problems += bind_mix_conditions(store, recipe, path, text)
        parsed.append((recipe, Path(path), text))
    batch: dict[str, tuple[Recipe, Path, str]] = {}
    for recipe, path, text in parsed:
        first = batch.setdefault(recipe.name, (recipe, path, text))
        if first[0].sha256 != recipe.sha256:
            problems.append(
                BadInput(f"two recipes name round {recipe.name!r} ({first[1]} and {path})", path=str(path))
            )
    new: list[tuple[Recipe, Path, str]] = []
    for recipe, path, text in batch.values():
        existing = store.one("SELECT recipe_sha256 FROM rounds WHERE name = ?", [recipe.name])
        if existing is not None:
            if existing[0] != recipe.sha256:
                problems.append(
                    BadInput(
                        f"round {recipe.name!r} is already registered with another recipe "
                        f"(sha256 {existing[0][:12]}, this file {recipe.sha256[:12]}); recipes are never "
                        "replaced: give the new one another name",
                        path=str(path),
                        field="name",
                    )
                )
            continue
        new.append((recipe, path, text))
        for key, parent in _named_parents(recipe):
            if parent in batch:
                continue
            if not store.one("SELECT 1 FROM rounds WHERE name = ?", [parent]):
                problems.append(
                    BadInput(
                        f"parent {parent!r} is not a registered round (add its recipe first)",
                        path=str(path),
                        line=_Lines(text).of("", key),
                        field=key,
                    )
                )
    if problems:
        raise problems[0] if len(problems) == 1 else BadInputs(problems)
    if check_only:
        return [(recipe, False) for recipe, _, _ in parsed]
    by_name = {r.name: (r, path, text) for r, path, text in new}
    with store.transaction():
        for recipe in parents_first([r for r, _, _ in new]):
            _insert_round(store, recipe, *by_name[recipe.name][1:])
    added = set(by_name)
    return [
        (recipe, recipe.name in added and batch[recipe.name][1] == Path(path)) for recipe, path, _ in parsed
    ]


def _named_parents(recipe: Recipe) -> list[tuple[str, str]]:
    """(recipe key, parent round) for every parent the recipe names."""
    if isinstance(recipe, SoupRecipe):
        return [("a", recipe.a), ("b", recipe.b)]
    if isinstance(recipe, DpoRecipe):
        return [("parent", recipe.parent)] + (
            [("adapter_of", recipe.adapter_of)] if recipe.adapter_of else []
        )
    return []


def _insert_round(store: Store, recipe: Recipe, path: Path, text: str) -> None:
    """The recipe's row in `rounds` (inside the caller's transaction), logged."""
    insert_round(
        store,
        recipe.name,
        recipe.kind,
        recipe.parents,
        alpha=recipe.alpha if isinstance(recipe, SoupRecipe) else None,
        job_id=recipe.job_id,
        recipe_json=json.dumps(recipe.to_json(), sort_keys=True),
        recipe_toml=text,
        recipe_sha256=recipe.sha256,
        path=str(path),
    )


def get_round(store: Store, name: str) -> Recipe:
    """The registered round, after checking its row was not changed outside pairstore: the stored recipe
    must be what its registered TOML parses to, and the TOML must have the registered SHA-256 (so what an
    export selects is what its evidence cites)."""
    row = store.one("SELECT recipe, recipe_sha256, recipe_toml FROM rounds WHERE name = ?", [name])
    if row is None:
        raise NotFound(f"no round {name!r} (add its recipe with `pairstore round add FILE`)")
    recipe = recipe_from_json(json.loads(row[0]), sha256=row[1])
    if row[2] is not None:
        try:
            parsed = parse_recipe(row[2], sources=store_sources(store))
        except BadInput:
            parsed = None
        if sha256_text(row[2]) != row[1] or parsed is None or parsed.to_json() != recipe.to_json():
            raise PairstoreError(
                f"round {name!r} was changed in the store outside pairstore (its stored recipe no longer "
                f"matches its registered TOML and SHA-256 {row[1][:12]}); registered rounds never change: "
                "restore the store from a backup"
            )
    return recipe


def list_rounds(store: Store) -> list[dict]:
    return store.rows("""
        SELECT r.name, r.kind, array_to_string(r.parents, ',') AS parents, r.alpha, r.job_id,
               (SELECT count(*) FROM exports e WHERE e.round = r.name) AS exports,
               left(r.recipe_sha256, 12) AS sha256
        FROM rounds r ORDER BY r.added_at, r.name""")


def show_round(store: Store, name: str) -> dict:
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

    def visit(r: Recipe) -> None:
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


def load_shipped_recipes(store: Store, paths: list[Path] | None = None) -> dict[str, list[str]]:
    """Add every shipped recipe (parents first), all or nothing.
    Returns {"added": [...], "unchanged": [...]}."""
    results = add_rounds(store, list(paths or shipped_recipe_paths()))
    new = {r.name for r, added in results if added}
    ordered = parents_first(list({r.name: r for r, _ in results}.values()))
    return {
        "added": [r.name for r in ordered if r.name in new],
        "unchanged": [r.name for r in ordered if r.name not in new],
    }
