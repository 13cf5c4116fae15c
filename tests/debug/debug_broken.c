// SPDX-License-Identifier: GPL-2.0
/*
 * debug_broken.ko: the deliberately broken variant of the debug stage.
 * Loaded with parameters it commits, on purpose, the kernel bugs the
 * stage's log scanner must report; loaded without any it does nothing.
 *
 *   lockdep=1  take two mutexes in the order A, B and later B, A: no
 *              deadlock in one thread, but lockdep reports "possible
 *              circular locking dependency"
 *   leak=1     kmalloc an object and drop the only pointer to it: the
 *              next kmemleak scan reports an "unreferenced object"
 *   oob=1      read one byte past the end of a kmalloc'd object, then
 *              of a vmalloc'd one: "BUG: KASAN: slab-out-of-bounds" and
 *              "BUG: KASAN: vmalloc-out-of-bounds" (CONFIG_KASAN_VMALLOC;
 *              both need kasan_multi_shot)
 *
 * lockdep runs first: a KASAN report taints the kernel with
 * LOCKDEP_NOW_UNRELIABLE, which turns lockdep off.
 */
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

static bool lockdep;
module_param(lockdep, bool, 0444);
MODULE_PARM_DESC(lockdep, "take two mutexes in both orders (lockdep report)");

static bool leak;
module_param(leak, bool, 0444);
MODULE_PARM_DESC(leak, "leak a kmalloc'd object (kmemleak report)");

static bool oob;
module_param(oob, bool, 0444);
MODULE_PARM_DESC(oob, "read past a kmalloc'd and a vmalloc'd object (KASAN reports)");

static DEFINE_MUTEX(debug_broken_a);
static DEFINE_MUTEX(debug_broken_b);

/*
 * Where the leaked pointer lives until it is dropped; a global, so that
 * the compiler cannot drop the allocation itself.
 */
static void *debug_broken_obj;

/* Not inlined: the out-of-bounds index must not be seen as a constant. */
static noinline char debug_broken_read(const char *p, size_t i)
{
	return READ_ONCE(p[i]);
}

static int __init debug_broken_init(void)
{
	if (lockdep) {
		mutex_lock(&debug_broken_a);
		mutex_lock(&debug_broken_b);
		mutex_unlock(&debug_broken_b);
		mutex_unlock(&debug_broken_a);

		mutex_lock(&debug_broken_b);
		mutex_lock(&debug_broken_a);
		mutex_unlock(&debug_broken_a);
		mutex_unlock(&debug_broken_b);
		pr_info("debug_broken: took mutexes A, B and B, A\n");
	}
	if (leak) {
		debug_broken_obj = kmalloc(200, GFP_KERNEL);
		if (!debug_broken_obj)
			return -ENOMEM;
		memset(debug_broken_obj, 0x5a, 200);
		WRITE_ONCE(debug_broken_obj, NULL);
		pr_info("debug_broken: leaked a 200-byte object\n");
	}
	if (oob) {
		size_t size = 13;
		char *p = kmalloc(size, GFP_KERNEL);
		char c;

		if (!p)
			return -ENOMEM;
		c = debug_broken_read(p, size);
		kfree(p);
		pr_info("debug_broken: read byte %zu of a %zu-byte object (%d)\n",
			size, size, c);
		p = vmalloc(size);
		if (!p)
			return -ENOMEM;
		c = debug_broken_read(p, size);
		vfree(p);
		pr_info("debug_broken: read byte %zu of a %zu-byte vmalloc'd object (%d)\n",
			size, size, c);
	}
	return 0;
}

static void __exit debug_broken_exit(void)
{
}

module_init(debug_broken_init);
module_exit(debug_broken_exit);
MODULE_DESCRIPTION("Deliberate lockdep, kmemleak and KASAN bugs for the debug stage");
MODULE_LICENSE("GPL");
