#ifndef _TRANSPILE_STDDEF_H
#define _TRANSPILE_STDDEF_H
#include "_transpile_types.h"
#define offsetof(type, member) ((size_t) & ((type *)0)->member)
#endif
