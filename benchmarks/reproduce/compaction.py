"""Melanz et al. 2015 sec. 3.3, the compaction test: statistics of the two runs and the rows of
``benchmarks.reproduce melanz-2015``.

The paper: 1,000 spheres (R = 1 m, 1 kg, mu = 0.25) in a container compacted by a slab of 4,000 kg
(mu = 0.25), 4 s at h = 0.001 s, APGD to tau = 1e-5 on the relaxed (eq. 14) and the anti-relaxed
(eq. 15) CCQO. Fig. 10a: the total contact force on the container over time; "both models converge
to the total weight of the spheres and slab, [...] the anti-relaxed solution settles much sooner".
Fig. 10b: the complementarity error of eq. 8, "several orders of magnitude less" when anti-relaxed.
The caption of Fig. 9 says 4,000 spheres; the text, which gives every parameter of the run, 1,000.
The figures carry no numbers, so the rows check these findings on mass-free quantities: the force on
the container as a fraction F / W of the total weight W = (m_spheres + m_slab) g, and times.

Every statistic is computed here from the per-step table of a simulation (problems.stepper.StepRecord
with problems.dynamic_scenes.Scenario.observe: t [s], contacts, complementarity [N s m/s],
fixed_force [N], height [m] and v_up [m/s] of the slab).
"""

from __future__ import annotations

import math

import numpy as np

from workbench.report.reproduction import row

__all__ = ["PAPER", "BANDS", "ORDERS", "FORCE_TOL", "WINDOW", "settling_time", "windowed", "run_stats", "rows",
           "run_size"]

#: the paper's run (sec. 3.3): spheres, slab mass [kg], step [s], duration [s]
PAPER = {"spheres": 1000, "slab_mass": 4000.0, "h": 0.001, "duration": 4.0}
#: the bands |F / W - 1| within which the force on the container counts as settled: the filling test's 5 %
#: (sec. 3.2) and one either side, so that an order of settling times that depends on the band is seen
BANDS = (0.02, 0.05, 0.10)
#: "several orders of magnitude": at least two
ORDERS = 100.0
#: the force at the end within this fraction of the total weight
FORCE_TOL = 0.05
#: the force on the container is judged as the impulse per WINDOW [s] (the filling test's step h, sec. 3.2):
#: at the compaction's h = 0.001 s one step's force swings by tens of percent with the solver's accuracy
#: (a velocity error of 1 mm/s of the slab is 1.3 kN s / s on 1,280 kg), not with the motion
WINDOW = 0.01


def settling_time(t, ratio, band: float) -> float | None:
    """The time [s] from which |ratio - 1| <= band holds to the end of the run: the first step after
    the last one outside the band (the first step when none is); None when the last step is outside
    (it never settled within the run)."""
    outside = np.flatnonzero(np.abs(np.asarray(ratio, dtype=float) - 1.0) > band)
    t = np.asarray(t, dtype=float)
    if outside.size == 0:
        return float(t[0])
    return None if outside[-1] == t.size - 1 else float(t[outside[-1] + 1])


def windowed(t, force, window: float = WINDOW) -> tuple[np.ndarray, np.ndarray]:
    """(t, F) of the force [N] averaged over consecutive blocks of round(window / h) steps (the impulse
    per block over its length; at least one step, the last incomplete block dropped), each at the time
    of its last step."""
    t, force = np.asarray(t, dtype=float), np.asarray(force, dtype=float)
    h = t[1] - t[0] if t.size > 1 else window
    k = max(1, int(round(window / h)))
    m = t.size // k * k
    return t[k - 1:m:k], force[:m].reshape(-1, k).mean(axis=1)


def run_stats(table, weight: float, start_height: float) -> dict:
    """What the rows need from one run's per-step table (``weight``: W [N]; ``start_height``: the slab's
    height before the first step [m]): the settling times of F / W averaged over WINDOW
    (:func:`windowed`) for each of BANDS, the mean F / W over the last quarter of the run (the paper's
    last second of 4 s), the median and largest complementarity error over the steps with contacts
    (and the median over the first quarter, while the bed moves), the slab's sinking [m] (its height
    at the start minus at the end: the compaction), its largest upward velocity [m/s], the mean APGD
    iterations per step and the run's duration [s]."""
    t = table["t"].to_numpy(dtype=float)
    ratio = table["fixed_force"].to_numpy(dtype=float) / weight
    tw, rw = windowed(t, ratio)
    touching = table[table["contacts"] > 0]
    last = t > 0.75 * t[-1]  # the run starts at t = 0: its last quarter
    compl = touching["complementarity"]
    return {"settle": {band: settling_time(tw, rw, band) for band in BANDS}, "force_end": float(ratio[last].mean()),
            "compl_median": float(compl.median()), "compl_max": float(compl.max()),
            "compl_early": float(compl[touching["t"] <= 0.25 * t[-1]].median()),
            "sink": float(start_height - table["height"].iloc[-1]), "rise": float(table["v_up"].max()),
            "iterations": float(touching["iterations"].mean()), "duration": float(t[-1])}


def _settle_shown(s: dict) -> str:
    return ", ".join(f"{band:.0%}: " + (f"{s['settle'][band]:.3g} s" if s["settle"][band] is not None
                                         else f"never (> {s['duration']:.3g} s)") for band in BANDS)


def rows(relaxed: dict, anti: dict, differences: str) -> list[dict]:
    """The sec. 3.3 rows from the statistics (:func:`run_stats`) of the relaxed and the anti-relaxed run;
    ``differences``: what differs from the paper's run, and why (the bed, the slab, any reduction)."""
    out = []
    for name, s in (("relaxed", relaxed), ("anti-relaxed", anti)):
        out.append(row(f"compaction: force on the container tends to the total weight, {name}", "sec. 3.3, Fig. 10a",
                       1.0, round(s["force_end"], 4), {"rule": "within", "rel_tol": FORCE_TOL},
                       paper_shown="the total weight of spheres and slab (F / W = 1)",
                       criterion=f"mean F / W over the last quarter of the run (the paper's last second), "
                                 f"within {FORCE_TOL:.0%}", differences=differences))
    # a run that never settled settles after its end: the run's duration is a lower bound
    later = [(relaxed["duration"] if relaxed["settle"][band] is None else relaxed["settle"][band]) - anti["settle"][band]
             for band in BANDS if anti["settle"][band] is not None]
    out.append(row("compaction: anti-relaxed settles sooner", "sec. 3.3, Fig. 10a", "anti-relaxed settles much sooner",
                   [min(later), 0.0] if len(later) == len(BANDS) else None,
                   {"rule": "holds", "op": ">", "finding": "relaxed settling time > anti-relaxed in every band"},
                   criterion=f"time from which |F / W - 1| <= band to the end of the run [s], F averaged over "
                             f"{WINDOW:g} s (the filling test's step); the smallest over the bands "
                             f"{', '.join(f'{b:.0%}' for b in BANDS)} of relaxed minus anti-relaxed > 0 (a finding "
                             "that holds in one band only is the band's, not the method's); a relaxed run that never "
                             "settles: its duration, a lower bound",
                   differences=differences,
                   shown=f"relaxed {_settle_shown(relaxed)}; anti-relaxed {_settle_shown(anti)}",
                   missing="the anti-relaxed run never settled within a band of the weight"))
    out.append(row("compaction: anti-relaxed complementarity error several orders lower", "sec. 3.3, Fig. 10b",
                   "several orders of magnitude lower", [relaxed["compl_median"], anti["compl_median"]],
                   {"rule": "holds", "op": ">=", "factor": ORDERS, "finding": "at least two orders of magnitude"},
                   criterion="median over the steps with contacts of the complementarity error of eq. 8 "
                             f"(max_i |gamma_n,i u_n,i|): relaxed >= {ORDERS:g} x anti-relaxed",
                   differences=differences,
                   shown=f"relaxed {relaxed['compl_median']:.2g} vs anti-relaxed {anti['compl_median']:.2g}; over the "
                         f"first quarter {relaxed['compl_early']:.2g} vs {anti['compl_early']:.2g}; max "
                         f"{relaxed['compl_max']:.2g} vs {anti['compl_max']:.2g}"))
    out.append(row("compaction: the slab's sinking [m]", "sec. 3.3, Fig. 9", "pictures only", None,
                   {"rule": "not_comparable", "reason": "the paper gives no slab height; the sinking depends on the "
                                                        "packing's porosity, the container and the slab's start, "
                                                        "none of them given"},
                   criterion="slab height at the start minus at the end; largest upward slab velocity",
                   differences=differences,
                   shown=(f"relaxed {relaxed['sink']:.3g} m (largest upward velocity {relaxed['rise']:.2g} m/s), "
                          f"anti-relaxed {anti['sink']:.3g} m ({anti['rise']:.2g} m/s); mean APGD iterations per "
                          f"step {relaxed['iterations']:.0f} vs {anti['iterations']:.0f}")))
    return out


def run_size(n: int, slab_mass: float, duration: float, why: str) -> str:
    """The spheres, slab and duration of this run against the paper's (PAPER), and ``why`` they differ
    where they do."""
    text = "the text's 1,000 spheres (the caption of Fig. 9 says 4,000; the text gives every parameter of the run)"
    parts = [text + ("" if n == PAPER["spheres"] else f"; here {n:,} because {why}")]
    if not math.isclose(slab_mass, PAPER["slab_mass"]):
        parts.append(f"slab {slab_mass:g} kg for the paper's {PAPER['slab_mass']:g} kg (the paper's slab / spheres mass "
                     f"ratio, {PAPER['slab_mass'] / PAPER['spheres']:g})")
    if not math.isclose(duration, PAPER["duration"]):
        parts.append(f"{duration:g} s of the paper's {PAPER['duration']:g} s")
    return "; ".join(parts)
