/* plugin: finds and loads a plugin library once, the way ordo's backends that need the CUDA
 * toolkit come (the cuda compute backend, worker/compute_backend.h; the NCCL intra backend,
 * client/intra.h): a process that never asks for one never maps cudart. A plugin is found at
 * the path its environment variable names, else in the first of the caller's folders that
 * holds its file; it stays loaded (CUDA and NCCL do not survive being unloaded). Each caller
 * checks its own entry's ABI and keeps the table the entry returns. */
#ifndef ORDO_PLUGIN_H
#define ORDO_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>

typedef struct ordo__plugin {
    const char *file;    /* its file name: "libordo_nccl.so" */
    const char *env;     /* the variable that names its path instead: "ORDO_NCCL_PLUGIN" */
    const char *entry;   /* the function it exports */
    const char *missing; /* what a user without it is told: "the cuda backend is not
                          * installed" */
    const char *hint;    /* and how to get it: "it is built where CMake finds the CUDA
                          * toolkit" */
} ordo__plugin_t;

typedef struct ordo__plugin_found {
    void *dl;         /* its handle (ordo__plugin_unload when its entry refuses this host) */
    void *entry;      /* its entry function */
    char path[1200];  /* the file loaded */
    bool from_env;    /* named by p->env */
} ordo__plugin_found_t;

/* ordo__plugin_load loads p: from the file $p->env names, else from the first of dirs[0..n)
 * that holds p->file (an empty folder: the loader's search path). false, with why (why_size bytes) saying what was looked at and what
 * failed (no such file, the loader's error, no entry), when it cannot. */
bool ordo__plugin_load(const ordo__plugin_t *p, const char *const *dirs, int n,
                       ordo__plugin_found_t *out, char *why, size_t why_size);

/* ordo__plugin_unload unloads a plugin whose entry refused this host (another ABI). */
void ordo__plugin_unload(ordo__plugin_found_t *f);

/* ordo__plugin_exe_dir writes the folder of the running program into dir (size bytes);
 * false, with why and dir "", when /proc/self/exe cannot be read. */
bool ordo__plugin_exe_dir(char *dir, size_t size, char *why, size_t why_size);

/* ordo__plugin_dir_of writes the folder of the loaded object that holds addr (a shared
 * library, or the program that links it statically) into dir; "" when it has none. */
void ordo__plugin_dir_of(const void *addr, char *dir, size_t size);

#endif
