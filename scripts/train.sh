#!/usr/bin/env bash
# Train a retriever-reader, evaluate it on dev, and export the best model as a model folder
# (checkpoints/NAME/model: transformers / sentence-transformers, safetensors, a model card).
#   scripts/train.sh                                   the embedded default (configs/default.yaml)
#   scripts/train.sh configs/obqa.yaml                 OpenBookQA (after `cgr data get openbookqa arc
#                                                      worldtree entailmentbank`, docs/data.md)
#   scripts/train.sh configs/obqa.yaml trainer.max_epochs=1 data.batch_size=8
# With a virtualenv or conda env active in which cgr imports, it runs there and installs nothing;
# otherwise the first run creates .venv and installs cgr into it (idempotent afterwards).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
source scripts/cgr_env.sh
cgr_command
config="configs/default.yaml"
if [ $# -gt 0 ] && [[ "$1" == *.yaml || "$1" == *.yml ]]; then
  config="$1"
  shift
fi
args=()
for a in "$@"; do
  case "$a" in
    --*) args+=("$a") ;;
    *=*) args+=("--$a") ;;
    *) echo "train.sh: overrides look like key=value (got '$a')" >&2; exit 2 ;;
  esac
done
exec "${CGR[@]}" train --config "$config" --export-model "${args[@]}"
