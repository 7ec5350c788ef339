/* assert() is a no-op here: kernels are transpiled, never run on the host. */
#ifndef _TRANSPILE_ASSERT_H
#define _TRANSPILE_ASSERT_H
#define assert(e) ((void)0)
#define static_assert _Static_assert
#endif
