/* plugin: finds and loads a plugin library once (common/plugin.h). */
#include "common/plugin.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool ordo__plugin_load(const ordo__plugin_t *p, const char *const *dirs, int n,
                       ordo__plugin_found_t *out, char *why, size_t why_size)
{
    memset(out, 0, sizeof *out);
    const char *env = getenv(p->env);
    out->from_env = env && env[0];
    if (out->from_env) {
        snprintf(out->path, sizeof out->path, "%s", env);
    } else {
        char tried[1024] = "";
        size_t used = 0;
        for (int i = 0; i < n && !out->path[0]; i++) {
            char path[sizeof out->path];
            struct stat st;
            if (!dirs[i][0]) { /* no folder known: the loader's search path */
                snprintf(out->path, sizeof out->path, "%s", p->file);
                break;
            }
            snprintf(path, sizeof path, "%s/%s", dirs[i], p->file);
            if (stat(path, &st) == 0)
                snprintf(out->path, sizeof out->path, "%s", path);
            else if (used < sizeof tried)
                used += (size_t)snprintf(tried + used, sizeof tried - used, "%s%s",
                                         used ? " and no " : "", path);
        }
        if (!out->path[0]) {
            snprintf(why, why_size, "%s (no %s; %s, or set %s to the plugin's path)",
                     p->missing, tried, p->hint, p->env);
            return false;
        }
    }
    out->dl = dlopen(out->path, RTLD_NOW | RTLD_LOCAL);
    if (!out->dl) {
        const char *err = dlerror();
        if (out->from_env)
            snprintf(why, why_size, "cannot load %s (%s): %s", out->path, p->env, err);
        else
            snprintf(why, why_size, "cannot load %s: %s", out->path, err);
        return false;
    }
    out->entry = dlsym(out->dl, p->entry);
    if (!out->entry) {
        snprintf(why, why_size, "%s: no %s in it", out->path, p->entry);
        ordo__plugin_unload(out);
        return false;
    }
    return true;
}

void ordo__plugin_unload(ordo__plugin_found_t *f)
{
    if (f->dl) dlclose(f->dl);
    f->dl = NULL;
    f->entry = NULL;
}

bool ordo__plugin_exe_dir(char *dir, size_t size, char *why, size_t why_size)
{
    ssize_t n = readlink("/proc/self/exe", dir, size - 1);
    if (n <= 0 || (size_t)n == size - 1) {
        dir[0] = '\0';
        snprintf(why, why_size, "/proc/self/exe: %s", n <= 0 ? strerror(errno) : "a path too long");
        return false;
    }
    dir[n] = '\0';
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    return true;
}

void ordo__plugin_dir_of(const void *addr, char *dir, size_t size)
{
    Dl_info info;
    const char *self = dladdr(addr, &info) && info.dli_fname ? info.dli_fname : "";
    const char *slash = strrchr(self, '/');
    snprintf(dir, size, "%.*s", slash ? (int)(slash - self) : 0, self);
}
