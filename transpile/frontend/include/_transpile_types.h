/* transpile fake libc: shared basic typedefs (LP64 data model).
   Minimal declarations, just enough for pycparser to parse programs that
   include the standard headers; nothing here is ever compiled. */
#ifndef _TRANSPILE_TYPES_H
#define _TRANSPILE_TYPES_H
typedef unsigned long size_t;
typedef long ssize_t;
typedef long ptrdiff_t;
typedef int wchar_t;
typedef long off_t;
typedef int pid_t;
typedef long time_t;
typedef long clock_t;
typedef long suseconds_t;
typedef unsigned int useconds_t;
typedef char *va_list;
typedef struct _transpile_FILE FILE;
#define NULL ((void *)0)
#endif
