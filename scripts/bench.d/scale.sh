# Sourced by scripts/bench (its row/timed/check helpers and $out, $plangate): the figures
# of "Past one machine" and of eval's memory.
#   7. `plangate eval` peak RSS at two batch sizes: flat, since phase one's prepared
#      tasks go to a file, not to memory.
#   8. `plangate merge` on three score shards of 1,000,000 decisions in all: its time
#      and peak RSS, beside a merge of 100,000 (memory flat in the number of tasks).

# ---- 7. peak memory of plangate eval -------------------------------------------------
eval_counts="${BENCH_EVAL_MEM:-10000 200000}"
log "peak RSS of plangate eval at: $eval_counts tasks"
eval_mem=""
first_eval_rss=""
last_eval_rss=""
for n in $eval_counts; do
    python3 "$root/scripts/bench.d/repeat.py" "$out/demo-samples.jsonl" "$n" > "$out/eval-mem.jsonl"
    timed "$plangate" eval --catalog examples/seed-world/catalog.json --samples "$out/eval-mem.jsonl" --out /dev/null 2>/dev/null || true
    mb="$(awk -v k="$rss" 'BEGIN{printf "%.1f", k/1024}')"
    eval_mem+="${eval_mem:+, }$n: $mb MB in $secs s"
    first_eval_rss="${first_eval_rss:-$mb}"
    last_eval_rss="$mb"
done
rm -f "$out/eval-mem.jsonl"
eval_growth="$(awk -v a="$first_eval_rss" -v b="$last_eval_rss" 'BEGIN{printf "%.2f", b/a}')"
row "7. \`plangate eval\` peak RSS growth, smallest to largest batch ($eval_mem)" "${eval_growth}x" "< 1.5x" \
    "$(check "$eval_growth" "<=" 1.5)" \
    "scripts/bench.d/repeat.py target/bench/demo-samples.jsonl N > S; /usr/bin/time -v \$P eval --catalog examples/seed-world/catalog.json --samples S --out /dev/null"

# ---- 8. plangate merge ---------------------------------------------------------------
merge_counts="${BENCH_MERGE:-100000 1000000}"
log "plangate merge of 3 score shards at: $merge_counts decisions"
merge_line=""
first_merge_rss=""
last_merge_rss=""
for n in $merge_counts; do
    python3 "$root/scripts/bench.d/repeat.py" "$out/tasks.jsonl" "$n" > "$out/merge-tasks.jsonl"
    for k in 1 2 3; do
        "$plangate" score --catalog "$out/catalog.json" --samples "$out/merge-tasks.jsonl" \
            --shard "$k/3" --out "$out/merge-shard-$k.jsonl" 2>/dev/null || [[ $? -eq 1 ]]
    done
    timed "$plangate" merge --out "$out/merge-merged.jsonl" "$out"/merge-shard-{1,2,3}.jsonl 2>/dev/null || [[ $? -eq 1 ]]
    merge_secs="$secs"
    mb="$(awk -v k="$rss" 'BEGIN{printf "%.1f", k/1024}')"
    # The merge is checked, not only timed: it must equal the whole run's decisions.
    "$plangate" score --catalog "$out/catalog.json" --samples "$out/merge-tasks.jsonl" --out "$out/merge-whole.jsonl" 2>/dev/null || [[ $? -eq 1 ]]
    cmp -s "$out/merge-whole.jsonl" "$out/merge-merged.jsonl" || { log "merge of $n differs from the whole run"; exit 1; }
    rate="$(awk -v n="$n" -v s="$merge_secs" 'BEGIN{printf "%.0f", n / s}')"
    merge_line+="${merge_line:+, }$n: $merge_secs s ($rate decisions/s), $mb MB"
    first_merge_rss="${first_merge_rss:-$mb}"
    last_merge_rss="$mb"
done
rm -f "$out"/merge-*.jsonl "$out"/merge-*.jsonl.evidence
merge_growth="$(awk -v a="$first_merge_rss" -v b="$last_merge_rss" 'BEGIN{printf "%.2f", b/a}')"
row "8. \`plangate merge\`, 3 score shards ($merge_line); peak RSS growth" "${merge_growth}x" "flat (~1x)" \
    "$(check "$merge_growth" "<=" 1.25)" \
    "scripts/bench.d/repeat.py target/bench/tasks.jsonl N > T; \$P score --catalog target/bench/catalog.json --samples T --shard K/3 --out sK.jsonl (K = 1, 2, 3); /usr/bin/time -v \$P merge --out m.jsonl s1.jsonl s2.jsonl s3.jsonl"
