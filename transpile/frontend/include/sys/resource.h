#ifndef _TRANSPILE_SYS_RESOURCE_H
#define _TRANSPILE_SYS_RESOURCE_H
#include <sys/time.h>
struct rusage { struct timeval ru_utime; struct timeval ru_stime; long ru_maxrss; };
#define RUSAGE_SELF 0
int getrusage(int who, struct rusage *usage);
#endif
