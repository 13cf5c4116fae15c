/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the nicd fuzzers share: fuzzed bytes read as numbers, and a clock
 * that moves 100 us per reading, so fault timeouts happen quickly and
 * the same input does the same thing.
 */
#ifndef NIC_FUZZ_INPUT_H
#define NIC_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>

struct in {
	const uint8_t *p;
	size_t n;
};

/* The next BYTES bytes, big-endian; zeros once the input is used up. */
static inline uint64_t take(struct in *in, int bytes)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < bytes; i++) {
		v <<= 8;
		if (in->n) {
			v |= *in->p++;
			in->n--;
		}
	}
	return v;
}

static uint64_t fake_ns;

static inline uint64_t fake_now(void)
{
	fake_ns += 100000;
	return fake_ns;
}

#endif
