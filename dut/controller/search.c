/* Payload search for the ofbench controller; see search.h for the design notes. */
#include "search.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct ofb_ac {
	uint32_t n_states;
	uint32_t *next;   /* n_states x 256: full DFA transition table */
	uint32_t *out;    /* n_states: patterns ending here, suffix matches included */
};

uint64_t
ofb_naive_count(const uint8_t *pattern_bytes, const uint32_t *lens, uint32_t n_patterns,
		const uint8_t *text, size_t text_len)
{
	uint64_t count = 0;
	const uint8_t *pat = pattern_bytes;

	for (uint32_t p = 0; p < n_patterns; p++) {
		size_t m = lens[p];

		if (m > 0 && m <= text_len) {
			for (size_t i = 0; i + m <= text_len; i++) {
				size_t j = 0;

				while (j < m && text[i + j] == pat[j])
					j++;
				count += (j == m);
			}
		}
		pat += lens[p];
	}
	return count;
}

static int
check_patterns(const uint32_t *lens, uint32_t n_patterns, size_t *total_len)
{
	size_t total = 0;

	if (lens == NULL || n_patterns == 0 || n_patterns > OFB_SEARCH_MAX_PATTERNS)
		return -1;
	for (uint32_t p = 0; p < n_patterns; p++) {
		if (lens[p] == 0 || lens[p] > OFB_SEARCH_MAX_PATTERN_LEN)
			return -1;
		total += lens[p];
	}
	*total_len = total;
	return 0;
}

struct ofb_ac *
ofb_ac_build(const uint8_t *pattern_bytes, const uint32_t *lens, uint32_t n_patterns)
{
	size_t total_len, max_states;
	struct ofb_ac *ac;
	uint32_t *fail = NULL, *queue = NULL;
	const uint8_t *pat = pattern_bytes;
	uint32_t n_states = 1; /* state 0 = root */

	if (pattern_bytes == NULL || check_patterns(lens, n_patterns, &total_len) < 0) {
		errno = EINVAL;
		return NULL;
	}
	max_states = total_len + 1;
	ac = calloc(1, sizeof(*ac));
	if (ac == NULL)
		return NULL;
	ac->next = malloc(max_states * 256 * sizeof(uint32_t));
	ac->out = calloc(max_states, sizeof(uint32_t));
	fail = calloc(max_states, sizeof(uint32_t));
	queue = malloc(max_states * sizeof(uint32_t));
	if (ac->next == NULL || ac->out == NULL || fail == NULL || queue == NULL)
		goto nomem;
	/* UINT32_MAX marks "no trie edge yet"; resolved into DFA edges below. */
	memset(ac->next, 0xff, max_states * 256 * sizeof(uint32_t));

	/* 1. Trie of all patterns. */
	for (uint32_t p = 0; p < n_patterns; p++) {
		uint32_t s = 0;

		for (uint32_t k = 0; k < lens[p]; k++) {
			uint32_t *edge = &ac->next[(size_t)s * 256 + pat[k]];

			if (*edge == UINT32_MAX)
				*edge = n_states++;
			s = *edge;
		}
		ac->out[s]++;
		pat += lens[p];
	}

	/* 2. Breadth-first: failure links and the full DFA.  A missing edge of state s on
	 * byte c becomes the edge of fail(s) on c (already complete: fail(s) is shallower). */
	uint32_t head = 0, tail = 0;

	for (int c = 0; c < 256; c++) {
		uint32_t *edge = &ac->next[c];

		if (*edge == UINT32_MAX) {
			*edge = 0;
		} else {
			fail[*edge] = 0;
			queue[tail++] = *edge;
		}
	}
	while (head < tail) {
		uint32_t s = queue[head++];

		ac->out[s] += ac->out[fail[s]];
		for (int c = 0; c < 256; c++) {
			uint32_t *edge = &ac->next[(size_t)s * 256 + c];
			uint32_t via_fail = ac->next[(size_t)fail[s] * 256 + c];

			if (*edge == UINT32_MAX) {
				*edge = via_fail;
			} else {
				fail[*edge] = via_fail;
				queue[tail++] = *edge;
			}
		}
	}
	ac->n_states = n_states;
	free(fail);
	free(queue);
	return ac;

nomem:
	free(fail);
	free(queue);
	ofb_ac_free(ac);
	errno = ENOMEM;
	return NULL;
}

uint64_t
ofb_ac_count(const struct ofb_ac *ac, const uint8_t *text, size_t text_len)
{
	const uint32_t *next = ac->next;
	const uint32_t *out = ac->out;
	uint64_t count = 0;
	uint32_t s = 0;

	for (size_t i = 0; i < text_len; i++) {
		s = next[(size_t)s * 256 + text[i]];
		count += out[s];
	}
	return count;
}

uint32_t
ofb_ac_states(const struct ofb_ac *ac)
{
	return ac->n_states;
}

void
ofb_ac_free(struct ofb_ac *ac)
{
	if (ac == NULL)
		return;
	free(ac->next);
	free(ac->out);
	free(ac);
}
