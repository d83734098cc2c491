#!/usr/bin/env bash
# The data-parallel test: two MPI ranks training on the software Vulkan driver.
#
# Installs MPICH and libclang when missing (as scripts/test.sh installs lavapipe), builds
# the `data_parallel` example with the `mpi` feature, then:
#   1. `mpirun -np 2` trains a small GPT for 20 steps: identical parameters on both ranks
#      after every step, within 1e-5 of one process training on the two ranks' batches
#      concatenated, the logged loss their mean, one checkpoint written by rank 0 and
#      resumed by both;
#   2. a rank whose step fails ends the job with its error within 30 s;
#   3. a rank killed with SIGKILL ends the job with an error within 30 s.
# Extra arguments go to `cargo build` (CI passes --locked).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/apt-install.sh
start=$(date +%s)

missing=()
command -v mpiexec >/dev/null 2>&1 || missing+=(mpich)
command -v mpicc >/dev/null 2>&1 || missing+=(libmpich-dev)
# bindgen (in the mpi crate's build) loads libclang, the C library (libclang1-N:
# libclang.so.1, libclang-N.so.N); libclang-cpp (the C++ one, which other packages pull in)
# does not serve it, so its names must not count.
have_libclang() {
  local f
  for f in /usr/lib/llvm-*/lib/libclang.so* /usr/lib/x86_64-linux-gnu/libclang-[0-9]*.so* \
    /usr/lib/x86_64-linux-gnu/libclang.so*; do
    [ -e "$f" ] && return 0
  done
  return 1
}
have_libclang || missing+=(libclang-dev)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "mpi-test: installing ${missing[*]}"
  apt_install mpi-test "install MPICH (or OpenMPI) with its development files and libclang" \
    "${missing[@]}"
fi

export LP_NUM_THREADS="${LP_NUM_THREADS:-1}"
if [ "$(uname -s)" = Linux ]; then export TANG_BACKEND="${TANG_BACKEND:-vulkan}"; fi
# OpenMPI refuses to run as root without these (CI runs as root); MPICH ignores them.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

cargo build -p tang-examples --features mpi --example data_parallel --example train_digits "$@"
target_dir="${CARGO_TARGET_DIR:-target}"
bin="$target_dir/debug/examples/data_parallel"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "mpi-test: built in $(( $(date +%s) - start )) s"

echo "mpi-test: mpirun -np 2, 20 steps against one process"
mpiexec -n 2 "$bin" --steps 20 --out "$work/check"

# Runs mpiexec in the background; fails unless it ends with a non-zero status within 30 s
# of `$1` being done (the failure being injected).
expect_job_error() {
  local what=$1 pid=$2 waited=0
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$waited" -ge 30 ]; then
      echo "mpi-test: $what: the job still runs after 30 s" >&2
      kill -- "$pid" 2>/dev/null || true
      exit 1
    fi
    sleep 1
    waited=$((waited + 1))
  done
  if wait "$pid"; then
    echo "mpi-test: $what: the job ended with status 0" >&2
    exit 1
  fi
  echo "mpi-test: $what: the job ended with an error after ${waited} s"
}

echo "mpi-test: train_digits unchanged under mpirun -np 2"
# Every rank must run to the end of main: a rank that finishes first may not end the job
# while rank 0 still draws the loss curve and prints.
digits=$(cd "$target_dir/debug/examples" && pwd)/train_digits
(cd "$work" && mpiexec -n 2 "$digits" >digits.log 2>&1) || {
  echo "mpi-test: train_digits failed under mpirun:" >&2; cat "$work/digits.log" >&2; exit 1; }
[ "$(grep -c '^test accuracy' "$work/digits.log")" = 2 ] && [ -s "$work/runs/digits/loss.png" ] || {
  echo "mpi-test: train_digits under mpirun: both ranks must finish and rank 0 must draw loss.png:" >&2
  grep -v '^step' "$work/digits.log" >&2; ls -R "$work/runs" >&2; exit 1; }

echo "mpi-test: rank 1 fails at step 3"
mpiexec -n 2 "$bin" --steps 1000 --out "$work/fail" --fail-rank 1 --fail-at 3 >"$work/fail.log" 2>&1 &
expect_job_error "a failing rank" $!
grep -q "the injected failure of rank 1 at step 3" "$work/fail.log" || {
  echo "mpi-test: the failing rank's error is not in the job's output:" >&2
  cat "$work/fail.log" >&2
  exit 1
}

echo "mpi-test: rank 1 is killed"
mkdir -p "$work/pids"
mpiexec -n 2 "$bin" --steps 1000000 --out "$work/kill" --pid-dir "$work/pids" >"$work/kill.log" 2>&1 &
job=$!
for _ in $(seq 1 120); do
  [ -s "$work/pids/rank-1.pid" ] && break
  sleep 0.5
done
[ -s "$work/pids/rank-1.pid" ] || { echo "mpi-test: rank 1 never started training" >&2; cat "$work/kill.log" >&2; exit 1; }
sleep 1
kill -9 "$(cat "$work/pids/rank-1.pid")"
expect_job_error "a killed rank" "$job"

echo "mpi-test: passed in $(( $(date +%s) - start )) s"
