#!/usr/bin/env bash
# Installs what building and running metarag needs on a fresh Debian/Ubuntu machine:
# a C/C++ toolchain (usearch, SQLite and oniguruma build from source), cmake and libclang
# (llama.cpp is built with cmake, its bindings generated with bindgen), Python with pip
# (model packages come from PyPI), and Rust through rustup if cargo is missing.
set -euo pipefail
need=()
command -v cc >/dev/null 2>&1 || need+=(gcc)
command -v c++ >/dev/null 2>&1 || need+=(g++)
command -v make >/dev/null 2>&1 || need+=(make)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
command -v python3 >/dev/null 2>&1 || need+=(python3)
python3 -m pip --version >/dev/null 2>&1 || need+=(python3-pip)
command -v cmake >/dev/null 2>&1 || need+=(cmake)
# The Postgres TLS test makes its certificates with the openssl command.
command -v openssl >/dev/null 2>&1 || need+=(openssl)
command -v clang >/dev/null 2>&1 || need+=(clang)
# bindgen loads libclang.so at build time; Debian ships it in libclang-dev's dependencies.
compgen -G '/usr/lib/llvm-*/lib/libclang-[0-9]*.so*' >/dev/null || need+=(libclang-dev)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing ${need[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}"
fi
if ! command -v cargo >/dev/null 2>&1; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  else
    echo "setup: installing Rust with rustup" >&2
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal
    export PATH="$HOME/.cargo/bin:$PATH"
  fi
fi
rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy rustfmt >/dev/null 2>&1 || true
