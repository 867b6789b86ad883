/* run_util: launching whole-cluster runs from tests and reading their output. */
#include "run_util.h"

#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_ARGS   64

static const char *env_or(const char *name, const char *fallback)
{
    const char *v = getenv(name);
    return v && *v ? v : fallback;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* waits for pid up to timeout_ms; on timeout stops its whole process group */
static int wait_or_kill(pid_t pid, int timeout_ms)
{
    int st;
    for (int waited = 0; waited < timeout_ms; waited += 20) {
        if (waitpid(pid, &st, WNOHANG) == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        sleep_ms(20);
    }
    fprintf(stderr, "run_util: ordo-launch ran past %d ms; stopping it\n", timeout_ms);
    kill(-pid, SIGTERM);
    for (int waited = 0; waited < 3000; waited += 20) {
        if (waitpid(pid, &st, WNOHANG) == pid) break;
        sleep_ms(20);
    }
    kill(-pid, SIGKILL);
    waitpid(pid, &st, 0);
    return 124;
}

/* runs ordo-launch on conf (written from conf_text when conf_text is set) */
static int launch(it_run_t *r, const char *conf_path, const char *conf_text, int timeout_s,
                  va_list ap)
{
    memset(r, 0, sizeof *r);
    snprintf(r->root, sizeof r->root, "/tmp/ordo-it-XXXXXX");
    if (!mkdtemp(r->root)) return r->status = -1;
    snprintf(r->dir, sizeof r->dir, "%s/run", r->root);
    snprintf(r->log, sizeof r->log, "%s/launch.log", r->root);
    char conf[1024], launcher[1024], bin[1100], outdir[600];
    if (conf_text) {
        snprintf(conf, sizeof conf, "%s/run.ini", r->root);
        FILE *f = fopen(conf, "w");
        if (!f) return r->status = -1;
        fputs(conf_text, f);
        fclose(f);
    } else {
        snprintf(conf, sizeof conf, "%s", conf_path);
    }
    snprintf(launcher, sizeof launcher, "%s/scripts/ordo-launch", env_or("ORDO_SOURCE_DIR", "."));
    snprintf(bin, sizeof bin, "--bin=%s", env_or("ORDO_BIN_DIR", "build/bin"));
    snprintf(outdir, sizeof outdir, "--output.dir=%s", r->root);
    char *argv[MAX_ARGS + 8];
    int n = 0;
    argv[n++] = "bash";
    argv[n++] = launcher;
    argv[n++] = conf;
    argv[n++] = bin;
    argv[n++] = outdir;
    argv[n++] = "--output.run=run";
    for (const char *a; n < MAX_ARGS && (a = va_arg(ap, const char *)) != NULL;)
        argv[n++] = (char *)a;
    argv[n] = NULL;

    pid_t pid = fork();
    if (pid < 0) return r->status = -1;
    if (pid == 0) {
        /* its own process group, so a run that hangs can be stopped whole */
        setpgid(0, 0);
        int out = open(r->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int in = open("/dev/null", O_RDONLY);
        if (out < 0 || in < 0) _exit(127);
        dup2(in, 0);
        dup2(out, 1);
        dup2(out, 2);
        execvp("bash", argv);
        _exit(127);
    }
    setpgid(pid, pid);
    r->status = wait_or_kill(pid, timeout_s * 1000);
    if (r->status != 0) {
        fprintf(stderr, "run_util: ordo-launch %s exited with %d\n", conf, r->status);
        it_run_print_log(r, 40);
    }
    return r->status;
}

int it_run_launch(it_run_t *r, const char *conf_text, int timeout_s, ...)
{
    va_list ap;
    va_start(ap, timeout_s);
    int rc = launch(r, NULL, conf_text, timeout_s, ap);
    va_end(ap);
    return rc;
}

int it_run_launch_file(it_run_t *r, const char *conf_file, int timeout_s, ...)
{
    char path[1024];
    if (conf_file[0] == '/')
        snprintf(path, sizeof path, "%s", conf_file);
    else
        snprintf(path, sizeof path, "%s/%s", env_or("ORDO_SOURCE_DIR", "."), conf_file);
    va_list ap;
    va_start(ap, timeout_s);
    int rc = launch(r, path, NULL, timeout_s, ap);
    va_end(ap);
    return rc;
}

const char *it_run_path(const it_run_t *r, const char *name)
{
    static char buf[4][1024];
    static int i;
    i = (i + 1) % 4;
    snprintf(buf[i], sizeof buf[i], "%s/%s", r->dir, name);
    return buf[i];
}

json_t *it_run_summary(const it_run_t *r)
{
    json_error_t err;
    json_t *o = json_load_file(it_run_path(r, "summary.json"), 0, &err);
    if (!o) fprintf(stderr, "summary.json: %s (line %d)\n", err.text, err.line);
    if (o && !json_is_object(o)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *it_run_metrics(const it_run_t *r)
{
    FILE *f = fopen(it_run_path(r, "metrics.jsonl"), "r");
    if (!f) return NULL;
    json_t *arr = json_array();
    char line[8192];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        json_error_t err;
        json_t *o = json_loads(line, 0, &err);
        if (!json_is_object(o)) {
            fprintf(stderr, "metrics.jsonl:%d: %s\n", lineno, o ? "not an object" : err.text);
            json_decref(o);
            json_decref(arr);
            arr = NULL;
            break;
        }
        json_array_append_new(arr, o);
    }
    fclose(f);
    return arr;
}

bool it_run_log_has(const it_run_t *r, const char *text)
{
    FILE *f = fopen(r->log, "r");
    if (!f) return false;
    char line[4096];
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, text) != NULL;
    fclose(f);
    return found;
}

void it_run_print_log(const it_run_t *r, int lines)
{
    char cmd[700];
    snprintf(cmd, sizeof cmd, "tail -n %d '%s' >&2", lines, r->log);
    if (system(cmd) != 0) fprintf(stderr, "(no log at %s)\n", r->log);
}

void it_run_destroy(it_run_t *r)
{
    if (!r->root[0] || getenv("ORDO_KEEP_RUNS")) return;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", r->root);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", r->root);
    r->root[0] = '\0';
}

double it_num(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}
