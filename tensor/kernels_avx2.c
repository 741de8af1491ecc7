/* tensor/kernels_avx2.c — the row kernels on 8-lane AVX2+FMA registers.
 * Each mirrors its scalar reference in tensor/kernels.c line for line (read
 * that file for the math); elements past the last full vector go through the
 * scalar code. Sums are kept in float, one partial sum per lane, which for
 * n = 3072 means 384 terms per lane; test/test_kernels_simd.c bounds the
 * difference to the scalar reference (which sums in double). */
#if defined(__x86_64__) && defined(__GNUC__)
#include "tensor/kernels_internal.h"

#include <math.h>

#define W 8 /* floats per register */

BERTC_TARGET_AVX2 static __m256 splat(float v)
{
    return _mm256_set1_ps(v);
}

/* Horizontal sum and max of the 8 lanes, as a pairwise tree. */
BERTC_TARGET_AVX2 static float hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

BERTC_TARGET_AVX2 static float hmax(__m256 v)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

/* p[j..j+W) or, when p is NULL, the value `dflt` in every lane. */
BERTC_TARGET_AVX2 static __m256 load_or(const float *p, int64_t j, float dflt)
{
    return p ? _mm256_loadu_ps(p + j) : splat(dflt);
}

/* dx[j..j+W) to add to, or zeros when dx is written afresh (accumulate false:
 * dx is not read). */
BERTC_TARGET_AVX2 static __m256 dx_base(const float *dx, int64_t j, bool accumulate)
{
    return accumulate ? _mm256_loadu_ps(dx + j) : _mm256_setzero_ps();
}

/* ---- GELU ------------------------------------------------------------------ */

/* x, y are (n): y = 0.5 x (1 + erf(x / sqrt 2)). */
BERTC_TARGET_AVX2 static void gelu(float *y, const float *x, int64_t n)
{
    int64_t i = 0;
    for (; i + W <= n; i += W) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m256 e = bertc_erff_avx2(_mm256_mul_ps(v, splat(GELU_SQRT1_2)));
        _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_mul_ps(splat(0.5f), v),
                                              _mm256_add_ps(splat(1.0f), e)));
    }
    bertc_kernel_gelu_scalar(y + i, x + i, n - i);
}

/* dx += dy (Phi(x) + x phi(x)). */
BERTC_TARGET_AVX2 static void bertc_gelu_backward(float *dx, const float *x, const float *dy,
                                              int64_t n, bool accumulate)
{
    int64_t i = 0;
    for (; i + W <= n; i += W) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m256 e = bertc_erff_avx2(_mm256_mul_ps(v, splat(GELU_SQRT1_2)));
        __m256 cdf = _mm256_mul_ps(splat(0.5f), _mm256_add_ps(splat(1.0f), e));
        __m256 g = bertc_expf_avx2(_mm256_mul_ps(_mm256_mul_ps(splat(-0.5f), v), v));
        __m256 pdf = _mm256_mul_ps(splat(GELU_INV_SQRT_2PI), g);
        __m256 d = _mm256_fmadd_ps(v, pdf, cdf);
        _mm256_storeu_ps(dx + i, _mm256_fmadd_ps(_mm256_loadu_ps(dy + i), d,
                                                 dx_base(dx, i, accumulate)));
    }
    bertc_kernel_gelu_backward_scalar(dx + i, x + i, dy + i, n - i, accumulate);
}

/* tanh(sqrt(2/pi) (x + 0.044715 x^3)) */
BERTC_TARGET_AVX2 static __m256 gelu_tanh_inner(__m256 v)
{
    __m256 ax2 = _mm256_mul_ps(_mm256_mul_ps(splat(GELU_TANH_A), v), v);
    return bertc_tanhf_avx2(_mm256_mul_ps(splat(GELU_SQRT2_PI),
                                            _mm256_fmadd_ps(ax2, v, v)));
}

/* x, y are (n): y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
BERTC_TARGET_AVX2 static void gelu_tanh(float *y, const float *x, int64_t n)
{
    int64_t i = 0;
    for (; i + W <= n; i += W) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m256 t = gelu_tanh_inner(v);
        _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_mul_ps(splat(0.5f), v),
                                              _mm256_add_ps(splat(1.0f), t)));
    }
    bertc_kernel_gelu_tanh_scalar(y + i, x + i, n - i);
}

/* dx += dy (0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 a x^2)). */
BERTC_TARGET_AVX2 static void bertc_gelu_tanh_backward(float *dx, const float *x,
                                                   const float *dy, int64_t n, bool accumulate)
{
    int64_t i = 0;
    for (; i + W <= n; i += W) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m256 t = gelu_tanh_inner(v);
        __m256 x2 = _mm256_mul_ps(v, v);
        __m256 du = _mm256_mul_ps(splat(GELU_SQRT2_PI),
                                  _mm256_fmadd_ps(splat(3.0f * GELU_TANH_A), x2, splat(1.0f)));
        __m256 sech2 = _mm256_fnmadd_ps(t, t, splat(1.0f));
        __m256 half_x = _mm256_mul_ps(splat(0.5f), v);
        __m256 d = _mm256_fmadd_ps(_mm256_mul_ps(half_x, sech2), du,
                                   _mm256_fmadd_ps(splat(0.5f), t, splat(0.5f)));
        _mm256_storeu_ps(dx + i, _mm256_fmadd_ps(_mm256_loadu_ps(dy + i), d,
                                                 dx_base(dx, i, accumulate)));
    }
    bertc_kernel_gelu_tanh_backward_scalar(dx + i, x + i, dy + i, n - i, accumulate);
}

/* ---- dropout --------------------------------------------------------------- */

/* The states of draws i .. i+3 of the stream at `state`: state + (i+1+l) gamma
 * in lane l (mod 2^64). */
BERTC_TARGET_AVX2 static __m256i draw_states4(uint64_t state, int64_t i)
{
    uint64_t s[4];
    for (int l = 0; l < 4; l++)
        s[l] = state + (uint64_t)(i + 1 + l) * RNG_GAMMA;
    return _mm256_loadu_si256((const __m256i *)s);
}

/* z * c mod 2^64 in each lane. AVX2 multiplies only 32-bit halves, so with
 * z = z_hi 2^32 + z_lo and c likewise:
 *   z c = z_lo c_lo + 2^32 (z_hi c_lo + z_lo c_hi)   (mod 2^64). */
BERTC_TARGET_AVX2 static __m256i mullo64(__m256i z, uint64_t c)
{
    __m256i c_lo = _mm256_set1_epi64x((long long)(c & 0xFFFFFFFFull));
    __m256i c_hi = _mm256_set1_epi64x((long long)(c >> 32));
    __m256i low = _mm256_mul_epu32(z, c_lo);
    __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(z, 32), c_lo),
                                     _mm256_mul_epu32(z, c_hi));
    return _mm256_add_epi64(low, _mm256_slli_epi64(cross, 32));
}

/* rng_mix on 4 states. */
BERTC_TARGET_AVX2 static __m256i mix4(__m256i z)
{
    z = mullo64(_mm256_xor_si256(z, _mm256_srli_epi64(z, 30)), 0xBF58476D1CE4E5B9ull);
    z = mullo64(_mm256_xor_si256(z, _mm256_srli_epi64(z, 27)), 0x94D049BB133111EBull);
    return _mm256_xor_si256(z, _mm256_srli_epi64(z, 31));
}

/* Bit l set when draw l passes, (rng_mix(states_l) >> 11) >= threshold, i.e.
 * not threshold > m. AVX2 compares 64-bit lanes as signed; m and threshold
 * are at most 2^53, so that is the unsigned order too. */
BERTC_TARGET_AVX2 static int keep4(__m256i states, __m256i threshold)
{
    __m256i m = _mm256_srli_epi64(mix4(states), 11);
    int dropped = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpgt_epi64(threshold, m)));
    return ~dropped & 0xF;
}

/* a, out, keep are (n): bertc_kernel_dropout_scalar on 8 elements at a time; the
 * draws of elements i .. i+3 ride in `lo`, those of i+4 .. i+7 in `hi`. The
 * 8 keep bits become a lane mask (lane l: bit l of `kept`) and 8 bytes. */
BERTC_TARGET_AVX2 static void dropout(const float *a, float *out, uint8_t *keep, int64_t n,
                                      uint64_t state, uint64_t threshold, float scale)
{
    __m256i step = _mm256_set1_epi64x((long long)(W * RNG_GAMMA));
    __m256i t = _mm256_set1_epi64x((long long)threshold);
    __m256i lane_bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    __m256i lo = draw_states4(state, 0), hi = draw_states4(state, 4);
    int64_t i = 0;
    for (; i + W <= n; i += W) {
        int kept = keep4(lo, t) | keep4(hi, t) << 4;
        __m256i bit = _mm256_and_si256(_mm256_set1_epi32(kept), lane_bit);
        __m256 mask = _mm256_castsi256_ps(_mm256_cmpeq_epi32(bit, lane_bit));
        __m256 y = _mm256_mul_ps(_mm256_loadu_ps(a + i), splat(scale));
        _mm256_storeu_ps(out + i, _mm256_and_ps(mask, y)); /* dropped: +0 */
        for (int l = 0; l < W; l++)
            keep[i + l] = (uint8_t)((kept >> l) & 1);
        lo = _mm256_add_epi64(lo, step);
        hi = _mm256_add_epi64(hi, step);
    }
    bertc_kernel_dropout_scalar(a + i, out + i, keep + i, n - i, state + (uint64_t)i * RNG_GAMMA,
                          threshold, scale);
}

/* da += scale * dy where keep; the other lanes keep da as it was. */
BERTC_TARGET_AVX2 static void bertc_dropout_backward(const uint8_t *keep, const float *dy,
                                               float scale, float *da, int64_t n)
{
    int64_t i = 0;
    for (; i + W <= n; i += W) {
        __m256i k = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(keep + i)));
        __m256 kept = _mm256_castsi256_ps(_mm256_cmpgt_epi32(k, _mm256_setzero_si256()));
        __m256 dai = _mm256_loadu_ps(da + i);
        __m256 sum = _mm256_add_ps(dai, _mm256_mul_ps(splat(scale), _mm256_loadu_ps(dy + i)));
        _mm256_storeu_ps(da + i, _mm256_blendv_ps(dai, sum, kept));
    }
    bertc_kernel_dropout_backward_scalar(keep + i, dy + i, scale, da + i, n - i);
}

/* ---- softmax and log_softmax ----------------------------------------------- */

/* max_j x[j] of one row (n). */
BERTC_TARGET_AVX2 static float row_max(const float *x, int64_t n)
{
    __m256 m = splat(-INFINITY);
    int64_t j = 0;
    for (; j + W <= n; j += W)
        m = _mm256_max_ps(m, _mm256_loadu_ps(x + j));
    float max = hmax(m);
    for (; j < n; j++)
        max = x[j] > max ? x[j] : max;
    return max;
}

/* sum_j exp(x[j] - max) of one row (n); also stores the terms in y unless
 * y is NULL (log_softmax needs only the sum). */
BERTC_TARGET_AVX2 static float row_exp_sum(float *y, const float *x, float max, int64_t n)
{
    __m256 acc = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + W <= n; j += W) {
        __m256 e = bertc_expf_avx2(_mm256_sub_ps(_mm256_loadu_ps(x + j), splat(max)));
        if (y)
            _mm256_storeu_ps(y + j, e);
        acc = _mm256_add_ps(acc, e);
    }
    float sum = hsum(acc);
    for (; j < n; j++) {
        float e = bertc_expf(x[j] - max);
        if (y)
            y[j] = e;
        sum += e;
    }
    return sum;
}

/* sum_j a[j] * b[j] of one row (n). */
BERTC_TARGET_AVX2 static float row_dot(const float *a, const float *b, int64_t n)
{
    __m256 acc = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + W <= n; j += W)
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + j), _mm256_loadu_ps(b + j), acc);
    float sum = hsum(acc);
    for (; j < n; j++)
        sum += a[j] * b[j];
    return sum;
}

/* y[j] = x[j] * s + t for one row (n). y may alias x. */
BERTC_TARGET_AVX2 static void row_affine(float *y, const float *x, float s, float t,
                                           int64_t n)
{
    int64_t j = 0;
    for (; j + W <= n; j += W)
        _mm256_storeu_ps(y + j, _mm256_fmadd_ps(_mm256_loadu_ps(x + j), splat(s), splat(t)));
    for (; j < n; j++)
        y[j] = x[j] * s + t;
}

/* x, y are (rows, n); y may alias x. */
BERTC_TARGET_AVX2 static void softmax_rows(float *y, const float *x, int64_t rows,
                                             int64_t n)
{
    for (int64_t r = 0; r < rows; r++) {
        float max = row_max(x + r * n, n);
        float sum = row_exp_sum(y + r * n, x + r * n, max, n);
        row_affine(y + r * n, y + r * n, 1.0f / sum, 0.0f, n);
    }
}

/* dx += y (dy - sum(dy y)); all (rows, n). */
BERTC_TARGET_AVX2 static void softmax_rows_backward(float *dx, const float *y,
                                                      const float *dy, int64_t rows,
                                                      int64_t n, bool accumulate)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *yr = y + r * n, *dyr = dy + r * n;
        float *dxr = dx + r * n;
        float dot = row_dot(dyr, yr, n);
        int64_t j = 0;
        for (; j + W <= n; j += W) {
            __m256 d = _mm256_sub_ps(_mm256_loadu_ps(dyr + j), splat(dot));
            _mm256_storeu_ps(dxr + j, _mm256_fmadd_ps(_mm256_loadu_ps(yr + j), d,
                                                      dx_base(dxr, j, accumulate)));
        }
        for (; j < n; j++)
            dxr[j] = (accumulate ? dxr[j] : 0.0f) + yr[j] * (dyr[j] - dot);
    }
}

/* y = x - max - log(sum exp(x - max)); x, y are (rows, n). */
BERTC_TARGET_AVX2 static void log_softmax_rows(float *y, const float *x, int64_t rows,
                                                 int64_t n)
{
    for (int64_t r = 0; r < rows; r++) {
        float max = row_max(x + r * n, n);
        float log_sum = (float)log((double)row_exp_sum(NULL, x + r * n, max, n));
        row_affine(y + r * n, x + r * n, 1.0f, -max - log_sum, n);
    }
}

/* dx += dy - exp(y) sum(dy); all (rows, n). */
BERTC_TARGET_AVX2 static void log_softmax_rows_backward(float *dx, const float *y,
                                                          const float *dy, int64_t rows,
                                                          int64_t n, bool accumulate)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *yr = y + r * n, *dyr = dy + r * n;
        float *dxr = dx + r * n;
        __m256 acc = _mm256_setzero_ps();
        int64_t j = 0;
        for (; j + W <= n; j += W)
            acc = _mm256_add_ps(acc, _mm256_loadu_ps(dyr + j));
        float sum = hsum(acc);
        for (; j < n; j++)
            sum += dyr[j];
        for (j = 0; j + W <= n; j += W) {
            __m256 e = bertc_expf_avx2(_mm256_loadu_ps(yr + j));
            __m256 d = _mm256_fnmadd_ps(e, splat(sum), _mm256_loadu_ps(dyr + j));
            _mm256_storeu_ps(dxr + j, _mm256_add_ps(dx_base(dxr, j, accumulate), d));
        }
        for (; j < n; j++)
            dxr[j] = (accumulate ? dxr[j] : 0.0f) + (dyr[j] - bertc_expf(yr[j]) * sum);
    }
}

/* ---- a long row's softmax passes (the MLM loss) ---------------------------- */

/* y[j] += b[j] (b NULL: y is only read); returns max_j y[j]. */
BERTC_TARGET_AVX2 static float add_max(float *y, const float *b, int64_t n)
{
    if (!b)
        return row_max(y, n);
    __m256 m = splat(-INFINITY);
    int64_t j = 0;
    for (; j + W <= n; j += W) {
        __m256 v = _mm256_add_ps(_mm256_loadu_ps(y + j), _mm256_loadu_ps(b + j));
        _mm256_storeu_ps(y + j, v);
        m = _mm256_max_ps(m, v);
    }
    float max = hmax(m), tail = bertc_kernel_add_max_scalar(y + j, b + j, n - j);
    return tail > max ? tail : max;
}

/* y[j] = exp(x[j] - shift); returns their sum, kept in double as the scalar
 * reference does: each 8-float vector is added as two 4-double halves. */
BERTC_TARGET_AVX2 static double exp_sum(float *y, const float *x, float shift, int64_t n)
{
    __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
    int64_t j = 0;
    for (; j + W <= n; j += W) {
        __m256 e = bertc_expf_avx2(_mm256_sub_ps(_mm256_loadu_ps(x + j), splat(shift)));
        _mm256_storeu_ps(y + j, e);
        lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
        hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
    }
    __m256d s4 = _mm256_add_pd(lo, hi);
    __m128d s2 = _mm_add_pd(_mm256_castpd256_pd128(s4), _mm256_extractf128_pd(s4, 1));
    double sum = _mm_cvtsd_f64(_mm_add_sd(s2, _mm_unpackhi_pd(s2, s2)));
    return sum + bertc_kernel_exp_sum_scalar(y + j, x + j, shift, n - j);
}

/* ---- y += x, y += a x --------------------------------------------------------- */

BERTC_TARGET_AVX2 static void add_inplace(float *y, const float *x, int64_t n)
{
    int64_t i = 0;
    for (; i + W <= n; i += W)
        _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), _mm256_loadu_ps(x + i)));
    bertc_kernel_add_inplace_scalar(y + i, x + i, n - i);
}

/* A multiply, then an add (no FMA): the scalar reference's rounding. */
BERTC_TARGET_AVX2 static void axpy(float *y, float a, const float *x, int64_t n)
{
    int64_t i = 0;
    for (; i + W <= n; i += W) {
        __m256 ax = _mm256_mul_ps(splat(a), _mm256_loadu_ps(x + i));
        _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), ax));
    }
    bertc_kernel_axpy_scalar(y + i, a, x + i, n - i);
}

/* ---- LayerNorm --------------------------------------------------------------- */

/* sum_j x[j] of one row (n). */
BERTC_TARGET_AVX2 static float row_sum(const float *x, int64_t n)
{
    __m256 acc = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + W <= n; j += W)
        acc = _mm256_add_ps(acc, _mm256_loadu_ps(x + j));
    float sum = hsum(acc);
    for (; j < n; j++)
        sum += x[j];
    return sum;
}

/* sum_j (x[j] - mu)^2 of one row (n): the two-pass variance, which does not
 * cancel the way E[x^2] - mu^2 does. */
BERTC_TARGET_AVX2 static float row_sq_dev(const float *x, float mu, int64_t n)
{
    __m256 acc = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + W <= n; j += W) {
        __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x + j), splat(mu));
        acc = _mm256_fmadd_ps(d, d, acc);
    }
    float sum = hsum(acc);
    for (; j < n; j++)
        sum += (x[j] - mu) * (x[j] - mu);
    return sum;
}

/* y = (x - m) rs gamma + beta for one row (n); gamma, beta may be NULL. */
BERTC_TARGET_AVX2 static void ln_row_out(float *y, const float *x, float m, float rs,
                                           const float *gamma, const float *beta, int64_t n)
{
    int64_t j = 0;
    for (; j + W <= n; j += W) {
        __m256 xhat = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + j), splat(m)), splat(rs));
        _mm256_storeu_ps(y + j, _mm256_fmadd_ps(xhat, load_or(gamma, j, 1.0f),
                                                load_or(beta, j, 0.0f)));
    }
    for (; j < n; j++)
        y[j] = (x[j] - m) * rs * (gamma ? gamma[j] : 1.0f) + (beta ? beta[j] : 0.0f);
}

/* x, y are (rows, n); gamma, beta are (n) or NULL; mean, rstd are (rows) or NULL. */
BERTC_TARGET_AVX2 static void layernorm_rows(float *y, float *mean, float *rstd,
                                               const float *x, const float *gamma,
                                               const float *beta, int64_t rows, int64_t n,
                                               float eps)
{
    for (int64_t r = 0; r < rows; r++) {
        float m = row_sum(x + r * n, n) / (float)n;
        float var = row_sq_dev(x + r * n, m, n) / (float)n; /* biased, as torch */
        float rs = (float)(1.0 / sqrt((double)var + eps));
        ln_row_out(y + r * n, x + r * n, m, rs, gamma, beta, n);
        if (mean)
            mean[r] = m;
        if (rstd)
            rstd[r] = rs;
    }
}

/* One row (n) of the LayerNorm backward, first pass: with xhat = (x - m) rs and
 * g = dy gamma, returns sum_j g (in *sum_g) and sum_j g xhat (in *sum_gx), and
 * accumulates dgamma += dy xhat, dbeta += dy (either may be NULL). */
BERTC_TARGET_AVX2 static void ln_row_sums(float *sum_g, float *sum_gx, float *dgamma,
                                            float *dbeta, const float *dy, const float *x,
                                            float m, float rs, const float *gamma, int64_t n)
{
    __m256 acc_g = _mm256_setzero_ps(), acc_gx = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + W <= n; j += W) {
        __m256 d = _mm256_loadu_ps(dy + j);
        __m256 xhat = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + j), splat(m)), splat(rs));
        __m256 g = _mm256_mul_ps(d, load_or(gamma, j, 1.0f));
        acc_g = _mm256_add_ps(acc_g, g);
        acc_gx = _mm256_fmadd_ps(g, xhat, acc_gx);
        if (dgamma)
            _mm256_storeu_ps(dgamma + j, _mm256_fmadd_ps(d, xhat, _mm256_loadu_ps(dgamma + j)));
        if (dbeta)
            _mm256_storeu_ps(dbeta + j, _mm256_add_ps(_mm256_loadu_ps(dbeta + j), d));
    }
    *sum_g = hsum(acc_g);
    *sum_gx = hsum(acc_gx);
    for (; j < n; j++) {
        float xhat = (x[j] - m) * rs;
        float g = dy[j] * (gamma ? gamma[j] : 1.0f);
        *sum_g += g;
        *sum_gx += g * xhat;
        if (dgamma)
            dgamma[j] += dy[j] * xhat;
        if (dbeta)
            dbeta[j] += dy[j];
    }
}

/* Second pass: dx += rs (g - mean_g - xhat mean_gx) for one row (n). */
BERTC_TARGET_AVX2 static void ln_row_dx(float *dx, const float *dy, const float *x, float m,
                                          float rs, const float *gamma, float mean_g,
                                          float mean_gx, int64_t n, bool accumulate)
{
    int64_t j = 0;
    for (; j + W <= n; j += W) {
        __m256 xhat = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + j), splat(m)), splat(rs));
        __m256 g = _mm256_mul_ps(_mm256_loadu_ps(dy + j), load_or(gamma, j, 1.0f));
        __m256 t = _mm256_fnmadd_ps(xhat, splat(mean_gx), _mm256_sub_ps(g, splat(mean_g)));
        _mm256_storeu_ps(dx + j, _mm256_fmadd_ps(splat(rs), t, dx_base(dx, j, accumulate)));
    }
    for (; j < n; j++) {
        float xhat = (x[j] - m) * rs;
        float g = dy[j] * (gamma ? gamma[j] : 1.0f);
        dx[j] = (accumulate ? dx[j] : 0.0f) + rs * (g - mean_g - xhat * mean_gx);
    }
}

/* dgamma (n), dbeta (n) accumulate; dx (rows, n) too, or is written when
 * !dx_accumulate; any may be NULL. */
BERTC_TARGET_AVX2 static void layernorm_rows_backward(float *dx, float *dgamma, float *dbeta,
                                                        const float *dy, const float *x,
                                                        const float *mean, const float *rstd,
                                                        const float *gamma, int64_t rows,
                                                        int64_t n, bool dx_accumulate)
{
    for (int64_t r = 0; r < rows; r++) {
        float sum_g, sum_gx;
        ln_row_sums(&sum_g, &sum_gx, dgamma, dbeta, dy + r * n, x + r * n, mean[r], rstd[r],
                    gamma, n);
        if (dx)
            ln_row_dx(dx + r * n, dy + r * n, x + r * n, mean[r], rstd[r], gamma,
                      sum_g / (float)n, sum_gx / (float)n, n, dx_accumulate);
    }
}

const RowKernels bertc_row_kernels_avx2 = {
    .softmax_rows = softmax_rows,
    .softmax_rows_backward = softmax_rows_backward,
    .log_softmax_rows = log_softmax_rows,
    .log_softmax_rows_backward = log_softmax_rows_backward,
    .add_max = add_max,
    .exp_sum = exp_sum,
    .layernorm_rows = layernorm_rows,
    .layernorm_rows_backward = layernorm_rows_backward,
    .gelu = gelu,
    .gelu_backward = bertc_gelu_backward,
    .gelu_tanh = gelu_tanh,
    .gelu_tanh_backward = bertc_gelu_tanh_backward,
    .dropout = dropout,
    .dropout_backward = bertc_dropout_backward,
    .add_inplace = add_inplace,
    .axpy = axpy,
};
#endif /* x86-64 */
