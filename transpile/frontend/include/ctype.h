#ifndef _TRANSPILE_CTYPE_H
#define _TRANSPILE_CTYPE_H
int isalnum(int c);
int isalpha(int c);
int isdigit(int c);
int isspace(int c);
int isupper(int c);
int islower(int c);
int isxdigit(int c);
int toupper(int c);
int tolower(int c);
#endif
