#!/usr/bin/env bash
# Every figure of issue 43 that needs a GPU, in one call that installs nothing (run by hand on
# the device machine from the repository root; about 6 minutes on one H100):
#
#   bash benchmarks/device_jax.sh            # H100: 10,000 and 100,000 x 2,000, numba on 16 threads
#   SIZES=1000000x2000 NUMBA=0 bash benchmarks/device_jax.sh   # H200: 10^6 x 2,000, JAX only
#
# It prints the device, then for each size the JAX backend's seconds per sweep (median), its
# compile counts and measured peak device memory, the numba backend's seconds per sweep on all
# the host's cores for the same chain start (the baseline, in the same call), and their ratio;
# then the compiled programs' buffer sizes per N x J entry; then the Polya-gamma moment grid and
# the draws' speed on the device; then the JAX tests where pytest is installed.
set -u
export OPENBLAS_NUM_THREADS=1 PYTHONPATH=src NUMBA_CACHE_DIR=${NUMBA_CACHE_DIR:-/tmp/numba-cache}
export XLA_PYTHON_CLIENT_PREALLOCATE=false  # the measured peak is then what the fit used
SIZES=${SIZES:-"10000x2000 100000x2000"}
THREADS=$(nproc)
python -c "import jax; print('devices:', jax.devices())"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null
for size in $SIZES; do
  sweeps=5; numba_sweeps=2
  case $size in 100000x*) sweeps=3; numba_sweeps=1;; 1000000x*) sweeps=2; numba_sweeps=1;; esac
  extra=""; [ "${NUMBA:-1}" = 0 ] && extra="--no-numba"
  python benchmarks/bench_jax.py --sizes "$size" --sweeps $sweeps --numba-threads "$THREADS" \
    --numba-sweeps $numba_sweeps $extra
done
python benchmarks/jax_memory.py --sizes $SIZES
python benchmarks/jax_pg_grid.py --draws 200000 --speed 10000x2000
# The JAX tests too, where the machine has pytest (a bare one may not).
python -c "import pytest" 2>/dev/null && python -m pytest -q -p no:cacheprovider tests/jax_backend -x 2>&1 | tail -3
