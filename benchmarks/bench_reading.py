"""Cost of the non-linear reading of the dimensions (issue 63) on a posterior of 10,000 x 2,000
counts with 200 kept samples: each row's position on each dimension (``dimension_positions_``
and its sd), each column's variation along each dimension (the default ranking of
``top_columns``), one dimension's profile over every column (``profile("d1")``, 50 points) and
the groups table (``describe``, 5 groups).

The posterior is the one of ``bench_summaries.py`` (built, not sampled: 12 dimensions used by
20-60% of the rows, 50 frequencies, negative binomial). ``dimensions_`` (the matching the
reading starts from) is timed first, apart. CPU seconds of one thread; the memory is the peak
of what numpy allocated during the reading (``tracemalloc``, which numpy reports to), above what
the posterior and the matching already held::

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_reading.py [--rows N --cols J --kept S]

Results and the command: BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np
from threadpoolctl import threadpool_limits

from bench_summaries import build, size_arguments
from ibp_rflvm.summaries import dimension_summary, meaning
from ibp_rflvm.summaries.reading import column_variation, dimension_reading, groups_table, profile_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size_arguments(parser)
    parser.add_argument("--max-draws", type=int, default=meaning.SUMMARY_MAX_DRAWS,
                        help="kept samples per chain the summaries read")  # fmt: skip
    args = parser.parse_args()
    meaning.SUMMARY_MAX_DRAWS = args.max_draws
    post = build(args.rows, args.cols, args.kept)
    names = np.array([f"gene{j}" for j in range(args.cols)], dtype=object)
    groups = np.arange(args.rows) % 5
    with threadpool_limits(limits=1):
        start = time.process_time()
        summary = dimension_summary(post)
        t_dims = time.process_time() - start
        tracemalloc.start()
        times = {}
        start = time.process_time()
        dimension_reading(post)
        times["positions (mean and sd)"] = time.process_time() - start
        start = time.process_time()
        column_variation(post)
        times["variation of every column along every dimension"] = time.process_time() - start
        start = time.process_time()
        profile = profile_table(post, "d1", np.arange(args.cols), names, 50)
        times[f"profile of d1, {args.cols} columns x 50 points"] = time.process_time() - start
        start = time.process_time()
        groups_table(post, groups)
        times["describe, 5 groups"] = time.process_time() - start
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    size = f"{args.rows} x {args.cols}, {args.kept} kept samples, {len(summary.labels)} dimensions"
    print(f"{size}, {summary.n_samples} of them read, one thread, CPU seconds:")
    print(f"  dimensions_ (the matching, before): {t_dims:.1f} s")
    for what, seconds in times.items():
        print(f"  {what}: {seconds:.1f} s")
    total = sum(times.values())
    print(f"  reading in all: {total:.1f} s; peak memory allocated by it: {peak / 2**30:.2f} GiB")
    print(f"  (profile table: {len(profile)} rows)")


if __name__ == "__main__":
    main()
