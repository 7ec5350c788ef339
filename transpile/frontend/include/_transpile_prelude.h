/* transpile fake libc: force-included before every file.  Hides GNU
   extension keywords that pycparser does not know. */
#ifndef _TRANSPILE_PRELUDE_H
#define _TRANSPILE_PRELUDE_H
#define __attribute__(x)
#define __attribute(x)
#define __extension__
#define __restrict restrict
#define __restrict__ restrict
#define __inline inline
#define __inline__ inline
#define __const const
#define __volatile__ volatile
#define __asm__(x)
#define __asm(x)
#define __declspec(x)
#define __builtin_expect(e, c) (e)
#endif
