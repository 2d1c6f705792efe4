#!/usr/bin/env bash
# Shards on data nobody here wrote: every BFCL entry that `scripts/realworld` wrote (its
# run folder under ~/.cache/plangate/realworld), scored whole and as 2 shards + merge
# with its raw BFCL catalog; prints how many entries merge to exactly the whole run.
#   PLANGATE=target/release/plangate scripts/realworld.d/shards.sh
set -euo pipefail
plangate="${PLANGATE:-plangate}"
root="${REALWORLD_RUN:-$HOME/.cache/plangate/realworld/run/bfcl}"
[[ -d "$root" ]] || { echo "shards: no $root (run scripts/realworld first)" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
same=0 differ=0 entries=0 tasks=0
for d in "$root"/*/; do
    catalog="$d/catalog.bfcl.json" samples="$d/tasks.native.jsonl"
    [[ -f "$catalog" && -f "$samples" ]] || continue
    entries=$((entries + 1))
    tasks=$((tasks + $(wc -l < "$samples")))
    rm -f "$work"/*
    # Exit 1 (a reject) is a verdict, not a failure.
    "$plangate" score --catalog "$catalog" --samples "$samples" --out "$work/whole.jsonl" 2>/dev/null || [[ $? -eq 1 ]]
    for k in 1 2; do
        "$plangate" score --catalog "$catalog" --samples "$samples" --shard "$k/2" --out "$work/s$k.jsonl" 2>/dev/null || [[ $? -eq 1 ]]
    done
    "$plangate" merge --out "$work/merged.jsonl" "$work/s1.jsonl" "$work/s2.jsonl" 2>/dev/null || [[ $? -eq 1 ]]
    if cmp -s "$work/whole.jsonl" "$work/merged.jsonl"; then
        same=$((same + 1))
    else
        differ=$((differ + 1))
        echo "shards: $d: merged decisions differ from the whole run" >&2
    fi
done
echo "shards: $entries BFCL entries ($tasks tasks): merged equals whole for $same, differs for $differ"
[[ $differ -eq 0 ]]
