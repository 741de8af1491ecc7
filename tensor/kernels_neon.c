/* tensor/kernels_neon.c — the row kernels on 4-lane AArch64 NEON registers.
 * Each mirrors its scalar reference in tensor/kernels.c line for line (read
 * that file for the math); elements past the last full vector go through the
 * scalar code. Sums are kept in float, one partial sum per lane, which for
 * n = 3072 means 768 terms per lane; test/test_kernels_simd.c bounds the
 * difference to the scalar reference (which sums in double). */
#if defined(__aarch64__) && defined(__ARM_NEON)
#include "tensor/kernels_internal.h"

#include <math.h>

#define W 4 /* floats per register */

static float32x4_t splat(float v)
{
    return vdupq_n_f32(v);
}

/* p[j..j+W) or, when p is NULL, the value `dflt` in every lane. */
static float32x4_t load_or(const float *p, int64_t j, float dflt)
{
    return p ? vld1q_f32(p + j) : splat(dflt);
}

/* dx[j..j+W) to add to, or zeros when dx is written afresh (accumulate false:
 * dx is not read). */
static float32x4_t dx_base(const float *dx, int64_t j, bool accumulate)
{
    return accumulate ? vld1q_f32(dx + j) : vdupq_n_f32(0.0f);
}

/* ---- GELU ------------------------------------------------------------------ */

/* x, y are (n): y = 0.5 x (1 + erf(x / sqrt 2)). */
static void gelu(float *y, const float *x, int64_t n)
{
    int64_t i = 0;
    for (; i + W <= n; i += W) {
        float32x4_t v = vld1q_f32(x + i);
        float32x4_t e = bertc_erff_neon(vmulq_f32(v, splat(GELU_SQRT1_2)));
        vst1q_f32(y + i, vmulq_f32(vmulq_f32(splat(0.5f), v),
                                              vaddq_f32(splat(1.0f), e)));
    }
    bertc_kernel_gelu_scalar(y + i, x + i, n - i);
}

/* dx += dy (Phi(x) + x phi(x)). */
static void bertc_gelu_backward(float *dx, const float *x, const float *dy,
                                              int64_t n, bool accumulate)
{
    int64_t i = 0;
    for (; i + W <= n; i += W) {
        float32x4_t v = vld1q_f32(x + i);
        float32x4_t e = bertc_erff_neon(vmulq_f32(v, splat(GELU_SQRT1_2)));
        float32x4_t cdf = vmulq_f32(splat(0.5f), vaddq_f32(splat(1.0f), e));
        float32x4_t g = bertc_expf_neon(vmulq_f32(vmulq_f32(splat(-0.5f), v), v));
        float32x4_t pdf = vmulq_f32(splat(GELU_INV_SQRT_2PI), g);
        float32x4_t d = vfmaq_f32(cdf, v, pdf);
        vst1q_f32(dx + i, vfmaq_f32(dx_base(dx, i, accumulate), vld1q_f32(dy + i), d));
    }
    bertc_kernel_gelu_backward_scalar(dx + i, x + i, dy + i, n - i, accumulate);
}

/* tanh(sqrt(2/pi) (x + 0.044715 x^3)) */
static float32x4_t gelu_tanh_inner(float32x4_t v)
{
    float32x4_t ax2 = vmulq_f32(vmulq_f32(splat(GELU_TANH_A), v), v);
    return bertc_tanhf_neon(vmulq_f32(splat(GELU_SQRT2_PI),
                                            vfmaq_f32(v, ax2, v)));
}

/* x, y are (n): y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
static void gelu_tanh(float *y, const float *x, int64_t n)
{
    int64_t i = 0;
    for (; i + W <= n; i += W) {
        float32x4_t v = vld1q_f32(x + i);
        float32x4_t t = gelu_tanh_inner(v);
        vst1q_f32(y + i, vmulq_f32(vmulq_f32(splat(0.5f), v),
                                              vaddq_f32(splat(1.0f), t)));
    }
    bertc_kernel_gelu_tanh_scalar(y + i, x + i, n - i);
}

/* dx += dy (0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 a x^2)). */
static void bertc_gelu_tanh_backward(float *dx, const float *x,
                                                   const float *dy, int64_t n, bool accumulate)
{
    int64_t i = 0;
    for (; i + W <= n; i += W) {
        float32x4_t v = vld1q_f32(x + i);
        float32x4_t t = gelu_tanh_inner(v);
        float32x4_t x2 = vmulq_f32(v, v);
        float32x4_t du = vmulq_f32(splat(GELU_SQRT2_PI),
                                  vfmaq_f32(splat(1.0f), splat(3.0f * GELU_TANH_A), x2));
        float32x4_t sech2 = vfmsq_f32(splat(1.0f), t, t);
        float32x4_t half_x = vmulq_f32(splat(0.5f), v);
        float32x4_t d = vfmaq_f32(vfmaq_f32(splat(0.5f), splat(0.5f), t),
                                  vmulq_f32(half_x, sech2), du);
        vst1q_f32(dx + i, vfmaq_f32(dx_base(dx, i, accumulate), vld1q_f32(dy + i), d));
    }
    bertc_kernel_gelu_tanh_backward_scalar(dx + i, x + i, dy + i, n - i, accumulate);
}

/* ---- dropout --------------------------------------------------------------- */

/* The forward uses bertc_kernel_dropout_scalar (see the table at the bottom): NEON
 * has no 64 x 64-bit multiply, only 32 x 32 -> 64 on two lanes, while
 * AArch64's scalar MUL does SplitMix64's multiplies natively. */

/* da += scale * dy where keep; the other lanes keep da as it was. */
static void bertc_dropout_backward(const uint8_t *keep, const float *dy, float scale, float *da,
                             int64_t n)
{
    int64_t i = 0;
    for (; i + W <= n; i += W) {
        uint32_t k[W] = {keep[i], keep[i + 1], keep[i + 2], keep[i + 3]};
        uint32x4_t kept = vtstq_u32(vld1q_u32(k), vld1q_u32(k)); /* all ones where k != 0 */
        float32x4_t dai = vld1q_f32(da + i);
        float32x4_t sum = vaddq_f32(dai, vmulq_f32(splat(scale), vld1q_f32(dy + i)));
        vst1q_f32(da + i, vbslq_f32(kept, sum, dai));
    }
    bertc_kernel_dropout_backward_scalar(keep + i, dy + i, scale, da + i, n - i);
}

/* ---- softmax and log_softmax ----------------------------------------------- */

/* max_j x[j] of one row (n). */
static float row_max(const float *x, int64_t n)
{
    float32x4_t m = splat(-INFINITY);
    int64_t j = 0;
    for (; j + W <= n; j += W)
        m = vmaxq_f32(m, vld1q_f32(x + j));
    float max = vmaxvq_f32(m);
    for (; j < n; j++)
        max = x[j] > max ? x[j] : max;
    return max;
}

/* sum_j exp(x[j] - max) of one row (n); also stores the terms in y unless
 * y is NULL (log_softmax needs only the sum). */
static float row_exp_sum(float *y, const float *x, float max, int64_t n)
{
    float32x4_t acc = vdupq_n_f32(0.0f);
    int64_t j = 0;
    for (; j + W <= n; j += W) {
        float32x4_t e = bertc_expf_neon(vsubq_f32(vld1q_f32(x + j), splat(max)));
        if (y)
            vst1q_f32(y + j, e);
        acc = vaddq_f32(acc, e);
    }
    float sum = vaddvq_f32(acc);
    for (; j < n; j++) {
        float e = bertc_expf(x[j] - max);
        if (y)
            y[j] = e;
        sum += e;
    }
    return sum;
}

/* sum_j a[j] * b[j] of one row (n). */
static float row_dot(const float *a, const float *b, int64_t n)
{
    float32x4_t acc = vdupq_n_f32(0.0f);
    int64_t j = 0;
    for (; j + W <= n; j += W)
        acc = vfmaq_f32(acc, vld1q_f32(a + j), vld1q_f32(b + j));
    float sum = vaddvq_f32(acc);
    for (; j < n; j++)
        sum += a[j] * b[j];
    return sum;
}

/* y[j] = x[j] * s + t for one row (n). y may alias x. */
static void row_affine(float *y, const float *x, float s, float t,
                                           int64_t n)
{
    int64_t j = 0;
    for (; j + W <= n; j += W)
        vst1q_f32(y + j, vfmaq_f32(splat(t), vld1q_f32(x + j), splat(s)));
    for (; j < n; j++)
        y[j] = x[j] * s + t;
}

/* x, y are (rows, n); y may alias x. */
static void softmax_rows(float *y, const float *x, int64_t rows,
                                             int64_t n)
{
    for (int64_t r = 0; r < rows; r++) {
        float max = row_max(x + r * n, n);
        float sum = row_exp_sum(y + r * n, x + r * n, max, n);
        row_affine(y + r * n, y + r * n, 1.0f / sum, 0.0f, n);
    }
}

/* dx += y (dy - sum(dy y)); all (rows, n). */
static void softmax_rows_backward(float *dx, const float *y,
                                                      const float *dy, int64_t rows,
                                                      int64_t n, bool accumulate)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *yr = y + r * n, *dyr = dy + r * n;
        float *dxr = dx + r * n;
        float dot = row_dot(dyr, yr, n);
        int64_t j = 0;
        for (; j + W <= n; j += W) {
            float32x4_t d = vsubq_f32(vld1q_f32(dyr + j), splat(dot));
            vst1q_f32(dxr + j, vfmaq_f32(dx_base(dxr, j, accumulate), vld1q_f32(yr + j), d));
        }
        for (; j < n; j++)
            dxr[j] = (accumulate ? dxr[j] : 0.0f) + yr[j] * (dyr[j] - dot);
    }
}

/* y = x - max - log(sum exp(x - max)); x, y are (rows, n). */
static void log_softmax_rows(float *y, const float *x, int64_t rows,
                                                 int64_t n)
{
    for (int64_t r = 0; r < rows; r++) {
        float max = row_max(x + r * n, n);
        float log_sum = (float)log((double)row_exp_sum(NULL, x + r * n, max, n));
        row_affine(y + r * n, x + r * n, 1.0f, -max - log_sum, n);
    }
}

/* dx += dy - exp(y) sum(dy); all (rows, n). */
static void log_softmax_rows_backward(float *dx, const float *y,
                                                          const float *dy, int64_t rows,
                                                          int64_t n, bool accumulate)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *yr = y + r * n, *dyr = dy + r * n;
        float *dxr = dx + r * n;
        float32x4_t acc = vdupq_n_f32(0.0f);
        int64_t j = 0;
        for (; j + W <= n; j += W)
            acc = vaddq_f32(acc, vld1q_f32(dyr + j));
        float sum = vaddvq_f32(acc);
        for (; j < n; j++)
            sum += dyr[j];
        for (j = 0; j + W <= n; j += W) {
            float32x4_t e = bertc_expf_neon(vld1q_f32(yr + j));
            float32x4_t d = vfmsq_f32(vld1q_f32(dyr + j), e, splat(sum));
            vst1q_f32(dxr + j, vaddq_f32(dx_base(dxr, j, accumulate), d));
        }
        for (; j < n; j++)
            dxr[j] = (accumulate ? dxr[j] : 0.0f) + (dyr[j] - bertc_expf(yr[j]) * sum);
    }
}

/* ---- a long row's softmax passes (the MLM loss) ---------------------------- */

/* y[j] += b[j] (b NULL: y is only read); returns max_j y[j]. */
static float add_max(float *y, const float *b, int64_t n)
{
    if (!b)
        return row_max(y, n);
    float32x4_t m = splat(-INFINITY);
    int64_t j = 0;
    for (; j + W <= n; j += W) {
        float32x4_t v = vaddq_f32(vld1q_f32(y + j), vld1q_f32(b + j));
        vst1q_f32(y + j, v);
        m = vmaxq_f32(m, v);
    }
    float max = vmaxvq_f32(m), tail = bertc_kernel_add_max_scalar(y + j, b + j, n - j);
    return tail > max ? tail : max;
}

/* y[j] = exp(x[j] - shift); returns their sum, kept in double as the scalar
 * reference does: each 4-float vector is added as two 2-double halves. */
static double exp_sum(float *y, const float *x, float shift, int64_t n)
{
    float64x2_t lo = vdupq_n_f64(0.0), hi = vdupq_n_f64(0.0);
    int64_t j = 0;
    for (; j + W <= n; j += W) {
        float32x4_t e = bertc_expf_neon(vsubq_f32(vld1q_f32(x + j), splat(shift)));
        vst1q_f32(y + j, e);
        lo = vaddq_f64(lo, vcvt_f64_f32(vget_low_f32(e)));
        hi = vaddq_f64(hi, vcvt_high_f64_f32(e));
    }
    double sum = vaddvq_f64(vaddq_f64(lo, hi));
    return sum + bertc_kernel_exp_sum_scalar(y + j, x + j, shift, n - j);
}

/* ---- y += x, y += a x --------------------------------------------------------- */

static void add_inplace(float *y, const float *x, int64_t n)
{
    int64_t i = 0;
    for (; i + W <= n; i += W)
        vst1q_f32(y + i, vaddq_f32(vld1q_f32(y + i), vld1q_f32(x + i)));
    bertc_kernel_add_inplace_scalar(y + i, x + i, n - i);
}

/* A multiply, then an add (no FMA): the scalar reference's rounding. */
static void axpy(float *y, float a, const float *x, int64_t n)
{
    int64_t i = 0;
    for (; i + W <= n; i += W)
        vst1q_f32(y + i, vaddq_f32(vld1q_f32(y + i), vmulq_f32(splat(a), vld1q_f32(x + i))));
    bertc_kernel_axpy_scalar(y + i, a, x + i, n - i);
}

/* ---- LayerNorm --------------------------------------------------------------- */

/* sum_j x[j] of one row (n). */
static float row_sum(const float *x, int64_t n)
{
    float32x4_t acc = vdupq_n_f32(0.0f);
    int64_t j = 0;
    for (; j + W <= n; j += W)
        acc = vaddq_f32(acc, vld1q_f32(x + j));
    float sum = vaddvq_f32(acc);
    for (; j < n; j++)
        sum += x[j];
    return sum;
}

/* sum_j (x[j] - mu)^2 of one row (n): the two-pass variance, which does not
 * cancel the way E[x^2] - mu^2 does. */
static float row_sq_dev(const float *x, float mu, int64_t n)
{
    float32x4_t acc = vdupq_n_f32(0.0f);
    int64_t j = 0;
    for (; j + W <= n; j += W) {
        float32x4_t d = vsubq_f32(vld1q_f32(x + j), splat(mu));
        acc = vfmaq_f32(acc, d, d);
    }
    float sum = vaddvq_f32(acc);
    for (; j < n; j++)
        sum += (x[j] - mu) * (x[j] - mu);
    return sum;
}

/* y = (x - m) rs gamma + beta for one row (n); gamma, beta may be NULL. */
static void ln_row_out(float *y, const float *x, float m, float rs,
                                           const float *gamma, const float *beta, int64_t n)
{
    int64_t j = 0;
    for (; j + W <= n; j += W) {
        float32x4_t xhat = vmulq_f32(vsubq_f32(vld1q_f32(x + j), splat(m)), splat(rs));
        vst1q_f32(y + j, vfmaq_f32(load_or(beta, j, 0.0f), xhat, load_or(gamma, j, 1.0f)));
    }
    for (; j < n; j++)
        y[j] = (x[j] - m) * rs * (gamma ? gamma[j] : 1.0f) + (beta ? beta[j] : 0.0f);
}

/* x, y are (rows, n); gamma, beta are (n) or NULL; mean, rstd are (rows) or NULL. */
static void layernorm_rows(float *y, float *mean, float *rstd,
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
static void ln_row_sums(float *sum_g, float *sum_gx, float *dgamma,
                                            float *dbeta, const float *dy, const float *x,
                                            float m, float rs, const float *gamma, int64_t n)
{
    float32x4_t acc_g = vdupq_n_f32(0.0f), acc_gx = vdupq_n_f32(0.0f);
    int64_t j = 0;
    for (; j + W <= n; j += W) {
        float32x4_t d = vld1q_f32(dy + j);
        float32x4_t xhat = vmulq_f32(vsubq_f32(vld1q_f32(x + j), splat(m)), splat(rs));
        float32x4_t g = vmulq_f32(d, load_or(gamma, j, 1.0f));
        acc_g = vaddq_f32(acc_g, g);
        acc_gx = vfmaq_f32(acc_gx, g, xhat);
        if (dgamma)
            vst1q_f32(dgamma + j, vfmaq_f32(vld1q_f32(dgamma + j), d, xhat));
        if (dbeta)
            vst1q_f32(dbeta + j, vaddq_f32(vld1q_f32(dbeta + j), d));
    }
    *sum_g = vaddvq_f32(acc_g);
    *sum_gx = vaddvq_f32(acc_gx);
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
static void ln_row_dx(float *dx, const float *dy, const float *x, float m,
                                          float rs, const float *gamma, float mean_g,
                                          float mean_gx, int64_t n, bool accumulate)
{
    int64_t j = 0;
    for (; j + W <= n; j += W) {
        float32x4_t xhat = vmulq_f32(vsubq_f32(vld1q_f32(x + j), splat(m)), splat(rs));
        float32x4_t g = vmulq_f32(vld1q_f32(dy + j), load_or(gamma, j, 1.0f));
        float32x4_t t = vfmsq_f32(vsubq_f32(g, splat(mean_g)), xhat, splat(mean_gx));
        vst1q_f32(dx + j, vfmaq_f32(dx_base(dx, j, accumulate), splat(rs), t));
    }
    for (; j < n; j++) {
        float xhat = (x[j] - m) * rs;
        float g = dy[j] * (gamma ? gamma[j] : 1.0f);
        dx[j] = (accumulate ? dx[j] : 0.0f) + rs * (g - mean_g - xhat * mean_gx);
    }
}

/* dgamma (n), dbeta (n) accumulate; dx (rows, n) too, or is written when
 * !dx_accumulate; any may be NULL. */
static void layernorm_rows_backward(float *dx, float *dgamma, float *dbeta,
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

const RowKernels bertc_row_kernels_neon = {
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
    .dropout = bertc_kernel_dropout_scalar, /* no 64-bit lane multiply: see above */
    .dropout_backward = bertc_dropout_backward,
    .add_inplace = add_inplace,
    .axpy = axpy,
};
#endif /* AArch64 */
