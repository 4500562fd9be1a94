/* env.c - on/off switches read from the environment (env.h). */
#include <stdlib.h>
#include <string.h>

#include "env.h"

int rt_env_switch(const char *name)
{
    const char *v = getenv(name);
    return v && (!strcmp(v, "0") || !strcmp(v, "1")) ? v[0] - '0' : -1;
}
