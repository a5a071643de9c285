#!/usr/bin/env bash
# The GPU serving benchmark in one command, on a host with CUDA, torch, numpy and
# Python 3.12 but no package index: the repository's ranker_torch model
# (inference/model_repository/ranker_torch) published into a temporary repository
# and served on the GPU, against the raw model. The benchmark itself needs only the
# standard library, numpy and torch; the served model's stub finds torch through
# python3 on PATH. Expects the server parts packed here with
#   .venv/bin/python -m tests.benchmarks.gpu_serving pack --python 3.12
# (writes .cache/gpu/tritonserver.tar.xz, carried to the host with the work tree).
# Results go to $OUT (default ./gpu-serving-out): gpu_serving.json, gpu_serving.txt,
# tritonserver-<instances>.log per instance count; the last line printed is the RESULT line.
# Extra arguments go to `python -m tests.benchmarks.gpu_serving run`.
set -euo pipefail
cd "$(dirname "$0")/../.."
ARCHIVE=${TRITON_ARCHIVE:-.cache/gpu/tritonserver.tar.xz}
SERVER=${TRITON_SERVER_DIR:-/tmp/streamrec-tritonserver}
OUT=${OUT:-$PWD/gpu-serving-out}
PYTHON=${PYTHON:-python3}
if [ ! -x "$SERVER/bin/tritonserver" ]; then
  mkdir -p "$SERVER"
  tar -xJf "$ARCHIVE" -C "$SERVER"
fi
"$PYTHON" - <<'PY'
import sys, torch, numpy
print(f"python {sys.version.split()[0]}, torch {torch.__version__}, numpy {numpy.__version__}, "
      f"cuda {torch.cuda.is_available()} {torch.cuda.get_device_name(0) if torch.cuda.is_available() else ''}")
PY
nvidia-smi --query-gpu=name,memory.used,memory.total,utilization.gpu --format=csv || true
exec "$PYTHON" -m tests.benchmarks.gpu_serving run --server "$SERVER" --out "$OUT" "$@"
