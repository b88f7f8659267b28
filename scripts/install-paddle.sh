#!/usr/bin/env bash
# Creates the Python virtual environment that adapters/paddle builds and tests
# against: PaddlePaddle's CPU wheel (the release the adapter is built for) and
# pytest. Safe to run again: an environment that already has that release is
# left alone. The environment lives outside the repository:
#   ${OAR_PADDLE_VENV:-$HOME/.cache/oar/paddle-venv}
# CMake looks there by default (OAR_PADDLE_PYTHON overrides it).
# OAR_PADDLE_SKIP=1 skips it (a machine without network: the adapter is then
# skipped at configure time, with a message).
set -euo pipefail

paddle_version="3.3.1"
venv="${OAR_PADDLE_VENV:-$HOME/.cache/oar/paddle-venv}"

if [ "${OAR_PADDLE_SKIP:-0}" = "1" ]; then
  echo "install-paddle: OAR_PADDLE_SKIP=1, not installing PaddlePaddle"
  exit 0
fi

py="$venv/bin/python"
if [ -x "$py" ] && "$py" - "$paddle_version" <<'PY' 2>/dev/null; then
import sys, importlib.metadata as m
sys.exit(0 if m.version("paddlepaddle") == sys.argv[1] and m.version("pytest") else 1)
PY
  echo "install-paddle: paddlepaddle $paddle_version present in $venv"
  exit 0
fi

echo "install-paddle: creating $venv with paddlepaddle $paddle_version (~200 MB download)"
# The system Python (Debian's python3 with python3-venv), not whatever a
# version manager puts first on PATH: CI and the build must agree on one.
/usr/bin/python3 -m venv "$venv"
"$py" -m pip install --quiet --disable-pip-version-check --no-input \
  "paddlepaddle==$paddle_version" pytest
"$py" -c "import paddle; print('install-paddle: paddle', paddle.__version__, 'in', '$venv')"
