/* env.h - on/off switches read from the environment (env.c): the one rule
 * for the TJIT_* variables that override a measured default. */
#ifndef TJ_RT_ENV_H
#define TJ_RT_ENV_H

/* 1 or 0 where variable `name` is exactly "1" or "0"; -1 otherwise (unset,
 * empty or any other value: the caller's default). Read on every call, so
 * tests may flip the variable between calls. */
int rt_env_switch(const char *name);

#endif
