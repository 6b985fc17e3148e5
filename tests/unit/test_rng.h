/* test_rng.h - the unit tests' seeded random numbers (xorshift64).
 *
 * rng_seed() takes DSORT_TEST_SEED, or the time, and prints the seed so that a failure can be
 * replayed; rng_seed_value keeps it for failure messages. Include after <cmocka.h>. */
#ifndef DSORT_TEST_RNG_H
#define DSORT_TEST_RNG_H

#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static uint64_t rng_state, rng_seed_value;

static inline uint64_t rng_next(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static inline void rng_seed(void)
{
    const char *env = getenv("DSORT_TEST_SEED");
    uint64_t seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
    if (seed == 0)
        seed = 1;
    rng_seed_value = seed;
    rng_state = seed;
    print_message("random seed %" PRIu64 " (set DSORT_TEST_SEED to replay)\n", seed);
}

static inline void fill_random(unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(rng_next() >> 56);
}

#endif
