"""Conclusions at equal accuracy (workbench/analysis/accuracy.py): the time and iterations to stated levels
of the distance to the reference objective and of the judged error, "not reached" never fastest, and a
faster method named only when the paired interval over the problems excludes a tie."""

import math

import numpy as np
import pandas as pd

from workbench.analysis.accuracy import accuracy_table, equal_accuracy, first_reached, to_accuracy


def test_first_reached_skips_unjudged_rows_and_says_never_and_not_measured_apart():
    x = [1, 2, 3, 4]
    assert first_reached(x, [1e-1, np.nan, 1e-5, 1e-7], 1e-6) == 4
    assert first_reached(x, [1e-1, np.nan, 1e-5, 1e-7], 1e-4) == 3
    assert first_reached(x, [1e-1, 1e-2, 1e-3, 1e-4], 1e-6) == math.inf        # not reached
    assert math.isnan(first_reached(x, [np.nan] * 4, 1e-6))                   # not measured


def _history(k, f_star, rate, seconds_per_it, judged=True):
    """Objective f* (1 + 10^-(rate k)): the relative distance 10^-(rate k); judged error the same, every
    other row judged."""
    it = np.arange(1, k + 1)
    d = 10.0 ** (-rate * it)
    return pd.DataFrame({"iteration": it, "seconds": it * seconds_per_it, "objective": f_star * (1 + d),
                         "judged_error": np.where(it % 2 == 0, d, np.nan) if judged else np.nan})


def test_one_run_reaches_each_level_at_the_first_iterate_below_it():
    rows = {(r["measure"], r["level"]): r for r in to_accuracy(_history(20, -2.0, 0.55, 0.01), -2.0)}
    assert rows["objective", 1e-2]["iterations"] == 4 and rows["objective", 1e-2]["seconds"] == 0.04
    assert rows["objective", 1e-6]["iterations"] == 11
    assert rows["judged", 1e-6]["iterations"] == 12 and rows["judged", 1e-4]["iterations"] == 8
    short = {(r["measure"], r["level"]): r for r in to_accuracy(_history(7, -2.0, 0.55, 0.01), -2.0)}
    assert short["objective", 1e-6]["iterations"] == math.inf
    none = {(r["measure"], r["level"]): r for r in to_accuracy(_history(20, -2.0, 0.55, 0.01), None)}
    assert math.isnan(none["objective", 1e-6]["seconds"]) and none["judged", 1e-6]["iterations"] == 12


def _study(n_problems, rng):
    """A converges twice as fast per iteration as B at the same cost per iteration, on problems whose
    costs differ 30x; C stops at 1e-3 (its own threshold: the fastest to stop, never to 1e-6)."""
    runs, hists, refs = [], [], {}
    for p in range(n_problems):
        cost = 1e-3 * 30 ** rng.uniform()
        for m, (k, rate) in {"A": (40, 0.55), "B": (40, 0.27), "C": (6, 0.55)}.items():
            for rep in range(3):
                key = f"p{p}-{m}-{rep}"
                runs.append({"key": key, "problem": f"p{p}", "method": m, "repetition": rep})
                h = _history(k, -1.0, rate, cost * rng.uniform(0.95, 1.05))
                hists.append(h.assign(key=key))
                refs[key] = -1.0
    return pd.DataFrame(runs), pd.concat(hists, ignore_index=True), refs


def test_the_faster_method_at_equal_accuracy_is_named_only_over_enough_problems():
    rng = np.random.default_rng(7)
    labels = {"A": "method A", "B": "method B", "C": "method C"}
    runs, hists, refs = _study(10, rng)
    table = accuracy_table(runs, hists, refs)
    rows = {(r["measure"], r["level"]): r for r in equal_accuracy(table, ["A", "B", "C"], labels,
                                                                   [f"p{p}" for p in range(10)], "settled")}
    tight = rows["objective", 1e-6]
    assert tight["conclusion (time)"].startswith("method A needs less time than method B on settled")
    assert tight["conclusion (iterations)"].startswith("method A needs fewer iterations than method B")
    assert "not reached: method C" in tight["conclusion (time)"] and "method C not reached" in tight["seconds"]
    assert "10 members" in tight["conclusion (time)"]
    # at 1e-2 C (which stops first) reaches the level as fast as A: the same iterates, no winner
    loose = rows["objective", 1e-2]
    assert "undecided over 10 members" in loose["conclusion (iterations)"]
    # over 3 problems nothing is decided, however clear each one is
    runs, hists, refs = _study(3, rng)
    rows = equal_accuracy(accuracy_table(runs, hists, refs), ["A", "B", "C"], labels, ["p0", "p1", "p2"])
    assert all("needs" not in r["conclusion (time)"] for r in rows)
    assert any(r["conclusion (time)"].startswith("undecided over 3 members") for r in rows)
