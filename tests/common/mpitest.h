/* Helpers shared by the MPI programs of the tests (the correctness suite
 * and the OSU-style benchmarks of tests/mpi, tests/soak's soak,
 * tests/faults' fault_mpi): failing loudly, data patterns and their
 * byte-for-byte checks, the deliberate-breakage switch, sizes. */
#ifndef MPITEST_H
#define MPITEST_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

extern int mt_rank, mt_size;
extern char mt_host[MPI_MAX_PROCESSOR_NAME];

/* MPI_Init plus rank, size, host; stdout line-buffered so that the
 * lines of the ranks interleave whole. */
void mt_init(int *argc, char ***argv);

/* Names the subtest running now (for failure messages and for the
 * MPITEST_CORRUPT switch). */
void mt_begin(const char *name);
const char *mt_test(void);

/* Print "FAIL <test> [rank r on host]: message" on stderr and abort the
 * whole job (mpirun then exits non-zero). */
void mt_fail(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
#define MT_CHECK(cond, ...) do { if (!(cond)) mt_fail(__VA_ARGS__); } while (0)
/* An MPI call that must succeed, named in the message if it does not. */
#define MT_MPI(call) do { int mt_rc_ = (call); \
	if (mt_rc_ != MPI_SUCCESS) mt_fail("%s returned %s", #call, mt_errstr(mt_rc_)); } while (0)
const char *mt_errstr(int rc);

/* The deliberately broken variant: with MPITEST_CORRUPT=SUBSTRING in the
 * environment, the first source buffer filled by a subtest whose name
 * contains SUBSTRING gets one byte flipped (after the fill, so the
 * corruption crosses the wire like a transport bug would), and
 * mt_broken() is true in it (tests of error paths use it to take the
 * wrong branch).  The suite must then fail, naming that test. */
int mt_broken(void);
/* The flip itself, for source data not made by mt_fill*. */
void mt_corrupt(void *buf, size_t len);
/* A subtest with a breakage of its own: no byte flip in this process. */
void mt_broken_by_test(void);

/* Byte patterns: byte i of pattern SEED.  Different seeds and offsets
 * give different bytes, so stale, shifted or misplaced data shows. */
uint8_t mt_byte(uint32_t seed, size_t i);
void mt_fill(void *buf, size_t len, uint32_t seed);         /* source data */
void mt_check(const void *buf, size_t len, uint32_t seed, const char *what);
/* buf[i] must be byte FIRST + i of pattern SEED (a slice of a pattern). */
void mt_check_from(const void *buf, size_t len, uint32_t seed, size_t first, const char *what);
/* Same for a constant byte (guards, zeros). */
void mt_check_const(const void *buf, size_t len, uint8_t c, const char *what);

/* Integer patterns for reductions: small values (|v| <= 1000) so that
 * sums over the ranks never overflow. */
int mt_ival(uint32_t seed, size_t i);
void mt_fill_ints(int *buf, size_t n, uint32_t seed);       /* source data */
void mt_check_ints(const int *got, const int *expect, size_t n, const char *what);

/* malloc that fails loudly. */
void *mt_alloc(size_t len);

/* Parse "123", "4K", "64M", "1G". */
size_t mt_parse_size(const char *s);

#endif
