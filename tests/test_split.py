"""The tuning and held-out halves of the development corpus and the generated stacks (issue 47 item 3):
benchmarks/peers/split.json is what the declared rule (bench_peers.SPLIT_RULE) gives for its names and contact
counts, whatever their order; each size class is split evenly (the halves differ by at most one problem)
and every class with two problems or more has both halves; the generated stacks are those bench_peers
generates, with the contacts they have; the corpus files present are all named; and bench_peers reports
issue 47's figures on each half from a run's rows."""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter

import pytest

from benchmarks.peers import bench_peers
from problems import stacks
from workbench.shared_data import shared_data_dir

COMMITTED = json.loads(bench_peers.SPLIT_FILE.read_text())
CONTACTS = {e["name"]: e["contacts"] for e in COMMITTED["problems"]}


def test_committed_split_is_the_rule_for_its_names_in_any_order():
    halves = {e["name"]: e["half"] for e in COMMITTED["problems"]}
    assert bench_peers.split_halves(CONTACTS) == halves
    names = list(CONTACTS)
    random.Random(1).shuffle(names)
    assert bench_peers.split_halves({n: CONTACTS[n] for n in names}) == halves
    assert COMMITTED["rule"] == bench_peers.SPLIT_RULE
    assert all(e["size_class"] == bench_peers.size_class(e["contacts"]) for e in COMMITTED["problems"])


def test_rule_by_hand_on_four_names():
    """Four names of one class in SHA-256 order alternate tuning, held-out, tuning, held-out; a second
    class starts with held-out."""
    names = ["a.dat", "b.dat", "c.dat", "d.dat"]
    order = sorted(names, key=lambda n: hashlib.sha256(n.encode()).hexdigest())
    got = bench_peers.split_halves({**{n: 3 for n in names}, "e.dat": 50})
    assert [got[n] for n in order] == ["tuning", "held-out", "tuning", "held-out"]
    assert got["e.dat"] == "held-out"


def test_every_size_class_is_split_evenly():
    count = Counter((e["size_class"], e["half"]) for e in COMMITTED["problems"])
    for _, cls in bench_peers.SIZE_CLASSES:
        t, h = count[(cls, "tuning")], count[(cls, "held-out")]
        assert abs(t - h) <= 1, (cls, t, h)
        assert t + h < 2 or (t and h), cls
    assert len(COMMITTED["problems"]) >= 40


def test_generated_stacks_are_the_benchmark_s_with_their_contacts():
    assert COMMITTED["generated"] == [[n, p] for n, p in bench_peers.GENERATED]
    generated = {e["name"]: e["contacts"] for e in COMMITTED["problems"] if e["name"].startswith("generated/")}
    made = {f"generated/{p.name}.hdf5": p.n_contacts
            for p in (getattr(stacks, name)(**params) for name, params in bench_peers.GENERATED)}
    assert generated == made
    scenes = {name for name, _ in bench_peers.GENERATED}
    assert {"box_tower", "brick_wall", "box_pyramid", "corbel_arch", "thin_box_pile"} <= scenes
    halves = {e["half"] for e in COMMITTED["problems"] if e["name"].startswith("generated/")}
    assert halves == {"tuning", "held-out"}


@pytest.mark.skipif(shared_data_dir() is None, reason="the shared corpus (../shared/data) is not here")
def test_every_corpus_file_with_contacts_is_in_the_split():
    rows, unread = bench_peers.corpus("*")
    assert not unread
    assert {name: p.n_contacts for name, _, p in rows} == {n: c for n, c in CONTACTS.items()
                                                           if not n.startswith("generated/")}


def _row(problem, contacts, ours, siconos):
    """A row of the exact part as measure_exact writes it: each side's runs with their timings [s]."""
    runs = {}
    if ours:
        runs["ours:dual / apgd"] = {"solver": [ours] * 3, "call": [ours] * 3}
    if siconos:
        runs["siconos:NSN"] = {"solver": [siconos] * 3, "call": [siconos] * 3}
    return {"problem": problem, "contacts": contacts, "d": 3, "kind": "local", "degenerate": False, "runs": runs}


def test_report_on_each_half():
    split = {"a.dat": "tuning", "b.dat": "held-out", "generated/t.hdf5": "held-out", "c.dat": "held-out"}
    data = {"settings": {"cap": 5.0}, "exact": [
        _row("a.dat", 4, 2.0, 1.0), _row("b.dat", 4, 1.0, 2.0), _row("c.dat", 400, 3.0, 1.0),
        _row("generated/t.hdf5", 48, 1.0, 1.0), _row("new.dat", 3, 1.0, 1.0)]}
    hf = bench_peers.half_figures(data, split)
    assert hf["tuning"]["n"] == 1 and hf["tuning"]["geomean"] == pytest.approx(2.0)
    assert hf["held-out"]["n"] == 3 and hf["held-out"]["geomean"] == pytest.approx((0.5 * 3.0 * 1.0) ** (1 / 3))
    assert hf["held-out"]["small"] == pytest.approx(0.5) and hf["held-out"]["small_n"] == 1
    assert hf["held-out"]["worst"]["problem"] == "c.dat" and hf["held-out"]["stacks"]["problem"] == "generated/t.hdf5"
    assert hf["unsplit"] == ["new.dat"]
    lines = bench_peers.half_table(data, split)
    assert lines[2].startswith("| tuning | 1 | 2.00 (missed by 2.50x) | 2.00 (missed by 1.33x) over 1 |")
    assert lines[3].startswith("| held-out | 3 | 1.14 (missed by 1.43x) | 0.50 (met) over 1 | c.dat 3.00 (missed by 1.50x)")
    assert lines[-1] == "In no half (not in split.json): new.dat."
