/* tensor/kernels_avx512.c — the row kernels on 16-lane AVX-512 registers.
 * Each mirrors its scalar reference in tensor/kernels.c line for line (read
 * that file for the math); elements past the last full vector go through the
 * scalar code. Sums are kept in float, one partial sum per lane, which for
 * n = 3072 means 192 terms per lane; test/test_kernels_simd.c bounds the
 * difference to the scalar reference (which sums in double). */
#if defined(__x86_64__) && defined(__GNUC__)
#include "tensor/kernels_internal.h"

#include <math.h>

#define W 16 /* floats per register */

BERTC_TARGET_AVX512 static __m512 splat(float v)
{
    return _mm512_set1_ps(v);
}

/* p[j..j+W) or, when p is NULL, the value `dflt` in every lane. */
BERTC_TARGET_AVX512 static __m512 load_or(const float *p, int64_t j, float dflt)
{
    return p ? _mm512_loadu_ps(p + j) : splat(dflt);
}

/* dx[j..j+W) to add to, or zeros when dx is written afresh (accumulate false:
 * dx is not read). */
BERTC_TARGET_AVX512 static __m512 dx_base(const float *dx, int64_t j, bool accumulate)
{
    return accumulate ? _mm512_loadu_ps(dx + j) : _mm512_setzero_ps();
}

/* ---- GELU ------------------------------------------------------------------ */

/* x, y are (n): y = 0.5 x (1 + erf(x / sqrt 2)). */
BERTC_TARGET_AVX512 static void gelu(float *y, const float *x, int64_t n)
{
    int64_t i = 0;
    for (; i + W <= n; i += W) {
        __m512 v = _mm512_loadu_ps(x + i);
        __m512 e = bertc_erff_avx512(_mm512_mul_ps(v, splat(GELU_SQRT1_2)));
        _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_mul_ps(splat(0.5f), v),
                                              _mm512_add_ps(splat(1.0f), e)));
    }
    bertc_kernel_gelu_scalar(y + i, x + i, n - i);
}

/* dx += dy (Phi(x) + x phi(x)). */
BERTC_TARGET_AVX512 static void bertc_gelu_backward(float *dx, const float *x, const float *dy,
                                              int64_t n, bool accumulate)
{
    int64_t i = 0;
    for (; i + W <= n; i += W) {
        __m512 v = _mm512_loadu_ps(x + i);
        __m512 e = bertc_erff_avx512(_mm512_mul_ps(v, splat(GELU_SQRT1_2)));
        __m512 cdf = _mm512_mul_ps(splat(0.5f), _mm512_add_ps(splat(1.0f), e));
        __m512 g = bertc_expf_avx512(_mm512_mul_ps(_mm512_mul_ps(splat(-0.5f), v), v));
        __m512 pdf = _mm512_mul_ps(splat(GELU_INV_SQRT_2PI), g);
        __m512 d = _mm512_fmadd_ps(v, pdf, cdf);
        _mm512_storeu_ps(dx + i, _mm512_fmadd_ps(_mm512_loadu_ps(dy + i), d,
                                                 dx_base(dx, i, accumulate)));
    }
    bertc_kernel_gelu_backward_scalar(dx + i, x + i, dy + i, n - i, accumulate);
}

/* tanh(sqrt(2/pi) (x + 0.044715 x^3)) */
BERTC_TARGET_AVX512 static __m512 gelu_tanh_inner(__m512 v)
{
    __m512 ax2 = _mm512_mul_ps(_mm512_mul_ps(splat(GELU_TANH_A), v), v);
    return bertc_tanhf_avx512(_mm512_mul_ps(splat(GELU_SQRT2_PI),
                                            _mm512_fmadd_ps(ax2, v, v)));
}

/* x, y are (n): y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
BERTC_TARGET_AVX512 static void gelu_tanh(float *y, const float *x, int64_t n)
{
    int64_t i = 0;
    for (; i + W <= n; i += W) {
        __m512 v = _mm512_loadu_ps(x + i);
        __m512 t = gelu_tanh_inner(v);
        _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_mul_ps(splat(0.5f), v),
                                              _mm512_add_ps(splat(1.0f), t)));
    }
    bertc_kernel_gelu_tanh_scalar(y + i, x + i, n - i);
}

/* dx += dy (0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 a x^2)). */
BERTC_TARGET_AVX512 static void bertc_gelu_tanh_backward(float *dx, const float *x,
                                                   const float *dy, int64_t n, bool accumulate)
{
    int64_t i = 0;
    for (; i + W <= n; i += W) {
        __m512 v = _mm512_loadu_ps(x + i);
        __m512 t = gelu_tanh_inner(v);
        __m512 x2 = _mm512_mul_ps(v, v);
        __m512 du = _mm512_mul_ps(splat(GELU_SQRT2_PI),
                                  _mm512_fmadd_ps(splat(3.0f * GELU_TANH_A), x2, splat(1.0f)));
        __m512 sech2 = _mm512_fnmadd_ps(t, t, splat(1.0f));
        __m512 half_x = _mm512_mul_ps(splat(0.5f), v);
        __m512 d = _mm512_fmadd_ps(_mm512_mul_ps(half_x, sech2), du,
                                   _mm512_fmadd_ps(splat(0.5f), t, splat(0.5f)));
        _mm512_storeu_ps(dx + i, _mm512_fmadd_ps(_mm512_loadu_ps(dy + i), d,
                                                 dx_base(dx, i, accumulate)));
    }
    bertc_kernel_gelu_tanh_backward_scalar(dx + i, x + i, dy + i, n - i, accumulate);
}

/* ---- dropout --------------------------------------------------------------- */

/* The states of draws i .. i+7 of the stream at `state`: state + (i+1+l) gamma
 * in lane l (mod 2^64). */
BERTC_TARGET_AVX512 static __m512i draw_states8(uint64_t state, int64_t i)
{
    uint64_t s[8];
    for (int l = 0; l < 8; l++)
        s[l] = state + (uint64_t)(i + 1 + l) * RNG_GAMMA;
    return _mm512_loadu_si512(s);
}

/* rng_mix on 8 states; _mm512_mullo_epi64 (AVX512DQ) is the 64-bit multiply
 * mod 2^64, like C's on uint64_t. */
BERTC_TARGET_AVX512 static __m512i mix8(__m512i z)
{
    z = _mm512_xor_si512(z, _mm512_srli_epi64(z, 30));
    z = _mm512_mullo_epi64(z, _mm512_set1_epi64((long long)0xBF58476D1CE4E5B9ull));
    z = _mm512_xor_si512(z, _mm512_srli_epi64(z, 27));
    z = _mm512_mullo_epi64(z, _mm512_set1_epi64((long long)0x94D049BB133111EBull));
    return _mm512_xor_si512(z, _mm512_srli_epi64(z, 31));
}

/* Bit l set when draw l passes: (rng_mix(states_l) >> 11) >= threshold. */
BERTC_TARGET_AVX512 static __mmask8 keep8(__m512i states, __m512i threshold)
{
    return _mm512_cmpge_epu64_mask(_mm512_srli_epi64(mix8(states), 11), threshold);
}

/* a, out, keep are (n): bertc_kernel_dropout_scalar on 16 elements at a time; the
 * draws of elements i .. i+7 ride in `lo`, those of i+8 .. i+15 in `hi`. */
BERTC_TARGET_AVX512 static void dropout(const float *a, float *out, uint8_t *keep, int64_t n,
                                        uint64_t state, uint64_t threshold, float scale)
{
    __m512i step = _mm512_set1_epi64((long long)(W * RNG_GAMMA));
    __m512i t = _mm512_set1_epi64((long long)threshold);
    __m512i lo = draw_states8(state, 0), hi = draw_states8(state, 8);
    int64_t i = 0;
    for (; i + W <= n; i += W) {
        __mmask16 k = (__mmask16)(keep8(lo, t) | (keep8(hi, t) << 8));
        _mm512_storeu_ps(out + i, _mm512_maskz_mul_ps(k, _mm512_loadu_ps(a + i), splat(scale)));
        _mm_storeu_si128((__m128i *)(keep + i), _mm_maskz_set1_epi8(k, 1));
        lo = _mm512_add_epi64(lo, step);
        hi = _mm512_add_epi64(hi, step);
    }
    bertc_kernel_dropout_scalar(a + i, out + i, keep + i, n - i, state + (uint64_t)i * RNG_GAMMA,
                          threshold, scale);
}

/* da += scale * dy where keep; the other lanes keep da as it was. */
BERTC_TARGET_AVX512 static void bertc_dropout_backward(const uint8_t *keep, const float *dy,
                                                 float scale, float *da, int64_t n)
{
    int64_t i = 0;
    for (; i + W <= n; i += W) {
        __m128i kb = _mm_loadu_si128((const __m128i *)(keep + i));
        __mmask16 k = _mm_test_epi8_mask(kb, kb);
        __m512 dai = _mm512_loadu_ps(da + i);
        __m512 g = _mm512_mul_ps(splat(scale), _mm512_loadu_ps(dy + i));
        _mm512_storeu_ps(da + i, _mm512_mask_add_ps(dai, k, dai, g));
    }
    bertc_kernel_dropout_backward_scalar(keep + i, dy + i, scale, da + i, n - i);
}

/* ---- softmax and log_softmax ----------------------------------------------- */

/* max_j x[j] of one row (n). */
BERTC_TARGET_AVX512 static float row_max(const float *x, int64_t n)
{
    __m512 m = splat(-INFINITY);
    int64_t j = 0;
    for (; j + W <= n; j += W)
        m = _mm512_max_ps(m, _mm512_loadu_ps(x + j));
    float max = _mm512_reduce_max_ps(m);
    for (; j < n; j++)
        max = x[j] > max ? x[j] : max;
    return max;
}

/* sum_j exp(x[j] - max) of one row (n); also stores the terms in y unless
 * y is NULL (log_softmax needs only the sum). */
BERTC_TARGET_AVX512 static float row_exp_sum(float *y, const float *x, float max, int64_t n)
{
    __m512 acc = _mm512_setzero_ps();
    int64_t j = 0;
    for (; j + W <= n; j += W) {
        __m512 e = bertc_expf_avx512(_mm512_sub_ps(_mm512_loadu_ps(x + j), splat(max)));
        if (y)
            _mm512_storeu_ps(y + j, e);
        acc = _mm512_add_ps(acc, e);
    }
    float sum = _mm512_reduce_add_ps(acc);
    for (; j < n; j++) {
        float e = bertc_expf(x[j] - max);
        if (y)
            y[j] = e;
        sum += e;
    }
    return sum;
}

/* sum_j a[j] * b[j] of one row (n). */
BERTC_TARGET_AVX512 static float row_dot(const float *a, const float *b, int64_t n)
{
    __m512 acc = _mm512_setzero_ps();
    int64_t j = 0;
    for (; j + W <= n; j += W)
        acc = _mm512_fmadd_ps(_mm512_loadu_ps(a + j), _mm512_loadu_ps(b + j), acc);
    float sum = _mm512_reduce_add_ps(acc);
    for (; j < n; j++)
        sum += a[j] * b[j];
    return sum;
}

/* y[j] = x[j] * s + t for one row (n). y may alias x. */
BERTC_TARGET_AVX512 static void row_affine(float *y, const float *x, float s, float t,
                                           int64_t n)
{
    int64_t j = 0;
    for (; j + W <= n; j += W)
        _mm512_storeu_ps(y + j, _mm512_fmadd_ps(_mm512_loadu_ps(x + j), splat(s), splat(t)));
    for (; j < n; j++)
        y[j] = x[j] * s + t;
}

/* x, y are (rows, n); y may alias x. */
BERTC_TARGET_AVX512 static void softmax_rows(float *y, const float *x, int64_t rows,
                                             int64_t n)
{
    for (int64_t r = 0; r < rows; r++) {
        float max = row_max(x + r * n, n);
        float sum = row_exp_sum(y + r * n, x + r * n, max, n);
        row_affine(y + r * n, y + r * n, 1.0f / sum, 0.0f, n);
    }
}

/* dx += y (dy - sum(dy y)); all (rows, n). */
BERTC_TARGET_AVX512 static void softmax_rows_backward(float *dx, const float *y,
                                                      const float *dy, int64_t rows,
                                                      int64_t n, bool accumulate)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *yr = y + r * n, *dyr = dy + r * n;
        float *dxr = dx + r * n;
        float dot = row_dot(dyr, yr, n);
        int64_t j = 0;
        for (; j + W <= n; j += W) {
            __m512 d = _mm512_sub_ps(_mm512_loadu_ps(dyr + j), splat(dot));
            _mm512_storeu_ps(dxr + j, _mm512_fmadd_ps(_mm512_loadu_ps(yr + j), d,
                                                      dx_base(dxr, j, accumulate)));
        }
        for (; j < n; j++)
            dxr[j] = (accumulate ? dxr[j] : 0.0f) + yr[j] * (dyr[j] - dot);
    }
}

/* y = x - max - log(sum exp(x - max)); x, y are (rows, n). */
BERTC_TARGET_AVX512 static void log_softmax_rows(float *y, const float *x, int64_t rows,
                                                 int64_t n)
{
    for (int64_t r = 0; r < rows; r++) {
        float max = row_max(x + r * n, n);
        float log_sum = (float)log((double)row_exp_sum(NULL, x + r * n, max, n));
        row_affine(y + r * n, x + r * n, 1.0f, -max - log_sum, n);
    }
}

/* dx += dy - exp(y) sum(dy); all (rows, n). */
BERTC_TARGET_AVX512 static void log_softmax_rows_backward(float *dx, const float *y,
                                                          const float *dy, int64_t rows,
                                                          int64_t n, bool accumulate)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *yr = y + r * n, *dyr = dy + r * n;
        float *dxr = dx + r * n;
        __m512 acc = _mm512_setzero_ps();
        int64_t j = 0;
        for (; j + W <= n; j += W)
            acc = _mm512_add_ps(acc, _mm512_loadu_ps(dyr + j));
        float sum = _mm512_reduce_add_ps(acc);
        for (; j < n; j++)
            sum += dyr[j];
        for (j = 0; j + W <= n; j += W) {
            __m512 e = bertc_expf_avx512(_mm512_loadu_ps(yr + j));
            __m512 d = _mm512_fnmadd_ps(e, splat(sum), _mm512_loadu_ps(dyr + j));
            _mm512_storeu_ps(dxr + j, _mm512_add_ps(dx_base(dxr, j, accumulate), d));
        }
        for (; j < n; j++)
            dxr[j] = (accumulate ? dxr[j] : 0.0f) + (dyr[j] - bertc_expf(yr[j]) * sum);
    }
}

/* ---- a long row's softmax passes (the MLM loss) ---------------------------- */

/* y[j] += b[j] (b NULL: y is only read); returns max_j y[j]. */
BERTC_TARGET_AVX512 static float add_max(float *y, const float *b, int64_t n)
{
    if (!b)
        return row_max(y, n);
    __m512 m = splat(-INFINITY);
    int64_t j = 0;
    for (; j + W <= n; j += W) {
        __m512 v = _mm512_add_ps(_mm512_loadu_ps(y + j), _mm512_loadu_ps(b + j));
        _mm512_storeu_ps(y + j, v);
        m = _mm512_max_ps(m, v);
    }
    float max = _mm512_reduce_max_ps(m), tail = bertc_kernel_add_max_scalar(y + j, b + j, n - j);
    return tail > max ? tail : max;
}

/* y[j] = exp(x[j] - shift); returns their sum, kept in double as the scalar
 * reference does: each 16-float vector is added as two 8-double halves. */
BERTC_TARGET_AVX512 static double exp_sum(float *y, const float *x, float shift, int64_t n)
{
    __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
    int64_t j = 0;
    for (; j + W <= n; j += W) {
        __m512 e = bertc_expf_avx512(_mm512_sub_ps(_mm512_loadu_ps(x + j), splat(shift)));
        _mm512_storeu_ps(y + j, e);
        lo = _mm512_add_pd(lo, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
        hi = _mm512_add_pd(hi, _mm512_cvtps_pd(_mm512_extractf32x8_ps(e, 1)));
    }
    double sum = _mm512_reduce_add_pd(_mm512_add_pd(lo, hi));
    return sum + bertc_kernel_exp_sum_scalar(y + j, x + j, shift, n - j);
}

/* ---- y += x, y += a x --------------------------------------------------------- */

BERTC_TARGET_AVX512 static void add_inplace(float *y, const float *x, int64_t n)
{
    int64_t i = 0;
    for (; i + W <= n; i += W)
        _mm512_storeu_ps(y + i, _mm512_add_ps(_mm512_loadu_ps(y + i), _mm512_loadu_ps(x + i)));
    bertc_kernel_add_inplace_scalar(y + i, x + i, n - i);
}

/* A multiply, then an add (no FMA): the scalar reference's rounding. */
BERTC_TARGET_AVX512 static void axpy(float *y, float a, const float *x, int64_t n)
{
    int64_t i = 0;
    for (; i + W <= n; i += W) {
        __m512 ax = _mm512_mul_ps(splat(a), _mm512_loadu_ps(x + i));
        _mm512_storeu_ps(y + i, _mm512_add_ps(_mm512_loadu_ps(y + i), ax));
    }
    bertc_kernel_axpy_scalar(y + i, a, x + i, n - i);
}

/* ---- LayerNorm --------------------------------------------------------------- */

/* sum_j x[j] of one row (n). */
BERTC_TARGET_AVX512 static float row_sum(const float *x, int64_t n)
{
    __m512 acc = _mm512_setzero_ps();
    int64_t j = 0;
    for (; j + W <= n; j += W)
        acc = _mm512_add_ps(acc, _mm512_loadu_ps(x + j));
    float sum = _mm512_reduce_add_ps(acc);
    for (; j < n; j++)
        sum += x[j];
    return sum;
}

/* sum_j (x[j] - mu)^2 of one row (n): the two-pass variance, which does not
 * cancel the way E[x^2] - mu^2 does. */
BERTC_TARGET_AVX512 static float row_sq_dev(const float *x, float mu, int64_t n)
{
    __m512 acc = _mm512_setzero_ps();
    int64_t j = 0;
    for (; j + W <= n; j += W) {
        __m512 d = _mm512_sub_ps(_mm512_loadu_ps(x + j), splat(mu));
        acc = _mm512_fmadd_ps(d, d, acc);
    }
    float sum = _mm512_reduce_add_ps(acc);
    for (; j < n; j++)
        sum += (x[j] - mu) * (x[j] - mu);
    return sum;
}

/* y = (x - m) rs gamma + beta for one row (n); gamma, beta may be NULL. */
BERTC_TARGET_AVX512 static void ln_row_out(float *y, const float *x, float m, float rs,
                                           const float *gamma, const float *beta, int64_t n)
{
    int64_t j = 0;
    for (; j + W <= n; j += W) {
        __m512 xhat = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + j), splat(m)), splat(rs));
        _mm512_storeu_ps(y + j, _mm512_fmadd_ps(xhat, load_or(gamma, j, 1.0f),
                                                load_or(beta, j, 0.0f)));
    }
    for (; j < n; j++)
        y[j] = (x[j] - m) * rs * (gamma ? gamma[j] : 1.0f) + (beta ? beta[j] : 0.0f);
}

/* x, y are (rows, n); gamma, beta are (n) or NULL; mean, rstd are (rows) or NULL. */
BERTC_TARGET_AVX512 static void layernorm_rows(float *y, float *mean, float *rstd,
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
BERTC_TARGET_AVX512 static void ln_row_sums(float *sum_g, float *sum_gx, float *dgamma,
                                            float *dbeta, const float *dy, const float *x,
                                            float m, float rs, const float *gamma, int64_t n)
{
    __m512 acc_g = _mm512_setzero_ps(), acc_gx = _mm512_setzero_ps();
    int64_t j = 0;
    for (; j + W <= n; j += W) {
        __m512 d = _mm512_loadu_ps(dy + j);
        __m512 xhat = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + j), splat(m)), splat(rs));
        __m512 g = _mm512_mul_ps(d, load_or(gamma, j, 1.0f));
        acc_g = _mm512_add_ps(acc_g, g);
        acc_gx = _mm512_fmadd_ps(g, xhat, acc_gx);
        if (dgamma)
            _mm512_storeu_ps(dgamma + j, _mm512_fmadd_ps(d, xhat, _mm512_loadu_ps(dgamma + j)));
        if (dbeta)
            _mm512_storeu_ps(dbeta + j, _mm512_add_ps(_mm512_loadu_ps(dbeta + j), d));
    }
    *sum_g = _mm512_reduce_add_ps(acc_g);
    *sum_gx = _mm512_reduce_add_ps(acc_gx);
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
BERTC_TARGET_AVX512 static void ln_row_dx(float *dx, const float *dy, const float *x, float m,
                                          float rs, const float *gamma, float mean_g,
                                          float mean_gx, int64_t n, bool accumulate)
{
    int64_t j = 0;
    for (; j + W <= n; j += W) {
        __m512 xhat = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + j), splat(m)), splat(rs));
        __m512 g = _mm512_mul_ps(_mm512_loadu_ps(dy + j), load_or(gamma, j, 1.0f));
        __m512 t = _mm512_fnmadd_ps(xhat, splat(mean_gx), _mm512_sub_ps(g, splat(mean_g)));
        _mm512_storeu_ps(dx + j, _mm512_fmadd_ps(splat(rs), t, dx_base(dx, j, accumulate)));
    }
    for (; j < n; j++) {
        float xhat = (x[j] - m) * rs;
        float g = dy[j] * (gamma ? gamma[j] : 1.0f);
        dx[j] = (accumulate ? dx[j] : 0.0f) + rs * (g - mean_g - xhat * mean_gx);
    }
}

/* dgamma (n), dbeta (n) accumulate; dx (rows, n) too, or is written when
 * !dx_accumulate; any may be NULL. */
BERTC_TARGET_AVX512 static void layernorm_rows_backward(float *dx, float *dgamma, float *dbeta,
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

/* ---- Adam ------------------------------------------------------------------ */

/* bertc_kernel_adam_scalar's operations, 16 lanes at a time, in the same order. */
BERTC_TARGET_AVX512 void bertc_kernel_adam_avx512(float *p, const float *g, float *m, float *v,
                                            int64_t n, const AdamStep *s)
{
    int64_t i = 0;
    for (; i + W <= n; i += W) {
        __m512 pi = _mm512_loadu_ps(p + i), gi = load_or(g, i, 0.0f);
        if (s->decoupled)
            pi = _mm512_mul_ps(pi, splat(s->decay));
        else if (s->wd != 0.0f)
            gi = _mm512_add_ps(gi, _mm512_mul_ps(splat(s->wd), pi));
        __m512 mi = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(m + i), splat(s->b1)),
                                  _mm512_mul_ps(splat(s->one_minus_b1), gi));
        __m512 vi = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(v + i), splat(s->b2)),
                                  _mm512_mul_ps(_mm512_mul_ps(splat(s->one_minus_b2), gi), gi));
        __m512 denom = _mm512_add_ps(_mm512_div_ps(_mm512_sqrt_ps(vi), splat(s->bc2_sqrt)),
                                     splat(s->eps));
        pi = _mm512_add_ps(pi, _mm512_div_ps(_mm512_mul_ps(splat(s->neg_step), mi), denom));
        _mm512_storeu_ps(m + i, mi);
        _mm512_storeu_ps(v + i, vi);
        _mm512_storeu_ps(p + i, pi);
    }
    bertc_kernel_adam_scalar(p + i, g ? g + i : NULL, m + i, v + i, n - i, s);
}

const RowKernels bertc_row_kernels_avx512 = {
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
