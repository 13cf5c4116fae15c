/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ioproc_test: a pretend NIC for the IOPROC selftest.
 *
 * The module keeps a shadow translation table for the process that
 * attached, as a NIC MMU would: ioproc_load() fills it (IOPROC_TEST_LOAD,
 * and update hooks when preload is on), invalidate hooks remove entries,
 * change_protection downgrades them, release clears them.  CHECK compares
 * every shadow entry with the live page table under its lock: an entry
 * whose frame differs from the PTE's, or whose PTE is gone, is stale; one
 * that allows writing where the PTE is read-only or clean is over-permissive.
 * PUT and GET move data through the shadow, the way the NIC DMAs.
 */
#ifndef IOPROC_TEST_H
#define IOPROC_TEST_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define IOPROC_TEST_DEV "/dev/ioproc_test"

/* Hook classes, as counted in ioproc_test_stats.calls[]. */
enum ioproc_test_hook {
	IOPROC_HOOK_RELEASE,
	IOPROC_HOOK_SYNC_RANGE,
	IOPROC_HOOK_INVALIDATE_RANGE,
	IOPROC_HOOK_UPDATE_RANGE,
	IOPROC_HOOK_CHANGE_PROTECTION,
	IOPROC_HOOK_SYNC_PAGE,
	IOPROC_HOOK_INVALIDATE_PAGE,
	IOPROC_HOOK_UPDATE_PAGE,
	IOPROC_HOOK_NR
};

/* Bits of the module parameter skip_hooks: ignore a hook class (broken NIC). */
#define IOPROC_SKIP_INVALIDATE	(1u << 0)	/* invalidate_range/page */
#define IOPROC_SKIP_PROTECTION	(1u << 1)	/* change_protection */
#define IOPROC_SKIP_RELEASE	(1u << 2)

struct ioproc_test_range {
	__u64 addr;		/* page aligned */
	__u64 len;		/* bytes, page multiple; 0 with addr 0 = all */
	__u32 write;		/* LOAD: want writable translations */
	__u32 pad;
	__u64 done;		/* out: pages loaded */
};

struct ioproc_test_check {
	__u64 addr;		/* range to check; 0,0 = every entry */
	__u64 len;
	__u64 checked;		/* out: shadow entries compared */
	__u64 stale;		/* out: frame differs or PTE gone */
	__u64 overperm;		/* out: writable in shadow, not in PTE */
	__u64 first_bad;	/* out: address of the first bad entry */
};

struct ioproc_test_xfer {
	__u64 addr;		/* user address in the attached mm */
	__u64 len;
	__u64 buf;		/* PUT: source, GET: destination (caller's) */
	__s32 error;		/* out: 0 or -errno of the translation fault */
	__u32 pad;
};

struct ioproc_test_stats {
	__u64 calls[IOPROC_HOOK_NR];
	__u64 entries;		/* shadow entries now */
	__u64 loads;		/* translations loaded by LOAD/PUT/GET */
	__u64 preloads;		/* translations loaded by update hooks */
	__u64 faults;		/* fixup_user_fault calls */
	__u64 released;		/* release hook ran */
	__u64 inflight_waiting;	/* an invalidate hook waits to land a write */
	__u64 inflight_landed;	/* pages written by invalidate hooks */
	__u64 inflight_seen_clean; /* of those, pages writeback had cleaned */
	__u64 dma_waits;	/* hooks that waited for a PUT/GET in flight */
	__u64 dma_wait_timeouts; /* hooks whose wait for one ran out */
	__u64 xfer_paused;	/* a PUT/GET waits at pause_addr now */
	__u64 blocks;		/* THP blocks loaded whole (module param huge) */
};

/*
 * With wait_ms set, invalidate hooks wait (a bounded spin) for every PUT
 * or GET in flight over their range, as a NIC's shootdown waits for its
 * DMA, except for one parked on a translation fault: servicing that fault
 * may need the very page table lock the hook runs under.  A PUT or GET
 * reaching pause_addr waits there (once, at most 2 s) until a hook waits
 * for it, so a test can put the two in that order.
 */
struct ioproc_test_dma_wait {
	__u32 wait_ms;		/* 0: hooks do not wait for PUT/GET */
	__u32 pad;
	__u64 pause_addr;	/* page aligned; 0: no pause */
};

/*
 * A NIC write in flight through the write translations of a range: the
 * invalidate hook that removes one lets the write land before it returns,
 * as a shootdown waits for the DMA using the entry.  To land it as late as
 * a real NIC might, the hook first waits (a bounded spin, at most wait_ms
 * for the whole hook) for writeback to clean the page and write it out.
 * len 0 disarms.
 */
struct ioproc_test_inflight {
	__u64 addr;		/* page aligned */
	__u64 len;		/* page multiple, at most 1 MiB */
	__u64 buf;		/* what the NIC writes there */
	__u32 wait_ms;
	__u32 pad;
};

#define IOPROC_TEST_MAGIC	0xE1
/* Register ioproc_ops on the caller's mm (once per open file). */
#define IOPROC_TEST_ATTACH	_IO(IOPROC_TEST_MAGIC, 1)
/* Fault in and load translations for a range, as NIC faults would. */
#define IOPROC_TEST_LOAD	_IOWR(IOPROC_TEST_MAGIC, 2, struct ioproc_test_range)
/* Preload through update hooks for this range (len 0: off). */
#define IOPROC_TEST_PRELOAD	_IOW(IOPROC_TEST_MAGIC, 3, struct ioproc_test_range)
#define IOPROC_TEST_CHECK	_IOWR(IOPROC_TEST_MAGIC, 4, struct ioproc_test_check)
#define IOPROC_TEST_STATS	_IOR(IOPROC_TEST_MAGIC, 5, struct ioproc_test_stats)
/* Copy through the shadow translations (load on a miss), like NIC DMA. */
#define IOPROC_TEST_PUT		_IOWR(IOPROC_TEST_MAGIC, 6, struct ioproc_test_xfer)
#define IOPROC_TEST_GET		_IOWR(IOPROC_TEST_MAGIC, 7, struct ioproc_test_xfer)
/* Unregister (what close does too). */
#define IOPROC_TEST_DETACH	_IO(IOPROC_TEST_MAGIC, 8)
#define IOPROC_TEST_INFLIGHT	_IOW(IOPROC_TEST_MAGIC, 9, struct ioproc_test_inflight)
#define IOPROC_TEST_DMA_WAIT	_IOW(IOPROC_TEST_MAGIC, 10, struct ioproc_test_dma_wait)

/*
 * Follow mode: the pretend NIC on every process started under the caller
 * (its descendants, across fork and exec).  A kernel thread registers a
 * context on each new mm, preloads every PTE the process establishes
 * (update hooks), and CHECKs every entry of every followed mm each
 * interval_ms.  on 1: start; 2: counts so far; 0: a last pass, stop, and
 * the counts.  Closing the file that started it stops it too.
 */
struct ioproc_test_follow {
	__u32 on;
	__u32 interval_ms;	/* in, for on 1; default 100 */
	__u64 mms;		/* out: mms followed */
	__u64 passes;		/* out: CHECK passes over all of them */
	__u64 preloads;		/* out: translations loaded (stopped mms) */
	__u64 blocks;		/* out: of them, THP blocks held whole */
	__u64 checked;		/* out: entries compared, all passes */
	__u64 stale;
	__u64 overperm;
};
#define IOPROC_TEST_FOLLOW	_IOWR(IOPROC_TEST_MAGIC, 11, struct ioproc_test_follow)

#endif /* IOPROC_TEST_H */
