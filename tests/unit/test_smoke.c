#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <bloomgate/bloomgate.h>

static void golden_sizing(void **state)
{
    (void)state;
    bg_sizing s = {.n = 1000, .p = 0.01};
    assert_int_equal(bg_sizing_solve(BG_VARIANT_STANDARD, &s, 0), BG_OK);
    assert_int_equal(s.m, 9586);
    assert_int_equal(s.k, 7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(golden_sizing)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
