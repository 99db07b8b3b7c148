#!/usr/bin/env bash
# Installs what building and testing need and this machine lacks; does nothing when all is
# there, so both commands (npm start, npm test) call it every time.
#   Debian packages: emscripten (the wasm toolchain), doctest-dev (the C++ test framework),
#   chromium (the headless browser of the page tests), firefox-esr and webkit2gtk-driver (the
#   browser suites run in Firefox and in WebKitGTK too: WebKitWebDriver with its MiniBrowser),
#   xvfb (the X display MiniBrowser needs, having no headless mode), cmake and g++ (the native
#   build), clang-19 (compiles the relaxed-SIMD kernel, which Emscripten's own clang 14 cannot),
#   clang-format-14 (the C++ format check).
#   npm packages: package-lock.json's, with `npm ci`, whenever the lock changed.
# Node.js 20 or newer with npm must be there already (Debian bookworm packages Node 18).
set -euo pipefail
cd "$(dirname "$0")/../.."

node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$node_major" -lt 20 ] || ! command -v npm >/dev/null 2>&1; then
  echo "setup: Node.js 20 or newer and npm are needed (found: $(node --version 2>/dev/null || echo none))" >&2
  exit 1
fi

missing=()
command -v emcc >/dev/null 2>&1 || missing+=(emscripten)
command -v clang++-19 >/dev/null 2>&1 || missing+=(clang-19)
[ -f /usr/include/doctest/doctest.h ] || missing+=(doctest-dev)
[ -x /usr/bin/chromium ] || missing+=(chromium)
[ -x /usr/bin/firefox-esr ] || missing+=(firefox-esr)
command -v WebKitWebDriver >/dev/null 2>&1 || missing+=(webkit2gtk-driver)
command -v Xvfb >/dev/null 2>&1 || missing+=(xvfb)
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v clang-format-14 >/dev/null 2>&1 || missing+=(clang-format-14)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
command -v make >/dev/null 2>&1 || missing+=(make)
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# node_modules/.package-lock.json is npm's record of the last install.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: npm ci"
  npm ci --no-audit --no-fund --loglevel=error
fi
