#ifndef _TRANSPILE_STRINGS_H
#define _TRANSPILE_STRINGS_H
#include <string.h>
int strcasecmp(const char *a, const char *b);
#endif
