"""The needles of the held-out members: built in batches, kept as small arrays, made whole when needed.

    index = needle_index(store, set_name=None)      # every active member, eval item and benchmark item
    index.grams                                      # (nid, ngram): word 3-grams the prefilter reads
    needles = materialize(store, index, nids)        # {nid: Needle} for the needles a row may hold

Every text of a member is one needle (pairstore.holdout.text_match.Needle): its user turns joined (the
prompt needle), each turn of a multi-turn member of EMBED_MIN_WORDS words or more, and each answer of
ANSWER_MIN_WORDS words or more (both sides of a battle, a problem's solution, an eval item's reference).

The index keeps per needle only what the cheap stages read: its member, its place in the member
(slot), the loose hash and length of its text (exact candidates), its word count, and a bounded number
of its word 3-grams (GRAMS_PER_NEEDLE, a subset chosen by the gram's hash, so a row holding the needle
holds every gram kept). No text is held: the few needles a row may hold are rebuilt from the store
(`materialize`), with the member's distinctive sentences (for the reordered matcher) and the check that
an answer, a turn or a sentence is not a stock phrase of the store (`Commonness`: a common one is
skipped and counted, not matched).
"""

# pyarrow.compute's functions are made at import from Arrow's registry, so pyright cannot see them.
# pyright: reportAttributeAccessIssue=false

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pairstore.holdout.scan import GRAM_WORDS, loose_hashes, loose_length
from pairstore.holdout.text_match import (
    ANSWER_MIN_WORDS,
    EMBED_MIN_WORDS,
    REORDER_PART_MIN_WORDS,
    STORE_SAMPLE,
    Commonness,
    Needle,
    tokens,
)
from pairstore.keys import xxh128
from pairstore.ngram_hash import Vocabulary, word_hashes
from pairstore.normalize import TURN_SEP, sentences_of, word_texts

if TYPE_CHECKING:
    from pairstore.store.store import Store

BATCH_MEMBERS = 5_000  # members normalized at once: what the index holds beyond its arrays
# At most about this many of a needle's distinct 3-grams are kept for the prefilter (those whose hash
# falls in a stride chosen by the count): a long answer needs no more to be told from other text, and
# the gate's memory per member stays bounded.
GRAMS_PER_NEEDLE = 40
PROMPT_SLOT = 0
ANSWER_SLOT = 1000  # answer j has slot ANSWER_SLOT + j; turn i of a multi-turn member has slot 1 + i

# A member's user turns: from the item it names (battle, task, problem, eval item), else the text it was
# added as; NULL when neither is stored (its match text is all there is).
_USER_TURNS = (
    "coalesce(list_transform(list_filter({col}, lambda m: m.role = 'user'), lambda m: m.content), [])"
)
_HOLDOUT_TURNS = f"""coalesce(
    CASE WHEN h.item_kind = 'battle' THEN (SELECT {_USER_TURNS.format(col="b.prompt")}
         FROM battles b WHERE b.battle_id = h.item_id) END,
    CASE WHEN h.item_kind = 'task' THEN (SELECT [t.prompt] FROM tasks t WHERE t.task_id = h.item_id) END,
    CASE WHEN h.item_kind = 'problem' THEN (SELECT [p.question] FROM problems p
         WHERE p.problem_id = h.item_id) END,
    CASE WHEN h.item_kind = 'eval_item' THEN (SELECT {_USER_TURNS.format(col="any_value(e.prompt)")}
         FROM eval_items e WHERE e.item_id = h.item_id) END,
    CASE WHEN h.source_text IS NOT NULL THEN [h.source_text] END)"""
# A holdout member's answers, as stored with the item it names: both sides of a battle, a problem's
# solution, an eval item's reference answer (a task's chosen answer is not one: answers of one template
# look alike).
MEMBER_ANSWERS_SQL = """(CASE h.item_kind
    WHEN 'battle' THEN (SELECT list_concat(b.own_answers, b.opponent_answers) FROM battles b
                        WHERE b.battle_id = h.item_id)
    WHEN 'problem' THEN (SELECT [p.solution] FROM problems p WHERE p.problem_id = h.item_id)
    WHEN 'eval_item' THEN (SELECT list(e.gold) FROM eval_items e WHERE e.item_id = h.item_id)
    ELSE []::VARCHAR[] END)"""


def members_sql(set_name: str | None, only: str = "") -> tuple[str, list]:
    """SQL of every member to check (active holdout members, eval items, benchmark items; or one set), as
    (set_name, item_id, kind, task_key, stored match key, raw user turns or NULL, match text, answers);
    `only`: a relation of (set_name, item_id) to keep."""
    keep = f" SEMI JOIN {only} USING (set_name, item_id)" if only else ""
    parts, params = [], []
    if set_name is None or not set_name.startswith(("eval:", "benchmark:")):
        parts.append(f"""SELECT * FROM (
            SELECT h.set_name, h.item_id, 'holdout' AS kind, h.task_key, h.match_key,
                   {_HOLDOUT_TURNS} AS turns, h.match_text, {MEMBER_ANSWERS_SQL} AS answers
            FROM holdout h WHERE h.removed_at IS NULL AND (? IS NULL OR h.set_name = ?)) m{keep}""")
        params += [set_name, set_name]
    if set_name is None or set_name.startswith("eval:"):
        suite = None if set_name is None else set_name[len("eval:") :]
        parts.append(f"""SELECT * FROM (
            SELECT 'eval:' || suite AS set_name, item_id, 'eval' AS kind, task_key, match_key,
                   {_USER_TURNS.format(col="prompt")} AS turns, NULL AS match_text,
                   list_filter([gold], lambda g: g IS NOT NULL) AS answers
            FROM eval_items WHERE (? IS NULL OR suite = ?)) m{keep}""")
        params += [suite, suite]
    if set_name is None or set_name.startswith("benchmark:"):
        bench = None if set_name is None else set_name[len("benchmark:") :]
        parts.append(f"""SELECT * FROM (
            SELECT 'benchmark:' || benchmark AS set_name, item_id, 'benchmark' AS kind, NULL AS task_key,
                   match_key, [text] AS turns, NULL AS match_text, []::VARCHAR[] AS answers
            FROM benchmark_refs WHERE (? IS NULL OR benchmark = ?)) m{keep}""")
        params += [bench, bench]
    # No ORDER BY: the members stream in batches (a sort would hold them all); nothing here depends on
    # their order (hits are sorted, skipped needles listed by set and id).
    return " UNION ALL ".join(parts), params


@dataclass
class Member:
    """One member's texts as stored (raw user turns where the store has them)."""

    set_name: str
    item_id: str
    kind: str
    task_key: str | None
    turns: list[str] | None
    match_text: str | None
    answers: list[str]


def _members_of_table(table: pa.Table) -> list[Member]:
    return [m for batch in table.to_batches() for m in _members_of(batch)]


def _members_of(batch: pa.RecordBatch) -> list[Member]:
    cols = {n: batch.column(n).to_pylist() for n in batch.schema.names}
    return [
        Member(
            s, i, k, t, list(u) if u is not None else None, m, [a for a in (ans or []) if isinstance(a, str)]
        )
        for s, i, k, t, u, m, ans in zip(
            cols["set_name"],
            cols["item_id"],
            cols["kind"],
            cols["task_key"],
            cols["turns"],
            cols["match_text"],
            cols["answers"],
        )
    ]


def needles_of_members(members: Sequence[Member]) -> list[list[tuple[int, Needle]]]:
    """Each member's needles as (slot, Needle), every text of the batch normalized in one call."""
    turns = [m.turns if m.turns is not None else (m.match_text or "").split(TURN_SEP) for m in members]
    flat = [t or "" for ts in turns for t in ts] + [a for m in members for a in m.answers]
    words = word_texts(flat)
    out, at = [], 0
    answers_at = sum(len(ts) for ts in turns)
    for m, ts in zip(members, turns):
        turn_words = words[at : at + len(ts)]
        at += len(ts)
        answer_words = words[answers_at : answers_at + len(m.answers)]
        answers_at += len(m.answers)
        out.append(_needles(m, turn_words, answer_words))
    return out


def _needles(m: Member, turns: list[str], answers: list[str]) -> list[tuple[int, Needle]]:
    """The needles of one member from its normalized user turns (always one: an empty text still matches
    by origin id and task key) and its normalized answers of ANSWER_MIN_WORDS words or more."""
    joined = " ".join(" ".join(turns).split())
    out = [(PROMPT_SLOT, Needle(m.set_name, m.item_id, m.kind, joined, m.task_key))]
    if len(turns) > 1:
        for i, turn in enumerate(turns):
            if len(turn.split()) >= EMBED_MIN_WORDS:
                out.append((1 + i, Needle(m.set_name, m.item_id, m.kind, turn, m.task_key)))
    seen = {joined}
    for j, text in enumerate(answers):
        if len(text.split()) >= ANSWER_MIN_WORDS and text not in seen:
            seen.add(text)
            out.append((ANSWER_SLOT + j, Needle(m.set_name, m.item_id, m.kind, text, None, answer=True)))
    return out


@dataclass
class NeedleIndex:
    """What the cheap stages read of every needle, as arrays (no text): see the module docstring."""

    set_name: pa.Array = field(default_factory=lambda: pa.array([], pa.string()))  # per member
    item_id: pa.Array = field(default_factory=lambda: pa.array([], pa.string()))
    kind: pa.Array = field(default_factory=lambda: pa.array([], pa.string()))
    task_key: pa.Array = field(default_factory=lambda: pa.array([], pa.string()))
    member: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))  # per needle
    slot: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int16))
    words: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    loose_hash: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    loose_len: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    # (nid, ngram) of the needles the text stages look for inside longer text, and their words
    grams: pa.Table | None = None
    vocabulary: Vocabulary | None = None
    turn_keys: dict[str, list[int]] = field(default_factory=dict)  # match key of a lone turn -> nids
    counts: dict[str, int] = field(default_factory=lambda: {"holdout": 0, "eval": 0, "benchmark": 0})

    def __len__(self) -> int:
        return len(self.member)

    def members_table(self) -> pa.Table:
        return pa.table(
            {"set_name": self.set_name, "item_id": self.item_id, "kind": self.kind, "task_key": self.task_key}
        )


def _kept_grams(docs: np.ndarray, hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (doc, gram) pairs, at most about GRAMS_PER_NEEDLE per doc: a doc with more keeps the
    grams whose hash falls in one stride of its count (the same grams wherever they are read)."""
    if not len(docs):
        return docs, hashes
    order = np.lexsort((hashes, docs))
    docs, hashes = docs[order], hashes[order]
    fresh = np.ones(len(docs), dtype=bool)
    fresh[1:] = (docs[1:] != docs[:-1]) | (hashes[1:] != hashes[:-1])
    docs, hashes = docs[fresh], hashes[fresh]
    per_doc = np.bincount(docs)
    stride = np.maximum(1, per_doc // GRAMS_PER_NEEDLE).astype(np.uint64)
    keep = ((hashes >> np.uint64(24)) % stride[docs]) == 0
    return docs[keep], hashes[keep]


def needle_index(store: Store, set_name: str | None = None) -> NeedleIndex:
    """The index of every needle of every member to check (or one set's), built BATCH_MEMBERS at a time."""
    sql, params = members_sql(set_name)
    reader = store.con.sql(sql, params=params).to_arrow_reader(BATCH_MEMBERS)
    index = NeedleIndex()
    cols: dict[str, list] = {"set_name": [], "item_id": [], "kind": [], "task_key": []}
    member_of: list[int] = []
    slots: list[int] = []
    words: list[int] = []
    hashes: list[np.ndarray] = []
    lengths: list[np.ndarray] = []
    gram_nids, gram_hashes, vocab_words = [], [], []
    base = 0
    for batch in reader:
        members = _members_of(batch)
        for name in cols:
            cols[name].append(batch.column(name))
        for m in members:
            index.counts[m.kind] += 1
        needles = needles_of_members(members)
        texts, gram_of = [], []
        for k, found in enumerate(needles):
            for slot, n in found:
                nid = len(member_of)
                member_of.append(base + k)
                slots.append(slot)
                texts.append(n.text)
                count = n.words
                words.append(count)
                if slot != PROMPT_SLOT and not n.answer and n.compact:
                    index.turn_keys.setdefault(xxh128(n.compact), []).append(nid)
                if n.compact and (n.embeddable or n.fuzzy or n.sentence):
                    gram_of.append((nid, n.text))
        base += len(members)
        arr = pa.array(texts, pa.large_string())
        hashes.append(loose_hashes(arr))
        lengths.append(np.fromiter((loose_length(t) for t in texts), dtype=np.int32, count=len(texts)))
        if gram_of:
            vocab = Vocabulary.of_texts([t for _, t in gram_of])
            docs, grams = vocab.ngrams([t for _, t in gram_of], GRAM_WORDS)
            docs, grams = _kept_grams(docs, grams)
            nids = np.array([nid for nid, _ in gram_of], dtype=np.int32)
            gram_nids.append(nids[docs])
            gram_hashes.append(grams)
            vocab_words.append(vocab.words)
    index.set_name, index.item_id, index.kind, index.task_key = (
        pa.concat_arrays(cols[n]).cast(pa.string()) if cols[n] else pa.array([], pa.string())
        for n in ("set_name", "item_id", "kind", "task_key")
    )
    index.member = np.array(member_of, dtype=np.int32)
    index.slot = np.array(slots, dtype=np.int16)
    index.words = np.array(words, dtype=np.int32)
    index.loose_hash = np.concatenate(hashes) if hashes else np.zeros(0, np.uint64)
    index.loose_len = np.concatenate(lengths) if lengths else np.zeros(0, np.int32)
    if gram_nids:
        index.grams = pa.table(
            {
                "nid": pa.array(np.concatenate(gram_nids), pa.int32()),
                "ngram": pa.array(np.concatenate(gram_hashes), pa.uint64()),
            }
        )
        unique = pc.unique(pa.chunked_array(vocab_words).combine_chunks())
        index.vocabulary = Vocabulary(unique, word_hashes(unique))
    return index


def _commonness(store: Store) -> Commonness:
    """Commonness of a seeded sample of the store's items that are not held out (their prompts and answers),
    kept on the store object until its tables change size."""
    stamp = tuple(
        store.con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]
        for t in ("pairs", "battles", "problems", "generations", "holdout")
    )
    cached = getattr(store, "_gate_commonness", None)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    user = _USER_TURNS.format(col="prompt")
    user = f"array_to_string({user}, chr(10))"
    held = "SELECT item_id FROM holdout WHERE removed_at IS NULL"
    items: list[tuple[str, list[str]]] = []
    for sql in (
        f"SELECT match_key, [{user}, chosen, rejected] FROM pairs WHERE pair_id NOT IN "
        f"(SELECT pair_id FROM pair_origins WHERE origin_id IN ({held}))",
        f"SELECT match_key, list_concat([{user}], own_answers, opponent_answers) FROM battles "
        f"WHERE battle_id NOT IN ({held})",
        f"SELECT match_key, [question, solution] FROM problems WHERE problem_id NOT IN ({held})",
        f"SELECT md5({user}), [{user}, output] FROM generations",
    ):
        left = STORE_SAMPLE - len(items)
        if left <= 0:
            break
        items += [
            (k, [t for t in texts if t])
            for k, texts in store.con.execute(
                f"SELECT * FROM ({sql}) t(k, texts) USING SAMPLE reservoir({left} ROWS) REPEATABLE (21)"
            ).fetchall()
        ]
    commonness = Commonness.of_items(items)
    store._gate_commonness = (stamp, commonness)  # type: ignore[attr-defined]
    return commonness


def distinctive_parts(
    members_turns: Sequence[Sequence[str]], commonness: Commonness
) -> list[tuple[str, ...]]:
    """Each member's distinctive sentences (its raw user turns given): the word text of every sentence of
    REORDER_PART_MIN_WORDS words or more that is not a stock phrase of the store, each once, in order."""
    split = sentences_of(["\n".join(ts) for ts in members_turns], polite=False)
    return [
        tuple(
            dict.fromkeys(
                p for p in ps if len(p.split()) >= REORDER_PART_MIN_WORDS and not commonness.common(p)
            )
        )
        for ps in split
    ]


@dataclass
class Materialized:
    """The needles asked for, made whole, and the ones skipped as stock phrases of the store."""

    needles: dict[int, Needle] = field(default_factory=dict)
    common: dict[int, Needle] = field(default_factory=dict)


def materialize(store: Store, index: NeedleIndex, nids: Sequence[int]) -> Materialized:
    """The needles `nids`, rebuilt from the store: the prompt needle with the member's distinctive sentences
    (`parts`); an answer or a lone turn that is a stock phrase of the store in `common` instead."""
    out = Materialized()
    wanted = sorted({int(n) for n in nids})
    if not wanted:
        return out
    members = sorted({int(index.member[n]) for n in wanted})
    keys = pa.table(
        {
            "set_name": index.set_name.take(pa.array(members)),
            "item_id": index.item_id.take(pa.array(members)),
        }
    )
    sql, params = members_sql(None, only="_needle_members")
    with store.registered("_needle_members", keys):
        rows = _members_of_table(store.con.sql(sql, params=params).to_arrow_table())
    names = zip(keys["set_name"].to_pylist(), keys["item_id"].to_pylist())
    position = {(s, i): members[k] for k, (s, i) in enumerate(names)}
    by_member = {
        position[(m.set_name, m.item_id)]: (m, found) for m, found in zip(rows, needles_of_members(rows))
    }
    commonness = _commonness(store)
    with_turns = [m for m, _ in by_member.values() if m.turns]
    parts_of = dict(
        zip((id(m) for m in with_turns), distinctive_parts([m.turns or [] for m in with_turns], commonness))
    )
    answer_sentences: dict[int, tuple[Needle, str]] = {}
    asked = {(int(index.member[n]), int(index.slot[n])): n for n in wanted}
    for member, (m, found) in by_member.items():
        for slot, needle in found:
            nid = asked.get((member, slot))
            if nid is None:
                continue
            if slot == PROMPT_SLOT:
                parts = parts_of.get(id(m), ())
                out.needles[nid] = Needle(
                    needle.set_name, needle.item_id, needle.kind, needle.text, needle.task_key, False, parts
                )
                continue
            turns = m.turns if m.turns is not None else (m.match_text or "").split(TURN_SEP)
            raw = m.answers[slot - ANSWER_SLOT] if slot >= ANSWER_SLOT else turns[slot - 1]
            answer_sentences[nid] = (needle, raw)
    if answer_sentences:
        split = sentences_of([raw for _, raw in answer_sentences.values()], polite=False)
        for (nid, (needle, _)), sents in zip(answer_sentences.items(), split):
            if commonness.common_needle(needle.text, sents):
                out.common[nid] = needle
            else:
                out.needles[nid] = needle
    return out


def needle_words(needles: Iterable[Needle]) -> set[str]:
    """The tokens of the needles a near copy is scored for (what rarity is looked up for)."""
    return {t for n in needles if n.fuzzy for t in tokens(n.text)}
