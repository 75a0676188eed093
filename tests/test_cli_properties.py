"""Property: whatever CSV/TSV table ``robustclust fit`` is given, it answers properly.

Hypothesis writes tables with random headers (empty, repeated, quoted,
non-ASCII names), quoting, missing cells, numbers of extreme magnitude,
codes with leading zeros, text, extra or missing fields, line endings and
encodings, and runs ``robustclust fit TABLE -k K -o OUT`` in-process
(through :func:`robustclust.cli.main`, what the console script runs).  Every
run must end in one of two ways:

* exit status 0, and OUT holds every input row with its fields exactly as
  written plus ``cluster``, ``is_outlier`` and ``outlier_score``, the three
  consistent with each other and, row for row, with RobustKMeans fitted on
  the columns the summary names;
* exit status 1 or 2 with exactly one line on stderr, nothing on stdout, and
  no file written (no output, no temporary file);

never a traceback or an "internal error".  100 examples by default (about ten
seconds); ROBUSTCLUST_EXAMPLES=N runs N (the suite was run with 3 x 500).
"""

import csv
import io
import json
import os
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from robustclust import RobustKMeans
from robustclust.cli import main

RESULT = ["cluster", "is_outlier", "outlier_score"]

names = st.one_of(
    st.sampled_from(["x", "y", "z", "value", "zip", "name", "a b", "a,b", 'say "hi"', "é",
                     "", "cluster", "1.5"]),
    st.text(alphabet="abcxyz _-", min_size=1, max_size=6),
)
moderate = st.floats(-1e6, 1e6, allow_nan=False).map(repr)
extreme = st.sampled_from(["1e300", "-1e300", "1e-300", "5e-324", "1e160", "1e309", "-0",
                           "1e150", "3.5e-200"])
missing = st.sampled_from(["", "NA", "nan", "inf"])
#: How the cells of one column are drawn.
COLUMNS = {
    "numbers": st.one_of(*[moderate] * 8, st.integers(-1000, 1000).map(str), extreme,
                         missing),
    "clean numbers": st.one_of(moderate, st.integers(-1000, 1000).map(str)),
    "codes": st.sampled_from(["00501", "02134", "10001", "00210", "", "99"]),
    "text": st.sampled_from(["", "NA", "abc", "Smith, Ann", 'x"y', "é", " 3", "True", "1"]),
}


@st.composite
def tables(draw):
    """(bytes of the file, its suffix, the rows of fields as generated, well-formed?)."""
    n_cols = draw(st.integers(1, 4))
    header = draw(st.lists(names, min_size=n_cols, max_size=n_cols))
    kinds = draw(st.lists(st.sampled_from(["numbers", "clean numbers", "clean numbers",
                                           "codes", "text"]),
                          min_size=n_cols, max_size=n_cols))
    n_rows = draw(st.integers(0, 14))
    rows = [[draw(COLUMNS[kind]) for kind in kinds] for _ in range(n_rows)]
    ragged = n_rows > 0 and draw(st.integers(0, 9)) == 0
    if ragged:
        i = draw(st.integers(0, n_rows - 1))
        rows[i] = rows[i][:-1] if len(rows[i]) > 1 and draw(st.booleans()) else rows[i] + ["1"]
    sep = draw(st.sampled_from([",", "\t"]))
    quoting = draw(st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_ALL]))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=sep, quoting=quoting, lineterminator=newline)
    writer.writerow(header)
    writer.writerows(rows)
    encoding = draw(st.sampled_from(["utf-8"] * 6 + ["utf-8-sig", "latin-1", "utf-16"]))
    try:
        data = buffer.getvalue().encode(encoding)
    except UnicodeEncodeError:
        data = buffer.getvalue().encode("utf-8")
    return data, ".tsv" if sep == "\t" else ".csv", [header] + rows, not ragged


def run(args, cwd):
    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            status = main(args)
    finally:
        os.chdir(old)
    return status, out.getvalue(), err.getvalue()


def check_output(where, suffix, records, summary, k):
    """OUT: the input fields as written plus consistent results equal to the library's."""
    sep = "\t" if suffix == ".tsv" else ","
    with open(where / f"out{suffix}", newline="", encoding="utf-8") as fh:
        written = list(csv.reader(fh, delimiter=sep))
    header, rows = records[0], records[1:]
    kept = [i for i, name in enumerate(header) if name not in RESULT]
    assert written[0] == [header[i] for i in kept] + RESULT
    assert len(written) - 1 == len(rows)
    used, labels = [], []
    for number, (line, row) in enumerate(zip(written[1:], rows)):
        assert line[:-3] == [row[i] for i in kept]  # byte for byte
        cluster, flagged, score = line[-3:]
        if cluster == "":
            assert flagged == "" and score == ""
            continue
        used.append(number)
        labels.append(int(cluster))
        assert (flagged == "True") == (int(cluster) == -1) == (float(score) > 0)
    assert len(used) == summary["n_rows_used"]
    frame = pd.read_csv(where / f"t{suffix}", sep=sep, index_col=False)
    X = frame[summary["columns"]].to_numpy(dtype=np.float64)[used]
    expected = RobustKMeans(k, n_init=1, random_state=0).fit(X)
    np.testing.assert_array_equal(labels, expected.labels_)


@settings(max_examples=int(os.environ.get("ROBUSTCLUST_EXAMPLES", 100)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(table=tables(), k=st.integers(1, 2), drop_missing=st.booleans())
def test_fit_answers_any_table_properly(table, k, drop_missing):
    data, suffix, records, well_formed = table
    with tempfile.TemporaryDirectory() as folder:
        where = Path(folder)
        (where / f"t{suffix}").write_bytes(data)
        args = ["fit", f"t{suffix}", "-k", str(k), "--n-init", "1", "-o", f"out{suffix}",
                "--json"] + (["--drop-missing"] if drop_missing else [])
        status, out, err = run(args, where)
        event(f"exit status {status}")
        assert "Traceback" not in err and "internal error" not in err, err
        if status == 0:
            assert well_formed  # a ragged table is never read
            summary = json.loads(out)
            assert all(line.startswith("robustclust fit: warning: ")
                       for line in err.splitlines())
            check_output(where, suffix, records, summary, k)
        else:
            assert status in (1, 2), (status, err)
            assert out == ""
            assert err.startswith("robustclust fit: error: ") and err.count("\n") == 1, err
            assert sorted(p.name for p in where.iterdir()) == [f"t{suffix}"]
