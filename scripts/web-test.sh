#!/usr/bin/env bash
# Runs tang in a real browser: builds examples/web for WebAssembly, serves the page on
# 127.0.0.1 and loads it in headless Chromium on WebGPU (SwiftShader, Chromium's software
# adapter, so no GPU is needed). The page checks a #[fused_grad] kernel, matmul and
# softmax against the CPU and trains the digits MLP; this script reads its summary
# ("n passed, m failed") back from the DOM and fails unless every check passed. It also
# writes a screenshot of the page and prints its path.
#
#   scripts/web-test.sh            # from the repository root or anywhere
#   scripts/web-test.sh --locked   # extra arguments go to the cargo build (CI passes --locked)
#
# Set-up it does when needed: the wasm32-unknown-unknown target (rustup), the
# wasm-bindgen CLI at the version of the wasm-bindgen library in Cargo.lock (cargo
# install --locked, a few minutes the first time, skipped when that version is on PATH),
# Debian's chromium package (apt-get, as root).
# Environment: CARGO_TARGET_DIR (honoured), TANG_WEB_PORT (default 8787),
# TANG_WEB_PROFILE (dev or release; default release: the size budget is the release
# module's, and one build serves both), CHROMIUM (the browser binary), TANG_WEB_TIMEOUT
# (seconds the page may run, default 300; a panic or an uncaught error ends the page at
# once as a failure), TANG_WEB_WASM_BUDGET (bytes the release .wasm may have, default
# 3500000).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/apt-install.sh"
cd "$root"
target_dir=${CARGO_TARGET_DIR:-$root/target}
site=$target_dir/web-site
port=${TANG_WEB_PORT:-8787}
profile=${TANG_WEB_PROFILE:-release}
wasm_budget=${TANG_WEB_WASM_BUDGET:-3500000}
timeout_s=${TANG_WEB_TIMEOUT:-300}
started=$(date +%s)

say() { printf 'web-test: %s\n' "$*" >&2; }
fail() { say "FAILED: $*"; exit 1; }

# --- set-up -------------------------------------------------------------------------
if command -v rustup >/dev/null && ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
    say "adding the wasm32-unknown-unknown target"
    rustup target add wasm32-unknown-unknown
fi

bindgen_version=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
[ -n "$bindgen_version" ] || fail "no wasm-bindgen entry in Cargo.lock"
if [ "$(wasm-bindgen --version 2>/dev/null | awk '{ print $2 }')" != "$bindgen_version" ]; then
    say "installing wasm-bindgen-cli $bindgen_version (it must match the library in Cargo.lock)"
    # --locked first: the versions its authors tested. A registry that lacks one of those
    # exact versions (a yanked or not yet mirrored release) refuses that, so then resolve
    # afresh, as a plain `cargo install` does. The tool is built unoptimised: it only
    # rewrites one module (2 s unoptimised, 0.5 s at opt-level 1), and its build takes 80 s
    # on two cores against 167 s at opt-level 1.
    export CARGO_PROFILE_RELEASE_OPT_LEVEL=0 CARGO_PROFILE_RELEASE_DEBUG=false
    cargo install --locked wasm-bindgen-cli --version "$bindgen_version" \
        || { say "the locked install was refused; resolving its dependencies afresh"
             cargo install wasm-bindgen-cli --version "$bindgen_version"; }
    unset CARGO_PROFILE_RELEASE_OPT_LEVEL CARGO_PROFILE_RELEASE_DEBUG
fi

chromium=${CHROMIUM:-}
if [ -z "$chromium" ]; then
    for c in chromium chromium-browser google-chrome; do
        if command -v "$c" >/dev/null; then chromium=$c; break; fi
    done
fi
if [ -z "$chromium" ]; then
    say "installing Debian's chromium package"
    apt_install web-test "install Chromium (or set CHROMIUM to a Chromium or Chrome binary)" chromium
    chromium=chromium
fi

# --- build --------------------------------------------------------------------------
say "building tang-web for wasm32-unknown-unknown ($profile profile)"
# No debug tables: wasm-bindgen drops them from the served module anyway (10 s of a cold
# release build on two cores).
CARGO_PROFILE_RELEASE_DEBUG=false \
    cargo rustc -p tang-web --lib --target wasm32-unknown-unknown --profile "$profile" "$@" --crate-type cdylib
profile_dir=$profile
[ "$profile" = dev ] && profile_dir=debug
wasm=$target_dir/wasm32-unknown-unknown/$profile_dir/tang_web.wasm
[ -f "$wasm" ] || fail "the build did not produce $wasm"
rm -rf "$site"
mkdir -p "$site"
wasm-bindgen --target web --no-typescript --out-dir "$site/pkg" "$wasm"
cp examples/web/index.html "$site/"
# The module's size is what every visitor downloads: a budget keeps a dependency or a
# debug table from growing it unseen (only the release module is measured, as
# served: after wasm-bindgen, which drops the debug sections).
served=$site/pkg/tang_web_bg.wasm
wasm_bytes=$(wc -c <"$served")
if [ "$profile" = release ]; then
    gz_bytes=$(gzip -9 -c "$served" | wc -c)
    say "release module: $wasm_bytes bytes ($gz_bytes gzipped), budget $wasm_budget"
    [ "$wasm_bytes" -le "$wasm_budget" ] \
        || fail "tang_web_bg.wasm is $wasm_bytes bytes, over the budget of $wasm_budget (see examples/web/README.md)"
fi
built=$(date +%s)

# --- serve and run ------------------------------------------------------------------
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$site" >"$site/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 50); do
    if python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/index.html')" 2>/dev/null; then
        break
    fi
    sleep 0.1
done
url=http://127.0.0.1:$port/index.html

# WebGPU in headless Chromium on a machine without a GPU: unsafe-webgpu enables it on
# Linux, Vulkan through SwiftShader gives it an adapter; the GPU sandbox cannot start in
# a container, and Chromium refuses to run as root with its sandbox on. The page's work
# is asynchronous GPU work that --dump-dom would not wait for, so run_page.py drives the
# browser through the DevTools protocol until the page reports its summary.
flags=(--headless=new --enable-unsafe-webgpu --enable-features=Vulkan
       --use-vulkan=swiftshader --use-webgpu-adapter=swiftshader --disable-gpu-sandbox
       --disable-dev-shm-usage --no-first-run --window-size=1000,1400)
[ "$(id -u)" = 0 ] && flags+=(--no-sandbox)

say "loading $url in $chromium"
dom=$site/dom.html
screenshot=$site/tang-web.png
python3 examples/web/run_page.py "$chromium" "$url" "$dom" "$screenshot" "$timeout_s" "${flags[@]}" \
    || fail "the page did not finish within $timeout_s s (browser log: $site/chromium.log)"
finished=$(date +%s)

# --- read the result back -----------------------------------------------------------
python3 - "$dom" <<'EOF' || fail "the page's checks did not all pass (browser $(( $(date +%s) - built )) s; page: $dom)"
import html, re, sys
page = open(sys.argv[1], encoding="utf-8").read()
for item in re.findall(r'<li class="(?:pass|fail)">(.*?)</li>', page, re.S):
    print("  " + html.unescape(item))
for item in re.findall(r'<li class="loss">(.*?)<span', page, re.S):
    print("  " + html.unescape(item))
adapter = re.search(r'<code id="adapter">(.*?)</code>', page, re.S)
print("adapter: " + (html.unescape(adapter.group(1)) if adapter else "?"))
summary = re.search(r'<p id="summary">(.*?)</p>', page, re.S)
text = html.unescape(summary.group(1)).strip() if summary else "no summary in the page"
print("page: " + text)
counts = re.fullmatch(r"(\d+) passed, (\d+) failed", text)
sys.exit(0 if counts and int(counts.group(1)) > 0 and counts.group(2) == "0" else 1)
EOF
[ -f "$screenshot" ] && say "screenshot: $screenshot"
say "passed (build $((built - started)) s, browser $((finished - built)) s)"
