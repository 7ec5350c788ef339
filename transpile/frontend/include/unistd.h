#ifndef _TRANSPILE_UNISTD_H
#define _TRANSPILE_UNISTD_H
#include "_transpile_types.h"
unsigned int sleep(unsigned int seconds);
int usleep(useconds_t usec);
pid_t getpid(void);
long sysconf(int name);
int getopt(int argc, char *const argv[], const char *optstring);
extern char *optarg;
extern int optind;
ssize_t read(int fd, void *buf, size_t n);
ssize_t write(int fd, const void *buf, size_t n);
int close(int fd);
#define _SC_NPROCESSORS_ONLN 84
#endif
