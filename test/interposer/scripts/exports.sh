#!/usr/bin/env bash
# exports.sh NCCL_H LIBRARY: every function nccl.h declares (nccl* and
# pnccl*) is a defined dynamic symbol of LIBRARY; LIBRARY has no undefined
# reference to NCCL or CUDA.
set -euo pipefail
header=$1 lib=$2
want=$(grep -oE '^(ncclResult_t|const char\*) +p?nccl[A-Za-z0-9_]+\(' "$header" |
  sed -E 's/.* +(p?nccl[A-Za-z0-9_]+)\(/\1/' | sort -u)
have=$(nm -D --defined-only "$lib" | awk '{print $3}' | sort -u)
missing=$(comm -23 <(echo "$want") <(echo "$have"))
[ "$(echo "$want" | wc -l)" -ge 70 ] || { echo "FAIL: too few declarations read from $header"; exit 1; }
if [ -n "$missing" ]; then
  echo "FAIL: not exported:"; echo "$missing"; exit 1
fi
if nm -D --undefined-only "$lib" | grep -E ' (p?nccl|cuda)'; then
  echo "FAIL: the interposer depends on NCCL or CUDA symbols"; exit 1
fi
if readelf -d "$lib" | grep -E 'NEEDED.*(nccl|cuda)'; then
  echo "FAIL: the interposer links NCCL or CUDA"; exit 1
fi
echo "$(echo "$want" | wc -l) functions of nccl.h exported"
