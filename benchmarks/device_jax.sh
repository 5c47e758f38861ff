#!/usr/bin/env bash
# Every figure of issues 47 and 53 that needs a GPU, in calls that install nothing (run by hand on
# the device machine from the repository root):
#
#   bash benchmarks/device_jax.sh                                     # 10,000 x 2,000, numba on all host cores
#   SIZES=100000x2000 PG=0 SAME=0 bash benchmarks/device_jax.sh       # then 100,000 x 2,000 (H100 or H200)
#   SIZES=1000000x2000 NUMBA=0 PG=0 SAME=0 bash benchmarks/device_jax.sh   # H200, JAX only
#
# It prints the device and the versions, then for each size the whole-sweep device step's
# seconds per sweep (one device call of several sweeps, and sweep by sweep with the state read
# back), K+ over the timed sweeps (20-30: the start has 25 dimensions), its compile counts and
# measured peak device memory, the numba backend's seconds per sweep on all the host's cores for
# the same chain start (the baseline, in the same call) and their ratio; then the sweep
# program's memory per N x J entry and its scatters whose indices may repeat (a GPU may run those
# as serial loops; MEM=0 skips it); then the Polya-gamma moment grid and the draws' speed on the
# device (PG=0 skips it). SAME=0 skips the same-seed-same-chain check (two more chains' starts).
set -u
export OPENBLAS_NUM_THREADS=1 PYTHONPATH=src NUMBA_CACHE_DIR=${NUMBA_CACHE_DIR:-/tmp/numba-cache}
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1  # the measured peak is then what the fit used
SIZES=${SIZES:-"10000x2000"}
THREADS=$(nproc)
python3 -c "import jax, jaxlib, numba, numpy; print('devices:', jax.devices(), 'jax', jax.__version__, 'jaxlib', jaxlib.__version__, 'numba', numba.__version__, 'numpy', numpy.__version__)"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null
for size in $SIZES; do
  sweeps=5; numba_sweeps=2
  case $size in 100000x*) sweeps=3; numba_sweeps=1;; 1000000x*) sweeps=2; numba_sweeps=1;; esac
  extra=""; [ "${NUMBA:-1}" = 0 ] && extra="--no-numba"
  [ "${SAME:-1}" = 0 ] && extra="$extra --no-same-twice"
  python3 benchmarks/bench_jax.py --sizes "$size" --sweeps $sweeps --numba-threads "$THREADS" \
    --numba-sweeps $numba_sweeps --init-dims 25 $extra
done
[ "${MEM:-1}" = 0 ] || python3 benchmarks/jax_step_memory.py --sizes $SIZES --hlo
[ "${PG:-1}" = 0 ] || python3 benchmarks/jax_pg_grid.py --draws 200000 --speed 10000x2000
