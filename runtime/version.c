/* version.c - tj_version(): the library's version at run time, so a program
 * can tell the libtjit.so it runs against from the header it was built with
 * (TJ_VERSION). */
#include "rt.h"

const char *tj_version(void) { return TJ_VERSION; }
