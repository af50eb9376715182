/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * 24-bit PSN arithmetic (srnic_psn.h): wrap cases around 0 and 2^24 - 1,
 * the half-space boundary, and a random sweep against a reference written
 * from ROCEV2.md ("a is after b when ((a - b) << 8) > 0 as int32", i.e. the
 * 24-bit distance d = (a - b) mod 2^24 is in 1 .. 2^23 - 1).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "srnic_psn.h"

#define PSN_MAX 0xFFFFFFu
#define PSN_MOD 0x1000000u

/* Reference: signed distance from b to a, from the 24-bit modular distance. */
static int32_t
ref_diff(uint32_t a, uint32_t b)
{
	uint32_t d = (a - b) % PSN_MOD;

	return d < 0x800000u ? (int32_t)d : (int32_t)d - (int32_t)PSN_MOD;
}

static void
test_psn_add(void **state)
{
	(void)state;
	assert_int_equal(srnic_psn_add(0, 0), 0);
	assert_int_equal(srnic_psn_add(0, 1), 1);
	assert_int_equal(srnic_psn_add(PSN_MAX, 1), 0);
	assert_int_equal(srnic_psn_add(PSN_MAX, 2), 1);
	assert_int_equal(srnic_psn_add(PSN_MAX - 1, 5), 3);
	assert_int_equal(srnic_psn_add(0, PSN_MAX), PSN_MAX);
	assert_int_equal(srnic_psn_add(1, PSN_MAX), 0);
	assert_int_equal(srnic_psn_add(0x800000, 0x800000), 0);
	assert_int_equal(srnic_psn_add(0x7FFFFF, 1), 0x800000);
	assert_int_equal(srnic_psn_add(12345, PSN_MOD), 12345);       /* n of 2^24 is 0 */
	assert_int_equal(srnic_psn_add(12345, PSN_MOD + 7), 12352);
	/* a READ of 8 KiB at PMTU 4096 on PSN 2^24 - 1 reserves 2 PSNs: next is 1 */
	assert_int_equal(srnic_psn_add(PSN_MAX, 2), 1);
}

static void
test_psn_diff(void **state)
{
	(void)state;
	assert_int_equal(srnic_psn_diff(0, 0), 0);
	assert_int_equal(srnic_psn_diff(PSN_MAX, PSN_MAX), 0);
	assert_int_equal(srnic_psn_diff(0, PSN_MAX), 1);
	assert_int_equal(srnic_psn_diff(PSN_MAX, 0), -1);
	assert_int_equal(srnic_psn_diff(5, PSN_MAX - 4), 10);
	assert_int_equal(srnic_psn_diff(PSN_MAX - 4, 5), -10);
	assert_int_equal(srnic_psn_diff(0x7FFFFF, 0), 0x7FFFFF);
	assert_int_equal(srnic_psn_diff(0, 0x7FFFFF), -0x7FFFFF);
	/* exactly half the space apart: the int32 rule makes it "before" */
	assert_int_equal(srnic_psn_diff(0x800000, 0), -0x800000);
	assert_int_equal(srnic_psn_diff(0, 0x800000), -0x800000);
	assert_int_equal(srnic_psn_diff(0x800001, 0), -0x7FFFFF);
	assert_int_equal(srnic_psn_diff(0x7FFFFF + 3, 3), 0x7FFFFF);
	/* bits above 24 are ignored */
	assert_int_equal(srnic_psn_diff(PSN_MOD + 5, 5), 0);
	assert_int_equal(srnic_psn_diff(5, PSN_MOD + 4), 1);
}

static void
test_psn_cmp(void **state)
{
	(void)state;
	assert_int_equal(srnic_psn_cmp(7, 7), 0);
	assert_int_equal(srnic_psn_cmp(0, PSN_MAX), 1);
	assert_int_equal(srnic_psn_cmp(PSN_MAX, 0), -1);
	assert_int_equal(srnic_psn_cmp(3, PSN_MAX - 3), 1);
	assert_int_equal(srnic_psn_cmp(PSN_MAX - 3, 3), -1);
	assert_int_equal(srnic_psn_cmp(0x7FFFFF, 0), 1);
	assert_int_equal(srnic_psn_cmp(0x800000, 0), -1);
	assert_int_equal(srnic_psn_cmp(0x400000, 0xC00000), -1);
	assert_int_equal(srnic_psn_cmp(0xC00001, 0x400000), -1);
	assert_int_equal(srnic_psn_cmp(0xBFFFFF, 0x400000), 1);
}

static void
test_psn_window(void **state)
{
	(void)state;
	/* window [0xFFFFFE, 0xFFFFFE + 2) = { 0xFFFFFE, 0xFFFFFF } */
	assert_true(srnic_psn_in_window(PSN_MAX - 1, PSN_MAX - 1, 2));
	assert_true(srnic_psn_in_window(PSN_MAX, PSN_MAX - 1, 2));
	assert_false(srnic_psn_in_window(0, PSN_MAX - 1, 2));
	assert_true(srnic_psn_in_window(0, PSN_MAX - 1, 3));
	assert_false(srnic_psn_in_window(PSN_MAX - 2, PSN_MAX - 1, 3));
	/* crossing 0: [0xFFFFF0, 0x10) */
	assert_true(srnic_psn_in_window(0xFFFFF0, 0xFFFFF0, 0x20));
	assert_true(srnic_psn_in_window(0x0F, 0xFFFFF0, 0x20));
	assert_false(srnic_psn_in_window(0x10, 0xFFFFF0, 0x20));
	assert_false(srnic_psn_in_window(0xFFFFEF, 0xFFFFF0, 0x20));
	/* empty and single windows */
	assert_false(srnic_psn_in_window(5, 5, 0));
	assert_true(srnic_psn_in_window(5, 5, 1));
	assert_false(srnic_psn_in_window(6, 5, 1));
	assert_true(srnic_psn_in_window(0, 0, 1));
	assert_false(srnic_psn_in_window(PSN_MAX, 0, 1));
	/* the largest window the header allows: 2^23 - 1 */
	assert_true(srnic_psn_in_window(0x7FFFFD, PSN_MAX, 0x7FFFFF));
	assert_false(srnic_psn_in_window(0x7FFFFE, PSN_MAX, 0x7FFFFF));
}

static void
test_psn_random(void **state)
{
	uint32_t a, b, len, d;
	int i;

	(void)state;
	srand(20240601);
	for (i = 0; i < 200000; i++) {
		a = ((uint32_t)rand() << 8 ^ (uint32_t)rand()) & PSN_MAX;
		/* half of the pairs close together, so that the wrap is exercised */
		if (i & 1)
			b = (a + (uint32_t)(rand() % 512) - 256) & PSN_MAX;
		else
			b = ((uint32_t)rand() << 8 ^ (uint32_t)rand()) & PSN_MAX;
		assert_int_equal(srnic_psn_diff(a, b), ref_diff(a, b));
		assert_int_equal(srnic_psn_cmp(a, b),
				 ref_diff(a, b) > 0 ? 1 : (ref_diff(a, b) < 0 ? -1 : 0));
		assert_int_equal(srnic_psn_add(b, (uint32_t)ref_diff(a, b) & PSN_MAX), a);
		len = (uint32_t)rand() % 0x800000u;
		d = (a - b) % PSN_MOD;
		assert_int_equal(srnic_psn_in_window(a, b, len), d < len);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_psn_add),
		cmocka_unit_test(test_psn_diff),
		cmocka_unit_test(test_psn_cmp),
		cmocka_unit_test(test_psn_window),
		cmocka_unit_test(test_psn_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
