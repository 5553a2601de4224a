"""Merge methods: the registry that finds them and the one step that checks, writes and publishes.

    from train.merges.registry import merge, methods
    merge("ties", {"base": "runs/so7a", "models": ["runs/m11a", "runs/m12a"], "density": 0.5}, "runs/t1")
    merge("linear", LinearOptions(a="runs/so7a", b="runs/m11a", alpha=0.5), "runs/s1", store=store)

    pairstore train soup A B --alpha 0.5 --out OUT      # the command of method linear
    pairstore train ties --base B --model M1 --model M2 --density 0.5 --out OUT

A method is declared once, in its own module of this package: a frozen dataclass of its options
(pairstore.options.option: each field's default, help and command-line form) and a function that
checks its inputs and returns the Merge it will write:

    @dataclass(frozen=True, kw_only=True)
    class TiesOptions:
        base: str = option(help="The bundle the task vectors start from.", path=True)
        ...

    @register("ties", version="1", kind="soup", options=TiesOptions)
    def ties(options: TiesOptions) -> Merge:
        ... every check (BadInput before anything is written) ...
        return Merge(inputs=[...], serving_from=base, out_bytes=..., write=write_into_stage)

Everything else is shared (`merge`): the options checked against the declaration, the output folder
(never an input; train.publish.prepare_output), the free space, the staged folder, the serving files,
the spec file (merge_spec.json, the method, its version and options, as mergekit saves its config), one
evidence writer (training_evidence.json), and the publish with its registration (train.publish). The
registry imports every module of this package, and `pairstore train COMMAND` is built from the
declaration (pairstore.cli.train).
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import pkgutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pairstore.errors import BadInput, NotFound, PairstoreError
from pairstore.files import atomic_write_json, check_free_space, staged_folder, writes_into
from pairstore.keys import sha256_file
from pairstore.options import make_options, option_specs, options_json
from pairstore.progress import Progress, as_progress
from pairstore.rounds.checkpoints import (
    KINDS,
    checkpoint_at,
    checkpoint_name,
    register_checkpoint,
    register_folder,
)
from pairstore.store.store import Store
from pairstore.version import __version__ as pairstore_version
from train.bundle import (
    EVIDENCE_FILE,
    INDEX_NAME,
    TensorInfo,
    bundle_tensors,
    copy_serving_files,
    list_shards,
    read_index,
    read_shard_header,
    shard_sha256s,
    write_index,
)
from train.publish import prepare_output, publish_bundle

SPEC_FILE = "merge_spec.json"

__all__ = [
    "SPEC_FILE",
    "Input",
    "Merge",
    "MergeResult",
    "MethodSpec",
    "Written",
    "get_method",
    "merge",
    "method_names",
    "methods",
    "read_spec",
    "register",
    "write_in_layout",
]


# ---------------------------------------------------------------------------- what a method returns


@dataclass(frozen=True)
class Input:
    """One folder a merge reads."""

    role: str  # how the evidence names it: "a", "base", "adapter", "model 2"
    path: Path
    name: str | None = None  # the checkpoint name the caller gave (--a-name), else the registered one
    recorded: str | None = None  # a name the input's own evidence records, when it is not registered
    parent: bool = True  # a parent of the output's checkpoint
    bundle: bool = True  # a bundle (its shards hashed here) or another folder (the method hashes it)
    embed_evidence: bool = True  # copy its training_evidence.json into the output's evidence


@dataclass
class Written:
    """What a method's write left in the staged folder, for the evidence."""

    summary: str  # one line for the command ("merged 14 LoRA modules ...")
    fields: dict[str, Any] = field(default_factory=dict)  # the method's own evidence fields
    hashes: dict[str, dict[str, str]] = field(default_factory=dict)  # role -> {file: SHA-256} read on the way
    output_hashes: dict[str, str] | None = None  # the output shards' SHA-256 when hashed while writing


@dataclass
class Merge:
    """A checked merge: what it reads, what it writes and how. Returned by a method before any byte is
    written; `write(stage, progress, hash_output)` writes the weights (and any index) into `stage`."""

    inputs: list[Input]
    serving_from: Path  # whose serving files (tokenizer, template, configs) the output carries
    out_bytes: int  # the weights' bytes, for the free-space check
    write: Callable[[Path, Progress, bool], Written]
    fields: dict[str, Any] = field(default_factory=dict)  # evidence fields known before writing
    default_name: str | None = None  # the checkpoint name when none is given (else the folder's)
    round: str | None = None  # the round the output belongs to (checkpoints.round)
    extra_parents: list[str] = field(default_factory=list)  # parents that are not input folders
    alpha: float | None = None  # checkpoints.alpha


@dataclass
class MergeResult:
    out_dir: Path
    name: str  # its checkpoint name (registered when a store was given)
    registered: bool
    method: str
    parents: list[str]
    summary: str
    evidence: dict[str, Any]


# ---------------------------------------------------------------------------- the registry


# What a method's example may name, and the folders the help shows for each (MethodSpec.example).
EXAMPLE_FOLDERS = {"bundle": "runs/so7a", "other": "runs/m11a", "adapter": "runs/m11a-adapter"}


@dataclass(frozen=True)
class MethodSpec:
    name: str
    version: str
    kind: str  # the checkpoint kind of its output: merge | soup
    command: str  # `pairstore train COMMAND`
    default_name: str  # how the output's checkpoint is named when --name is not given (for the help)
    fn: Callable[[Any], Merge]
    summary: str  # the first line of the function's docstring
    help: str
    options: type
    # The method's arguments in one example, without --out: `{bundle}` and `{other}` stand for bundles of
    # one model family, `{adapter}` for a LoRA adapter of `{bundle}`. The command's help shows it
    # (example_line), and the fault tests run it on their own bundles (tests/command_table.py).
    example: str

    def example_line(self) -> str:
        """`pairstore train COMMAND ...` as the help shows it, with folders a round would have."""
        args = self.example.format(**EXAMPLE_FOLDERS)
        return f"pairstore train {self.command} {args} --out runs/out"

    def make_options(self, options: Any) -> Any:
        """The options object from an object of the declaration or a dict of values, checked."""
        if isinstance(options, self.options):
            options = options_json(options)
        if not isinstance(options, dict):
            raise BadInput(f"merge method {self.name}: options are a {self.options.__name__} or a dict")
        return make_options(self.options, options, what=f"merge method {self.name}")

    def spec_json(self, options: Any) -> dict[str, Any]:
        """What merge_spec.json holds: enough to run the same merge again (read_spec)."""
        return {"method": self.name, "version": self.version, "options": options_json(options)}


_REGISTRY: dict[str, MethodSpec] = {}
_loaded = False
F = TypeVar("F", bound=Callable[..., Merge])


def register(
    name: str,
    *,
    version: str,
    kind: str,
    options: type,
    example: str,
    command: str | None = None,
    default_name: str = "the output folder's name",
) -> Callable[[F], F]:
    """Decorator: register `fn(options) -> Merge` as merge method `name`, whose output is a checkpoint of
    `kind`, run by `pairstore train COMMAND` (default: the name). `example`: its arguments in one example
    (MethodSpec.example). `default_name` says, for the help, how the output is named without --name (what
    the Merge's default_name gives, else the folder's name)."""
    if kind not in KINDS:
        raise PairstoreError(f"merge method {name!r}: kind is one of {', '.join(KINDS)}, not {kind!r}")
    if not dataclasses.is_dataclass(options):
        raise PairstoreError(f"merge method {name!r}: options must be a dataclass")
    option_specs(options)  # every field declared with option(), of a type the command line can take
    try:
        example.format(**EXAMPLE_FOLDERS)
    except (KeyError, IndexError, ValueError) as e:
        raise PairstoreError(
            f"merge method {name!r}: example names {{{e.args[0] if isinstance(e, KeyError) else '?'}}}; it "
            f"may name only {', '.join('{' + k + '}' for k in EXAMPLE_FOLDERS)}"
        ) from None

    def wrap(fn: F) -> F:
        doc = (fn.__doc__ or "").strip()
        summary = doc.splitlines()[0] if doc else ""
        spec = MethodSpec(
            name, version, kind, command or name, default_name, fn, summary, doc, options, example
        )
        known = _REGISTRY.get(name)
        if known is not None and known.fn is not fn:
            raise PairstoreError(f"merge method {name!r} registered twice")
        if any(s.command == spec.command and s.name != name for s in _REGISTRY.values()):
            raise PairstoreError(f"merge method {name!r}: command {spec.command!r} is another method's")
        _REGISTRY[name] = spec
        return fn

    return wrap


def _load_method_modules() -> None:
    """Import every module of this package once: a method registers itself when its module is imported."""
    global _loaded
    if _loaded:
        return
    package = importlib.import_module(__package__ or "train.merges")
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if not info.name.startswith("_") and info.name != "registry":
            importlib.import_module(f"{package.__name__}.{info.name}")
    _loaded = True


def methods() -> dict[str, MethodSpec]:
    """name -> MethodSpec of every registered merge method, sorted by name."""
    _load_method_modules()
    return dict(sorted(_REGISTRY.items()))


def method_names() -> list[str]:
    return list(methods())


def get_method(name: str) -> MethodSpec:
    specs = methods()
    if name not in specs:
        by_command = {s.command: s for s in specs.values()}
        if name in by_command:
            return by_command[name]
        raise NotFound(f"no merge method {name!r} (registered: {', '.join(specs)})")
    return specs[name]


def read_spec(path: str | Path) -> tuple[MethodSpec, Any]:
    """The method and checked options of a saved merge_spec.json (a file or the bundle folder holding
    one), to run the same merge again."""
    path = Path(path)
    if path.is_dir():
        path = path / SPEC_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BadInput("no such file", path=str(path)) from None
    except (UnicodeDecodeError, ValueError) as e:
        raise BadInput(f"not a JSON file ({e})", path=str(path)) from None
    if not isinstance(data, dict) or not isinstance(data.get("method"), str):
        raise BadInput("expected an object with a method name", path=str(path), field="method")
    spec = get_method(data["method"])
    if data.get("version") != spec.version:
        raise BadInput(
            f"the spec is for version {data.get('version')!r} of merge method {spec.name}; this is version "
            f"{spec.version}",
            path=str(path),
            field="version",
        )
    return spec, spec.make_options(data.get("options") or {})


# ---------------------------------------------------------------------------- writing in a bundle's layout


def write_in_layout(
    source: Path,
    stage: Path,
    tensor_bytes: Callable[[TensorInfo, Path], bytes],
    progress: Progress,
    *,
    hash_output: bool,
    stage_name: str,
) -> dict[str, str] | None:
    """Write the output's weights in `source`'s layout (the same shard files, headers and tensor order, and
    its index): each tensor's bytes are `tensor_bytes(info, source shard)`, written in file order. What a
    method computing tensor by tensor calls from its write; returns the output shards' SHA-256 when
    `hash_output`."""
    headers = [read_shard_header(p) for p in list_shards(source)]
    hashes = {}
    with progress.stage(stage_name, total=sum(len(h.tensors) for h in headers), unit="tensors") as done:
        for header in headers:
            digest = hashlib.sha256(header.raw)
            with open(stage / header.path.name, "wb") as out:
                out.write(header.raw)
                for info in header.tensors:
                    data = tensor_bytes(info, header.path)
                    if len(data) != info.nbytes:
                        raise PairstoreError(f"tensor {info.name}: {len(data)} bytes for {info.nbytes}")
                    out.write(data)
                    if hash_output:
                        digest.update(data)
                    done.advance()
            hashes[header.path.name] = digest.hexdigest()
    if (source / INDEX_NAME).exists():
        write_index(stage, read_index(source), sum(t.nbytes for h in headers for t in h.tensors))
    return hashes if hash_output else None


# ---------------------------------------------------------------------------- the shared step


def merge(
    method: str | MethodSpec,
    options: Any,
    out_dir: str | Path,
    *,
    store: Store | None = None,
    name: str | None = None,
    hash_output: bool = False,
    progress: Progress | None = None,
) -> MergeResult:
    """Run merge method `method` with `options` (its options object or a dict) into the new bundle
    `out_dir`; with a `store`, register it as checkpoint `name` (default: the method's, else the folder's).

    Every input is checked by the method and the output folder and free space here before the first byte
    is written; the bundle is written whole into a staged folder beside `out_dir` and published by one
    rename, inside the transaction that registers it when given a store (train.publish): a crash leaves
    the old state or the new one. The output shards' SHA-256 are recorded when the bundle is registered
    (`audit mixtures` re-hashes them) or `hash_output` asks. `progress` (pairstore.progress) follows the
    method's stages."""
    started = time.perf_counter()
    spec = method if isinstance(method, MethodSpec) else get_method(method)
    options = spec.make_options(options)
    out = Path(out_dir)
    plan = spec.fn(options)
    for inp in plan.inputs:
        if out.resolve() == inp.path.resolve():
            raise BadInput(
                f"the output folder must differ from every input (it is {inp.role})", path=str(out)
            )
    replace = prepare_output(store, out)
    check_free_space(out.parent, plan.out_bytes + (1 << 20), what=f"the {spec.name} merge's bundle")
    names = _input_names(store, plan.inputs)
    parents = [names[i.role] for i in plan.inputs if i.parent] + plan.extra_parents
    name = name or plan.default_name or out.resolve().name
    with writes_into(out.parent):
        with staged_folder(out) as stage:
            hash_output = hash_output or store is not None
            written = plan.write(stage, as_progress(progress), hash_output)
            serving = copy_serving_files(plan.serving_from, stage)
            atomic_write_json(stage / SPEC_FILE, spec.spec_json(options))
            evidence = _evidence(spec, options, plan, written, names, stage, out, serving, hash_output)
            evidence["name"] = name
            evidence["seconds"] = round(time.perf_counter() - started, 3)
            atomic_write_json(stage / EVIDENCE_FILE, evidence)

            def register_output() -> None:
                assert store is not None
                for inp in plan.inputs:
                    if inp.parent:
                        register_folder(store, inp.path, names[inp.role])
                register_checkpoint(
                    store,
                    name,
                    spec.kind,
                    parents,
                    alpha=plan.alpha,
                    round=plan.round,
                    path=str(out.resolve()),
                    evidence=evidence,
                )

            publish_bundle(store, stage, out, replace, None if store is None else register_output)
    return MergeResult(out, name, store is not None, spec.name, parents, written.summary, evidence)


def _input_names(store: Store | None, inputs: list[Input]) -> dict[str, str]:
    """One name per checkpoint: the name given, else the one the folder is registered under, else the one
    the input's own evidence records, else the folder's. Reads only."""
    names = {}
    for inp in inputs:
        registered = store is not None and checkpoint_at(store, inp.path) is not None
        names[inp.role] = checkpoint_name(store, inp.path, inp.name or (None if registered else inp.recorded))
    return names


def _read_evidence(folder: Path) -> dict | None:
    p = folder / EVIDENCE_FILE
    if not p.is_file():
        return None
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return {"unreadable": str(p), "sha256": sha256_file(p)}


def _evidence(
    spec: MethodSpec,
    options: Any,
    plan: Merge,
    written: Written,
    names: dict[str, str],
    stage: Path,
    out: Path,
    serving: list[str],
    hash_output: bool,
) -> dict[str, Any]:
    """The one evidence writer of every merge: the method and its options, every input with its files'
    SHA-256 and its own evidence, the output's files, and the method's own fields."""
    inputs = {}
    for inp in plan.inputs:
        hashes = written.hashes.get(inp.role)
        if hashes is None and inp.bundle:
            hashes = shard_sha256s(inp.path)
        inputs[inp.role] = {
            "path": str(inp.path.resolve()),
            "name": names[inp.role],
            "sha256": hashes,
            "training_evidence": _read_evidence(inp.path) if inp.embed_evidence else None,
        }
    tensors = bundle_tensors(stage)
    dtypes: dict[str, int] = {}
    for _, t in tensors:
        dtypes[t.dtype] = dtypes.get(t.dtype, 0) + 1
    output_hashes = written.output_hashes
    if output_hashes is None and hash_output:
        output_hashes = shard_sha256s(stage)
    return {
        "kind": spec.kind,
        "method": spec.name,
        "method_version": spec.version,
        "options": options_json(options),
        "inputs": inputs,
        "output": {
            "path": str(out.resolve()),
            "shards": [p.name for p in list_shards(stage)],
            "shards_sha256": output_hashes,
            "total_size": sum(t.nbytes for _, t in tensors),
            "tensors": len(tensors),
            "dtypes": dtypes,
            "serving_files": serving,
        },
        **plan.fields,
        **written.fields,
        "pairstore": pairstore_version,
    }
