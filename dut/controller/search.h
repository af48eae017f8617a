/* ofbench controller payload search: multi-pattern byte-string counting for the
 * prioritised controller (dut/controller, source document 000).
 *
 * Goals
 *   - Count every occurrence of every pattern in a payload (overlapping occurrences count,
 *     a pattern given twice counts twice): the same number the document's naive search
 *     (dut/controller/matching.py: naive) returns, so matchers are interchangeable and
 *     differentially testable.
 *   - Be callable from Python through ctypes.CDLL, which releases the GIL for the duration
 *     of every foreign call: N worker threads of the controller then search in parallel.
 *
 * Two algorithms
 *   - ofb_naive_count(): brute force, O(n*m*len), as in the document (a reference and a
 *     "same algorithm, no interpreter" data point).
 *   - ofb_ac_*(): Aho-Corasick compiled into a full DFA (next[state][byte]), O(n) per payload
 *     regardless of the pattern count.  Memory: (1 + sum of pattern lengths) states x 256 x 4 B
 *     (50 patterns of 10 B: ~0.5 MB).
 *
 * Invariants
 *   - Patterns are raw bytes (no terminator), length 1..OFB_SEARCH_MAX_PATTERN_LEN, at most
 *     OFB_SEARCH_MAX_PATTERNS of them.  Payload length is any size_t (0 allowed).
 *   - The automaton is immutable after ofb_ac_build() returns.
 *
 * Concurrency
 *   - ofb_ac_count() and ofb_naive_count() only read their inputs: any number of threads may
 *     call them at the same time on the same automaton.
 *   - ofb_ac_build() and ofb_ac_free() must not run concurrently with a count on the same
 *     automaton (the Python owner builds it once at app start and frees it at exit).
 *
 * Errors: ofb_ac_build() returns NULL on bad arguments or allocation failure (errno set).
 */
#ifndef OFB_CONTROLLER_SEARCH_H
#define OFB_CONTROLLER_SEARCH_H

#include <stddef.h>
#include <stdint.h>

#define OFB_SEARCH_MAX_PATTERNS 4096
#define OFB_SEARCH_MAX_PATTERN_LEN 256

struct ofb_ac;

/* Patterns are concatenated in `pattern_bytes`; pattern i has length lens[i]. */
uint64_t ofb_naive_count(const uint8_t *pattern_bytes, const uint32_t *lens,
                         uint32_t n_patterns, const uint8_t *text, size_t text_len);

struct ofb_ac *ofb_ac_build(const uint8_t *pattern_bytes, const uint32_t *lens,
                            uint32_t n_patterns);
uint64_t ofb_ac_count(const struct ofb_ac *ac, const uint8_t *text, size_t text_len);
uint32_t ofb_ac_states(const struct ofb_ac *ac);
void ofb_ac_free(struct ofb_ac *ac);

#endif
