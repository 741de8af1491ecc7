/* tensor/rng.c — SplitMix64 (SPEC §6.7.1). One generator for init, dropout and
 * span masking, so a seed fixes every random bit of a run. */
#include "tensor/tensor.h"

#include <math.h>

Rng bertc_rng_seed(uint64_t seed)
{
    Rng r = {seed};
    return r;
}

uint64_t bertc_rng_next_u64(Rng *r)
{
    r->state += RNG_GAMMA;
    return rng_mix(r->state);
}

/* The top 53 bits, centred in their interval, so the result is never 0
 * (log(uniform()) is always finite). It can be 1: for m >= 2^52, m + 0.5
 * rounds to even, and m = 2^53 - 1 rounds up to 2^53. */
double bertc_rng_uniform_of(uint64_t u64)
{
    return ((double)(u64 >> 11) + 0.5) * 0x1p-53;
}

double bertc_rng_uniform(Rng *r)
{
    return bertc_rng_uniform_of(bertc_rng_next_u64(r));
}

/* Bisection for the first m that passes: the answer stays in (lo, hi]. For
 * m >= 2^52, m + 0.5 is a tie that rounds to even, so the uniform is
 * non-decreasing in m but not strictly increasing (m = 2^53 - 1 gives
 * exactly 1.0). */
uint64_t bertc_rng_uniform_threshold(double p)
{
    uint64_t hi = 1ull << 53; /* 2^53: no draw passes */
    if (bertc_rng_uniform_of(0) >= p)
        return 0;
    uint64_t lo = 0; /* known to fail */
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (bertc_rng_uniform_of(mid << 11) >= p)
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}

/* Number of failures before the first success of a Bernoulli(p) trial. */
int64_t bertc_rng_geometric(Rng *r, double p)
{
    return (int64_t)floor(log(bertc_rng_uniform(r)) / log1p(-p));
}

int64_t bertc_rng_randint(Rng *r, int64_t lo, int64_t hi)
{
    uint64_t span = (uint64_t)(hi - lo) + 1;
    return lo + (int64_t)(bertc_rng_next_u64(r) % span);
}

/* Box–Muller: two uniforms in (0,1) give one standard normal (the second
 * value of the pair is dropped to keep the stream simple to reproduce). */
double bertc_rng_normal(Rng *r)
{
    double u1 = bertc_rng_uniform(r);
    double u2 = bertc_rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
}
