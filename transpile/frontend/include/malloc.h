#ifndef _TRANSPILE_MALLOC_H
#define _TRANSPILE_MALLOC_H
#include <stdlib.h>
void *memalign(size_t align, size_t size);
#endif
