# Sourced by the test scripts: `apt_install WHO HINT PACKAGE...` installs Debian packages
# a test needs (as root, or through sudo), or exits with HINT (what to install by hand)
# where apt-get or root is not available. One place for what scripts/test.sh (lavapipe),
# scripts/mpi-test.sh (MPICH, libclang) and scripts/web-test.sh (Chromium) install.
apt_install() {
  local who=$1 hint=$2
  shift 2
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "$who: apt-get is not available: $hint, then run this again" >&2
    exit 1
  fi
  local sudo_cmd=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo_cmd="sudo"; else
      echo "$who: installing $* needs root: run as root, or $hint" >&2
      exit 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -qq
  $sudo_cmd apt-get install -y -qq "$@" >/dev/null
}
