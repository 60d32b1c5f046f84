#!/usr/bin/env bash
# Evaluate a checkpoint or a model folder (`cgr export`):
#   scripts/eval.sh CHECKPOINT|MODEL_DIR [DATA_FILE] [--out FILE] [--batch-size N]
# DATA_FILE: any OpenBookQA / ARC file in the official jsonl format (default: the dev file a
# checkpoint was trained with; a model folder needs it). The last line printed is `accuracy: <value>`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ $# -lt 1 ]; then
  echo "usage: scripts/eval.sh CHECKPOINT|MODEL_DIR [DATA_FILE] [--out FILE]" >&2
  exit 2
fi
source "$root/scripts/cgr_env.sh"
cgr_command
checkpoint="$(realpath "$1")"
shift
if [ -d "$checkpoint" ]; then args=(--model "$checkpoint"); else args=(--checkpoint "$checkpoint"); fi
if [ $# -gt 0 ] && [[ "$1" != --* ]]; then
  # a file here by its full path; otherwise as given, found under the data root (CGR_DATA)
  if [ -e "$1" ]; then args+=(--data "$(realpath "$1")"); else args+=(--data "$1"); fi
  shift
fi
cd "$root"
exec "${CGR[@]}" eval "${args[@]}" "$@"
