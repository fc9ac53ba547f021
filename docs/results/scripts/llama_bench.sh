#!/usr/bin/env bash
# llama.cpp's own llama-bench on the machine at hand, in two builds of the llama.cpp that
# metarag links (the copy llama-cpp-sys-2 vendors): portable (GGML_NATIVE=OFF, what cargo
# builds: AVX2, FMA, F16C, BMI2) and native (-march=native: AVX-512, VNNI, AMX where the CPU
# has them). llama-cpp-sys-2 ships llama.cpp without tools/llama-bench's sources, so they
# are taken from llama-cpp-python's sdist on PyPI (its llama-bench.cpp compiles against the
# vendored library). Then pp512 and tg128 with 2 threads, 3 repetitions, on the installed
# qwen2.5-1.5b-instruct model. Usage: [VARIANTS=portable] bash docs/results/scripts/llama_bench.sh [WORKDIR]
set -euo pipefail
work="${1:-/tmp/llama-bench}"
mkdir -p "$work"
vendored=$(ls -d "$HOME"/.cargo/registry/src/index.crates.io-*/llama-cpp-sys-2-0.1.161/llama.cpp | head -1)
rm -rf "$work/src" && cp -r "$vendored" "$work/src"
if [ ! -f "$work/sdist.tar.gz" ]; then
  url=$(curl -s https://pypi.org/simple/llama-cpp-python/ \
    | grep -o 'href="[^"]*llama_cpp_python-0.3.36.tar.gz[^"]*"' | head -1 \
    | sed 's/href="//;s/"$//;s/#.*//')
  curl -sL -o "$work/sdist.tar.gz" "$url"
fi
tar xzf "$work/sdist.tar.gz" -C "$work" llama_cpp_python-0.3.36/vendor/llama.cpp/tools/llama-bench
cp "$work"/llama_cpp_python-0.3.36/vendor/llama.cpp/tools/llama-bench/* "$work/src/tools/llama-bench/"
# The vendored tools/ lists tools whose sources are not shipped: build llama-bench alone.
printf 'find_package(Threads REQUIRED)\nllama_add_compile_flags()\nadd_subdirectory(llama-bench)\n' \
  > "$work/src/tools/CMakeLists.txt"
for v in ${VARIANTS:-portable native}; do
  n=OFF; [ "$v" = native ] && n=ON
  cmake -S "$work/src" -B "$work/build-$v" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=$n \
    -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DBUILD_SHARED_LIBS=OFF >/dev/null
  cmake --build "$work/build-$v" --target llama-bench -j"$(nproc)" >/dev/null
done
# BUILD_ONLY=1: stop here (build while the machine is busy, time later on a quiet one).
[ -n "${BUILD_ONLY:-}" ] && exit 0
model=$(ls "${METARAG_HOME:-$HOME/.cache/metarag/home}"/models/qwen2.5-1.5b-instruct/*.gguf)
for v in ${VARIANTS:-portable native}; do
  echo "== $v"
  "$work/build-$v/bin/llama-bench" -m "$model" -t 2 -p 512 -n 128 -r 3 -o md 2>/dev/null
done
