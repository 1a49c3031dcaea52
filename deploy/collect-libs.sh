#!/usr/bin/env bash
# Copies the shared libraries that installed kvserve programs need, except
# glibc, the C++ runtime and CUDA's own (the runtime image has those), into
# PREFIX/lib, so the runtime image needs no -dev packages and no package names
# that differ between Debian and Ubuntu.
#
#   deploy/collect-libs.sh PREFIX
set -euo pipefail
prefix=$1
mkdir -p "$prefix/lib"
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libstdc\+\+|libgcc_s|libcuda\.so|libcudart|libcublas|libcublasLt|libnvJitLink|libnvrtc)'
for prog in "$prefix"/bin/*; do
  ldd "$prog" | awk '/=> \// {print $1, $3}' | while read -r name path; do
    [[ $name =~ $skip ]] && continue
    [[ -e $prefix/lib/$name ]] || cp -L "$path" "$prefix/lib/$name"
  done
done
