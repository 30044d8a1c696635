"""Re-fit the calibrated parameters and write ``trainium_lab/data/calibration.csv``.

``python tools/calibrate.py`` runs :func:`trainium_lab.reality.fit` on the four named
measurement sets and rewrites the fitted rows (sourced rows are kept as they are), with the
residuals and today's date. ``tests/test_reality.py`` checks that the stored values are what the
fit returns, so a change to a model or to ``measurements.csv`` must be followed by this script.
"""

from __future__ import annotations

import csv
import datetime
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PATH = ROOT / "trainium_lab" / "data" / "calibration.csv"
PROCEDURE = {
    "nccom_test_guide": "over the guide's single-instance Trn1 runs: for each trial nccom_dma_efficiency the launch that minimises the summed squared relative error (closed form), the efficiency by golden section (reality.fit)",
    "nxdi_trn2_tutorials": "minimise the summed squared log error over the set's rows (golden section; reality.fit)",
    "trn1_training": "minimise the summed squared log error over the table's rows (golden section; reality.fit)",
    "vllm_eagle3_acceptance": "closed-form least squares on log acceptance: log a = sum((i+1) log a_i) / sum((i+1)^2)",
}


def main(rounds: int = 3) -> None:
    from trainium_lab import reality, specs

    for _ in range(rounds):             # prefill's fit reads the stored hop values: iterate to a fixed point
        rows = list(csv.DictReader(PATH.open()))
        fitted = reality.fit().set_index("parameter")
        today = datetime.date.today().isoformat()
        for r in rows:
            if r["parameter"] not in fitted.index:
                continue
            f = fitted.loc[r["parameter"]]
            g = lambda v: "" if v != v else f"{v:.6g}"  # noqa: E731
            r.update(value=g(f.value), low=g(f.low), high=g(f.high), procedure=PROCEDURE[f.fitted_on],
                     residual_median=g(f.residual_median), residual_max=g(f.residual_max),
                     n_rows=str(int(f.n_rows)), date=today, fitted_on=f.fitted_on)
            if not f.in_range and not r["flag"]:
                r["flag"] = "outside its plausible range: see data/README.md (calibration)"
            if f.in_range:
                r["flag"] = ""
        with PATH.open("w", newline="") as fh:
            w = csv.DictWriter(fh, list(rows[0]), lineterminator="\n")
            w.writeheader()
            w.writerows(rows)
        specs._calibration.cache_clear()
        reality._compare.cache_clear()
        reality._cross_validation.cache_clear()
        reality._without_set.cache_clear()
        reality._row_candidates.cache_clear()
    print(PATH.read_text())


if __name__ == "__main__":
    main()
