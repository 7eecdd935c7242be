#!/usr/bin/env bash
# Ray for the GPU machine (no network there, and no Ray on its image): the cp312 wheel is 79 MB, more than
# a device call carries (64 MiB with the repo), so it is repacked without what an evaluation pool never
# loads: the Java jars (31 MB), RLlib, Tune, Train, Data, Serve, the LLM library and the dashboard's
# source maps. Lands in .whl-ray/ (git-ignored), with jsonschema's stack, the one requirement the image
# lacks. Carry it beside .whl: `carry: [".whl", ".whl-ray"]`; `gpu_check.sh ray` installs it.
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.whl-ray/' .git/info/exclude 2>/dev/null || echo '/.whl-ray/' >> .git/info/exclude
RAY_VERSION="${RAY_VERSION:-2.60.0}"
dir=.whl-ray
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$dir"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d "$tmp" "ray==$RAY_VERSION" "jsonschema==4.26.0" "jsonschema-specifications==2025.9.1" "referencing==0.37.0" \
  "rpds-py==2026.9.1"
mv "$tmp"/jsonschema* "$tmp"/referencing* "$tmp"/rpds_py* "$dir"/
python3 - "$tmp"/ray-*.whl "$dir" <<'EOF'
"""Copy the wheel without the parts a pool of evaluation actors never imports; RECORD lists what is left."""
import os, sys, zipfile

src, dest = sys.argv[1], sys.argv[2]
DROP = ("ray/jars/", "ray/rllib/", "ray/tune/", "ray/train/", "ray/data/", "ray/serve/", "ray/llm/",
        "ray/air/", "ray/workflow/")
drop = lambda name: name.startswith(DROP) or (name.startswith("ray/dashboard/client/") and name.endswith(".map"))
out = os.path.join(dest, os.path.basename(src))
with zipfile.ZipFile(src) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zout:
    for info in zin.infolist():
        if drop(info.filename):
            continue
        data = zin.read(info)
        if info.filename.endswith(".dist-info/RECORD"):
            rows = data.decode().splitlines()
            data = ("\n".join(r for r in rows if not drop(r.split(",")[0])) + "\n").encode()
        zout.writestr(info, data)
print(f"{os.path.basename(out)}: {os.path.getsize(src) >> 20} MB -> {os.path.getsize(out) >> 20} MB")
EOF
du -sh "$dir"
