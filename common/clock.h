/* clock: monotonic time in nanoseconds and precise sleeps (used by emulated compute and
 * link pacing, which must be accurate to tens of microseconds). */
#ifndef ORDO_CLOCK_H
#define ORDO_CLOCK_H

#include <stdint.h>

/* ordo__clock_ns returns CLOCK_MONOTONIC in nanoseconds. */
int64_t ordo__clock_ns(void);

/* ordo__clock_wall_us returns wall-clock time (CLOCK_REALTIME) in microseconds. */
int64_t ordo__clock_wall_us(void);

/* ordo__clock_sleep_until sleeps until monotonic time deadline_ns: the kernel sleeps most of
 * the way and the last ~60 us are spun, so the wake-up error stays near a few microseconds. */
void ordo__clock_sleep_until(int64_t deadline_ns);

/* ordo__clock_sleep_ns sleeps for ns nanoseconds with ordo__clock_sleep_until's precision. */
void ordo__clock_sleep_ns(int64_t ns);

#endif
