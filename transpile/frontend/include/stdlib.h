#ifndef _TRANSPILE_STDLIB_H
#define _TRANSPILE_STDLIB_H
#include "_transpile_types.h"
#define EXIT_SUCCESS 0
#define EXIT_FAILURE 1
#define RAND_MAX 2147483647
typedef struct { int quot; int rem; } div_t;
typedef struct { long quot; long rem; } ldiv_t;
void *malloc(size_t size);
void *calloc(size_t n, size_t size);
void *realloc(void *ptr, size_t size);
void *aligned_alloc(size_t align, size_t size);
int posix_memalign(void **ptr, size_t align, size_t size);
void free(void *ptr);
void exit(int status);
void abort(void);
int atexit(void (*fn)(void));
char *getenv(const char *name);
int system(const char *cmd);
int atoi(const char *s);
long atol(const char *s);
long long atoll(const char *s);
double atof(const char *s);
long strtol(const char *s, char **end, int base);
long long strtoll(const char *s, char **end, int base);
unsigned long strtoul(const char *s, char **end, int base);
double strtod(const char *s, char **end);
float strtof(const char *s, char **end);
int rand(void);
void srand(unsigned int seed);
double drand48(void);
void srand48(long seed);
int abs(int x);
long labs(long x);
long long llabs(long long x);
div_t div(int a, int b);
ldiv_t ldiv(long a, long b);
void qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));
void *bsearch(const void *key, const void *base, size_t n, size_t size,
              int (*cmp)(const void *, const void *));
#endif
