#!/usr/bin/env bash
# Runs every ```sh block of a README, in order, as one bash script in a
# folder, so that the commands a document tells a vendor to type are the
# commands CI types. A block fenced with any other language (```text, ```c,
# ```json, none) is not run. The script runs with `set -euo pipefail`: every
# command must succeed, and a command whose failure is expected says so itself.
#
# Usage: run_readme.sh <README.md> <folder to run in>
# The environment the README states (OAR_SOURCE, OAR_PREFIX) comes from the
# caller.
set -euo pipefail
readme=$1
folder=$2
mkdir -p "$folder"
script="$folder/readme-commands.sh"
{
  echo "set -euo pipefail"
  echo "set -x"
  awk '
    /^```sh[[:space:]]*$/ { inside = 1; blocks++; next }
    /^```/ { inside = 0; next }
    inside { print }
    END { if (blocks == 0) exit 3 }
  ' "$readme"
} > "$script" || { echo "run_readme.sh: no \`\`\`sh block in $readme"; exit 1; }
echo "run_readme.sh: running the sh blocks of $readme in $folder"
(cd "$folder" && bash "$script")
