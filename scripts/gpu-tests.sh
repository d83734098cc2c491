#!/usr/bin/env bash
# Runs tang's test suites on a real GPU from prebuilt release binaries, so the shapes the
# software adapter cannot run (48 KiB attention tiles, the 33 KB matmul tile, 32-lane
# subgroup teams) are tested by a command anyone can repeat.
#
#   scripts/gpu-tests.sh build [DIR]   build the release test binaries (needs cargo and jq)
#                                      and copy them, stripped, to DIR
#                                      (default target/gpu-tests)
#   scripts/gpu-tests.sh run DIR       run every binary in DIR from its package's directory
#                                      (needs no cargo: DIR may come from another machine
#                                      with the same checkout)
#   scripts/gpu-tests.sh all           both, on this machine
#
# `run` prints one line per suite and a summary, and exits non-zero if any suite failed.
# GPU_TESTS_ONLY=REGEX (for `build`) keeps only the suites whose name matches, e.g.
# GPU_TESTS_ONLY='^(dense_|runtime_|macro_gpu|gpu_smoke)' for the GPU suites alone (the
# binaries are large: copy DIR as a compressed archive, `tar -C DIR -cJf gpu-tests.tar.xz .`).
# Extra arguments after DIR go to every test binary (e.g. `-- --test-threads=4`).
# The trybuild suite (`ui`) is left out: it compiles code and needs cargo; so are the unit
# tests of the proc-macro crate, which link the toolchain's libstd dynamically.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)

build() {
    local dir=${1:-$root/target/gpu-tests}
    mkdir -p "$dir/bin"
    : >"$dir/manifest.tsv"
    # One line per test binary: its path and its package's manifest.
    (cd "$root" && cargo test --workspace --release --no-run --message-format=json) |
        jq -r 'select(.reason == "compiler-artifact" and .profile.test == true and .executable != null
                      and (.target.kind | index("proc-macro") | not))
               | [.executable, .manifest_path, .target.name] | @tsv' |
        while IFS=$'\t' read -r exe manifest target; do
            [ "$target" = ui ] && continue
            if [ -n "${GPU_TESTS_ONLY:-}" ] && ! [[ "$target" =~ $GPU_TESTS_ONLY ]]; then
                continue
            fi
            local pkg name
            pkg=$(dirname "$manifest")
            pkg=${pkg#"$root"}
            pkg=${pkg#/}
            name=$(basename "$exe")
            cp "$exe" "$dir/bin/$name"
            strip "$dir/bin/$name" 2>/dev/null || true
            printf '%s\t%s\n' "$name" "${pkg:-.}" >>"$dir/manifest.tsv"
        done
    echo "built $(wc -l <"$dir/manifest.tsv") test binaries into $dir ($(du -sh "$dir" | cut -f1))"
}

run() {
    local dir=${1:?usage: gpu-tests.sh run DIR [-- test args]}
    shift
    [ "${1:-}" = -- ] && shift
    dir=$(cd "$dir" && pwd)
    local failed=() passed=0
    while IFS=$'\t' read -r name pkg; do
        local log="$dir/$name.log"
        local start=$SECONDS
        if (cd "$root/$pkg" && "$dir/bin/$name" "$@") >"$log" 2>&1; then
            passed=$((passed + 1))
            echo "ok     $name ($pkg, $((SECONDS - start)) s): $(grep -E '^test result' "$log" | tail -1)"
        else
            failed+=("$name")
            echo "FAILED $name ($pkg, $((SECONDS - start)) s): see $log"
            grep -E '^(test .* FAILED|---- |thread .* panicked)' "$log" | head -20 || true
        fi
    done <"$dir/manifest.tsv"
    echo "${passed} suites passed, ${#failed[@]} failed${failed:+: ${failed[*]}}"
    [ ${#failed[@]} -eq 0 ]
}

case "${1:-}" in
build) build "${2:-}" ;;
run)
    shift
    run "$@"
    ;;
all)
    build "$root/target/gpu-tests"
    run "$root/target/gpu-tests"
    ;;
*)
    sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
