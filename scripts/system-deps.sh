#!/usr/bin/env bash
# Install the system packages a profile needs, when missing:
#   run   tesseract (the default OCR engine); best effort: without it, scanned pages wait for OCR
#         and the service says so (NEEDS_OCR), so a machine without root still runs the service
#   test  redis-server, chromium and tesseract, which the test suite runs for real
set -euo pipefail
profile="${1:-test}"

missing=()
command -v tesseract >/dev/null 2>&1 || missing+=(tesseract-ocr tesseract-ocr-eng tesseract-ocr-osd)
if [ "$profile" = test ]; then
  command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
  [ -x /usr/bin/chromium ] || missing+=(chromium)
fi

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo="sudo -n"  # never a password prompt: `make run` goes on without tesseract instead
  elif [ "$profile" = run ]; then
    echo "note: cannot install ${missing[*]} without root; scanned pages stay unread until tesseract is installed" >&2
    exit 0
  fi
fi
echo "installing system packages: ${missing[*]}"
apt_install() {
  $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"
}
if ! apt_install "${missing[@]}"; then
  if [ "$profile" = run ]; then
    echo "note: could not install ${missing[*]}; scanned pages stay unread until tesseract is installed" >&2
    exit 0
  fi
  exit 1
fi
