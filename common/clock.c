/* clock: monotonic time and precise sleeps. */
#include "common/clock.h"

#include <time.h>

#define SPIN_NS 60000

int64_t ordo__clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t ordo__clock_wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void ordo__clock_sleep_until(int64_t deadline_ns)
{
    int64_t now = ordo__clock_ns();
    if (deadline_ns - now > SPIN_NS) {
        int64_t target = deadline_ns - SPIN_NS;
        struct timespec ts = {.tv_sec = target / 1000000000, .tv_nsec = target % 1000000000};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {
        }
    }
    while (ordo__clock_ns() < deadline_ns) {
    }
}

void ordo__clock_sleep_ns(int64_t ns)
{
    if (ns > 0) ordo__clock_sleep_until(ordo__clock_ns() + ns);
}
