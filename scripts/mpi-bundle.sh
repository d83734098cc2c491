#!/usr/bin/env bash
# Packs programs built with the `mpi` feature together with the MPICH runtime they link
# (mpiexec, its proxy, the shared libraries and UCX's transport modules) into one folder
# and a DIR.tar.gz of it (Debian's libmpich alone is 41 MB; the archive is a quarter of
# the folder), for a Linux machine without MPI installed (same or newer glibc):
#
#   scripts/mpi-bundle.sh DIR BINARY...
#   # on the other machine, with DIR.tar.gz copied there:
#   tar xzf DIR.tar.gz && source DIR/env.sh && mpiexec -n 2 DIR/bin/data_parallel --mode bench
#
# The libraries are the ones `ldd` resolves here, less the C library's own (libc, libm,
# libpthread, libdl, librt, libresolv, the loader), which every Linux has.
set -euo pipefail
if [ "$#" -lt 2 ]; then
  echo "usage: scripts/mpi-bundle.sh DIR BINARY... (build the binaries with --features mpi first)" >&2
  exit 1
fi
out=$1
shift
for tool in mpiexec.hydra hydra_pmi_proxy; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "mpi-bundle: $tool not found: install MPICH (apt-get install mpich libmpich-dev)" >&2
    exit 1
  }
done
mkdir -p "$out/bin" "$out/lib"
cp "$(command -v mpiexec.hydra)" "$out/bin/mpiexec"
cp "$(command -v hydra_pmi_proxy)" "$out/bin/"
for b in "$@"; do cp "$b" "$out/bin/"; done
# Every shared library the binaries and hydra resolve, but the C library's.
for f in "$out"/bin/*; do
  ldd "$f" | awk '$3 ~ /^\// {print $3}'
done | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|libresolv.so*|ld-linux*) ;;
    *) cp -L "$lib" "$out/lib/" ;;
  esac
done
# UCX (MPICH's transport here) loads its transports (libuct_<name>.so.0) from ucx/
# beside libucs; the ones whose own libraries are missing there are skipped.
libucs=$(ldconfig -p | awk '/libucs\.so\.0 / {print $NF; exit}')
if [ -n "$libucs" ] && [ -d "$(dirname "$libucs")/ucx" ]; then
  mkdir -p "$out/lib/ucx"
  cp -L "$(dirname "$libucs")"/ucx/*.so.0 "$out/lib/ucx/"
fi
# Debian's libmpich carries its debug information (40 MB of a 64 MB carry limit).
if command -v strip >/dev/null 2>&1; then
  find "$out/lib" -name '*.so*' -exec strip --strip-debug {} +
fi
cat > "$out/env.sh" <<'ENV'
# source me: puts the bundled MPICH first on PATH and the library path
bundle=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PATH="$bundle/bin:$PATH"
export LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export UCX_MODULE_DIR="$bundle/lib/ucx"
# Hydra starts its proxy from PATH on this host.
export HYDRA_LAUNCHER=fork
ENV
tar czf "$out.tar.gz" -C "$(dirname "$out")" "$(basename "$out")"
du -sh "$out" "$out.tar.gz" | awk '{print "mpi-bundle: " $2 " is " $1}'
