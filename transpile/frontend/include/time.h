#ifndef _TRANSPILE_TIME_H
#define _TRANSPILE_TIME_H
#include "_transpile_types.h"
typedef int clockid_t;
struct timespec { time_t tv_sec; long tv_nsec; };
struct tm {
  int tm_sec, tm_min, tm_hour, tm_mday, tm_mon, tm_year, tm_wday, tm_yday, tm_isdst;
};
#define CLOCKS_PER_SEC 1000000L
#define CLOCK_REALTIME 0
#define CLOCK_MONOTONIC 1
#define CLOCK_PROCESS_CPUTIME_ID 2
clock_t clock(void);
time_t time(time_t *t);
double difftime(time_t end, time_t start);
int clock_gettime(clockid_t id, struct timespec *ts);
int nanosleep(const struct timespec *req, struct timespec *rem);
struct tm *localtime(const time_t *t);
size_t strftime(char *s, size_t n, const char *fmt, const struct tm *tm);
#endif
