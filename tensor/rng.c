/* tensor/rng.c — SplitMix64 (SPEC §6.7.1). One generator for init, dropout and
 * span masking, so a seed fixes every random bit of a run. */
#include "tensor/tensor.h"

#include <math.h>

Rng rng_seed(uint64_t seed)
{
    Rng r = {seed};
    return r;
}

uint64_t rng_next_u64(Rng *r)
{
    r->state += 0x9E3779B97F4A7C15ull;
    uint64_t z = r->state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* The top 53 bits, centred in their interval, so the result is never 0 or 1
 * (log(uniform()) is always finite). */
double rng_uniform(Rng *r)
{
    return ((double)(rng_next_u64(r) >> 11) + 0.5) * 0x1p-53;
}

/* Number of failures before the first success of a Bernoulli(p) trial. */
int64_t rng_geometric(Rng *r, double p)
{
    return (int64_t)floor(log(rng_uniform(r)) / log1p(-p));
}

int64_t rng_randint(Rng *r, int64_t lo, int64_t hi)
{
    uint64_t span = (uint64_t)(hi - lo) + 1;
    return lo + (int64_t)(rng_next_u64(r) % span);
}

/* Box–Muller: two uniforms in (0,1) give one standard normal (the second
 * value of the pair is dropped to keep the stream simple to reproduce). */
double rng_normal(Rng *r)
{
    double u1 = rng_uniform(r);
    double u2 = rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
}
