// SPDX-License-Identifier: GPL-2.0
/*
 * srx_warn_test - a module whose only job is to make the kernel warn.
 *
 * selftests/vm/runner_test.sh inserts it in a guest to prove that
 * tools/vm/run fails a run (exit 120) when the kernel logs a WARNING, even
 * though the command itself succeeds. Loading it taints the kernel W (and O,
 * E); unloading it does nothing.
 */
#include <linux/bug.h>
#include <linux/module.h>

static int __init srx_warn_test_init(void)
{
	WARN_ON(1);
	return 0;
}

static void __exit srx_warn_test_exit(void)
{
}

module_init(srx_warn_test_init);
module_exit(srx_warn_test_exit);

MODULE_DESCRIPTION("srx selftest: WARN_ON(1) at load, to check the VM runner catches it");
MODULE_LICENSE("GPL");
