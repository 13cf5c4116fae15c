/* Helpers of the MPI tests (tests/mpi, tests/soak, tests/faults; see mpitest.h). */
#include "mpitest.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mt_rank, mt_size;
char mt_host[MPI_MAX_PROCESSOR_NAME];
static const char *current = "setup";
static int corrupted;   /* the broken variant flips one byte per process */

void mt_init(int *argc, char ***argv)
{
	int len;

	setvbuf(stdout, NULL, _IOLBF, 0);
	MPI_Init(argc, argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &mt_size);
	MPI_Get_processor_name(mt_host, &len);
}

void mt_begin(const char *name) { current = name; }
const char *mt_test(void) { return current; }

void mt_fail(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "FAIL %s [rank %d of %d on %s]: %s\n", current, mt_rank, mt_size, mt_host, msg);
	fflush(stderr);
	MPI_Abort(MPI_COMM_WORLD, 1);
	exit(1);
}

const char *mt_errstr(int rc)
{
	static char s[MPI_MAX_ERROR_STRING + 32];
	char e[MPI_MAX_ERROR_STRING];
	int len = 0, cls = -1;

	MPI_Error_class(rc, &cls);
	e[0] = 0;
	MPI_Error_string(rc, e, &len);
	snprintf(s, sizeof(s), "error %d (class %d: %s)", rc, cls, e);
	return s;
}

int mt_broken(void)
{
	const char *want = getenv("MPITEST_CORRUPT");

	return want && *want && strstr(current, want);
}

/* One byte flipped in the first source buffer of a broken test. */
void mt_corrupt(void *buf, size_t len)
{
	if (len == 0 || corrupted || !mt_broken())
		return;
	corrupted = 1;
	((uint8_t *)buf)[len / 2] ^= 0x5a;
	fprintf(stderr, "MPITEST_CORRUPT: %s [rank %d]: flipped byte %zu of %zu\n",
		current, mt_rank, len / 2, len);
}

void mt_broken_by_test(void)
{
	if (mt_broken())
		corrupted = 1;
}

/* A 64-bit mix of (seed, word index); byte i is one byte of word i/8. */
static inline uint64_t mix(uint32_t seed, uint64_t w)
{
	uint64_t x = w * 0x9e3779b97f4a7c15ull + ((uint64_t)seed << 32 | seed) + 0x632be59bd9b4e019ull;

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 29;
	return x;
}

uint8_t mt_byte(uint32_t seed, size_t i)
{
	return (uint8_t)(mix(seed, i / 8) >> (i % 8 * 8));
}

void mt_fill(void *buf, size_t len, uint32_t seed)
{
	uint8_t *p = buf;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t x = mix(seed, i / 8);

		memcpy(p + i, &x, 8);   /* little endian: byte i%8 = bits 8*(i%8) */
	}
	for (; i < len; i++)
		p[i] = mt_byte(seed, i);
	mt_corrupt(buf, len);
}

/* What a checked buffer must hold: a constant, or a pattern slice. */
struct expect {
	int is_const;
	uint8_t c;
	uint32_t seed;
	size_t first;
};

static uint8_t expected(const struct expect *e, size_t i)
{
	return e->is_const ? e->c : mt_byte(e->seed, e->first + i);
}

/* Report the first difference, how many bytes differ and where the
 * last one is: enough to tell a shift from a stale page from a flip. */
static void report(const uint8_t *p, size_t len, size_t first, const struct expect *e, const char *what)
{
	size_t n = 0, last = first, i;

	for (i = first; i < len; i++)
		if (p[i] != expected(e, i)) {
			n++;
			last = i;
		}
	mt_fail("%s: %zu of %zu bytes differ, first at offset %zu (got 0x%02x, expected 0x%02x), last at %zu",
		what, n, len, first, p[first], expected(e, first), last);
}

static void check_bytes(const uint8_t *p, size_t from, size_t len, const struct expect *e, const char *what)
{
	size_t i;

	for (i = from; i < len; i++)
		if (p[i] != expected(e, i))
			report(p, len, i, e, what);
}

void mt_check(const void *buf, size_t len, uint32_t seed, const char *what)
{
	struct expect e = { .seed = seed };
	const uint8_t *p = buf;
	size_t i = 0;

	/* a word at a time while all is well (TCG guests are slow) */
	for (; i + 8 <= len; i += 8) {
		uint64_t x = mix(seed, i / 8), y;

		memcpy(&y, p + i, 8);
		if (x != y)
			break;
	}
	check_bytes(p, i, len, &e, what);
}

void mt_check_from(const void *buf, size_t len, uint32_t seed, size_t first, const char *what)
{
	struct expect e = { .seed = seed, .first = first };

	check_bytes(buf, 0, len, &e, what);
}

void mt_check_const(const void *buf, size_t len, uint8_t c, const char *what)
{
	struct expect e = { .is_const = 1, .c = c };

	check_bytes(buf, 0, len, &e, what);
}

int mt_ival(uint32_t seed, size_t i)
{
	return (int)(mix(seed ^ 0x5bd1e995u, i) % 2001) - 1000;
}

void mt_fill_ints(int *buf, size_t n, uint32_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		buf[i] = mt_ival(seed, i);
	mt_corrupt(buf, n * sizeof(int));
}

void mt_check_ints(const int *got, const int *expect, size_t n, const char *what)
{
	size_t i, bad = 0, first = 0;

	for (i = 0; i < n; i++)
		if (got[i] != expect[i] && bad++ == 0)
			first = i;
	if (bad)
		mt_fail("%s: %zu of %zu ints differ, first at index %zu (got %d, expected %d)",
			what, bad, n, first, got[first], expect[first]);
}

void *mt_alloc(size_t len)
{
	void *p = malloc(len ? len : 1);

	MT_CHECK(p, "malloc(%zu) failed", len);
	return p;
}

size_t mt_parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	}
	if (end == s || *end) {
		fprintf(stderr, "bad size '%s'\n", s);
		exit(2);
	}
	return v;
}
