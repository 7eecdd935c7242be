#!/usr/bin/env bash
# Download, on this machine, the wheels the GPU machine lacks (it has no network): SQLAlchemy for the
# exemplar database, FastAPI/uvicorn for the service, TRL for training. They land in .whl/ (git-ignored); pass
# `carry: [".whl"]` to the device call, and scripts/gpu_check.sh installs them there.
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
get() {  # folder, then pinned requirements (no dependencies are resolved: each one is named)
  local dir=".whl/$1"; shift
  mkdir -p "$dir"
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d "$dir" "$@"
}
get search "sqlalchemy==2.1.9" "typing_extensions==4.16.0"
get serve "fastapi==0.165.0" "starlette==1.10.0" "uvicorn==0.54.0" "pydantic==2.13.4" "pydantic_core==2.46.4" \
  "annotated_types==0.7.0" "annotated_doc==0.0.7" "typing_inspection==0.4.2" "opentelemetry_api==1.45.2"
# TRL's GRPO trainer and its data library (transformers, peft and accelerate are on the image)
get train "trl==1.16.0" "datasets==5.2.0" "dill==0.4.1" "multiprocess==0.70.19"
du -sh .whl
