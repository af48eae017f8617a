/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memchase: how much cache the host really gives a working set of N MiB.
 *
 * A pointer chase over a random cyclic permutation of the 64-byte lines of N MiB (2 MiB
 * hugepages when the host has free ones, else THP-advised pages): every load depends on the
 * one before, so ns per load is the latency of wherever those lines live (L2, the L3 share
 * this host/VM gets, DRAM).  The switch benchmark runs it beside its records: on a VM whose
 * L3 is shared with neighbours, a working set that fits at one moment misses at another,
 * and the forwarding rate of a large-frame-set workload follows.
 *
 * Usage: memchase --cpu C --mib N[,N...] [--loads L] [--reps R]
 * Prints one JSON line: {"cpu": C, "pages": "hugetlb"|"thp", "sizes": [{"mib": N,
 *   "ns_per_load": median, "ns_best": min, "ns_runs": [...]}, ...]}
 * Exit 2 on bad arguments (message on stderr), 1 when memory cannot be had.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define MAX_SIZES 16
#define MAX_REPS 15

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng(void)  /* xorshift64* */
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1Dull;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void *get_memory(size_t bytes, const char **kind)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	if (p != MAP_FAILED) {
		*kind = "hugetlb";
		return p;
	}
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	madvise(p, bytes, MADV_HUGEPAGE);
	*kind = "thp";
	return p;
}

static void usage(const char *why)
{
	fprintf(stderr, "memchase: %s\nusage: memchase --cpu C --mib N[,N...] [--loads L] [--reps R]\n",
		why);
	exit(2);
}

int main(int argc, char **argv)
{
	int cpu = -1, reps = 5, n_sizes = 0;
	long loads = 5000000;
	size_t mib[MAX_SIZES];
	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(argv[i], "--cpu") && v) {
			cpu = atoi(v);
			i++;
		} else if (!strcmp(argv[i], "--loads") && v) {
			loads = atol(v);
			i++;
		} else if (!strcmp(argv[i], "--reps") && v) {
			reps = atoi(v);
			i++;
		} else if (!strcmp(argv[i], "--mib") && v) {
			char *s = strdup(v), *save = NULL;
			for (char *t = strtok_r(s, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
				char *end;
				long m = strtol(t, &end, 10);
				if (*end || m < 1 || m > 4096 || n_sizes == MAX_SIZES)
					usage("--mib: sizes 1..4096 MiB, at most 16");
				mib[n_sizes++] = (size_t)m;
			}
			free(s);
			i++;
		} else {
			usage("unknown or incomplete argument");
		}
	}
	if (!n_sizes)
		usage("--mib is required");
	if (reps < 1 || reps > MAX_REPS || loads < 1000)
		usage("--reps 1..15, --loads >= 1000");
	if (cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set)) {
			fprintf(stderr, "memchase: cpu %d: %s\n", cpu, strerror(errno));
			return 2;
		}
	}
	const char *kind = "hugetlb";
	printf("{\"cpu\": %d, \"sizes\": [", cpu);
	for (int s = 0; s < n_sizes; s++) {
		size_t bytes = mib[s] << 20, n = bytes / 64;
		char *mem = get_memory(bytes, &kind);
		uint32_t *perm = malloc(n * sizeof(*perm));
		if (!mem || !perm) {
			fprintf(stderr, "memchase: %zu MiB: no memory\n", mib[s]);
			return 1;
		}
		for (size_t i = 0; i < n; i++)
			perm[i] = (uint32_t)i;
		for (size_t i = n - 1; i > 0; i--) {
			size_t j = rng() % (i + 1);
			uint32_t t = perm[i];
			perm[i] = perm[j];
			perm[j] = t;
		}
		for (size_t i = 0; i < n; i++)
			*(void **)(mem + (size_t)perm[i] * 64) = mem + (size_t)perm[(i + 1) % n] * 64;
		free(perm);
		void **q = (void **)mem;
		for (size_t i = 0; i < 2 * n; i++)  /* warm: every line once, twice */
			q = *q;
		double runs[MAX_REPS], sorted[MAX_REPS];
		for (int r = 0; r < reps; r++) {
			double t0 = now_s();
			for (long i = 0; i < loads; i++)
				q = *q;
			runs[r] = (now_s() - t0) * 1e9 / (double)loads;
			sorted[r] = runs[r];
		}
		qsort(sorted, (size_t)reps, sizeof(double), cmp_double);
		printf("%s{\"mib\": %zu, \"ns_per_load\": %.2f, \"ns_best\": %.2f, \"ns_runs\": [", s ? ", " : "",
		       mib[s], sorted[(reps - 1) / 2], sorted[0]);
		for (int r = 0; r < reps; r++)
			printf("%s%.2f", r ? ", " : "", runs[r]);
		printf("], \"sink\": %u}", (unsigned)((uintptr_t)q & 1));
		munmap(mem, bytes);
	}
	printf("], \"pages\": \"%s\"}\n", kind);
	return 0;
}
