#ifndef _TRANSPILE_SYS_TYPES_H
#define _TRANSPILE_SYS_TYPES_H
#include "../_transpile_types.h"
typedef unsigned int uid_t;
typedef unsigned int gid_t;
typedef unsigned int mode_t;
#endif
