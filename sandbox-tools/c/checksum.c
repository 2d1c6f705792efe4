/* A plangate tool written in C, to show (and test) the tool ABI from outside Rust:
 * the call's JSON arguments arrive on stdin; the result is one JSON value on stdout
 * with exit 0, or {"error":{"kind":...,"message":...}} on stdout with exit 1.
 *
 * It answers with the size of its arguments and their FNV-1a hash, which is the same
 * for the same bytes on every run: an honest `deterministic: true` tool.
 *
 * Build (Debian bookworm: apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32):
 *   clang --target=wasm32-wasi -O2 -o checksum.wasm checksum.c
 */
#include <stdint.h>
#include <stdio.h>

int main(void) {
    uint64_t hash = 14695981039346656037ULL; /* FNV-1a offset basis */
    unsigned long long bytes = 0;
    int first = -1;
    int c;
    while ((c = getchar()) != EOF) {
        if (first < 0 && c != ' ' && c != '\n' && c != '\t' && c != '\r') {
            first = c;
        }
        hash ^= (uint64_t)(unsigned char)c;
        hash *= 1099511628211ULL; /* FNV prime */
        bytes++;
    }
    if (first != '{') {
        printf("{\"error\":{\"kind\":\"bad_argument\",\"message\":\"arguments must be a JSON object\"}}\n");
        return 1;
    }
    printf("{\"bytes\":%llu,\"fnv1a\":\"%016llx\"}\n", bytes, (unsigned long long)hash);
    return 0;
}
