#ifndef _TRANSPILE_STDARG_H
#define _TRANSPILE_STDARG_H
#include "_transpile_types.h"
#define va_start(ap, last) ((void)0)
#define va_arg(ap, type) (*(type *)(ap))
#define va_end(ap) ((void)0)
#define va_copy(dst, src) ((void)0)
#endif
