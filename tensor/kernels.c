/* tensor/kernels.c — scalar reference kernels for the row-wise ops: the
 * fallback on every target and the oracle for the SIMD paths, reached through
 * their table, bertc_row_kernels_scalar (at the bottom). Each forward is
 * followed by its backward; backward kernels accumulate into dx, or write it
 * when `accumulate` is false (then dx is not read). exp, erf and tanh
 * are bertc's own (tensor/vmath.c), so these give the same bits on every
 * target; sums are accumulated in double. */
#include "tensor/kernels_internal.h"

#include <math.h>

/* softmax: y_j = exp(x_j - max) / sum_k exp(x_k - max). Subtracting the row
 * max keeps exp() from overflowing and does not change the result. */
static void softmax_rows_scalar(float *y, const float *x, int64_t rows, int64_t n)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * n;
        float *yr = y + r * n;
        float max = -INFINITY;
        for (int64_t j = 0; j < n; j++)
            max = xr[j] > max ? xr[j] : max;
        double sum = 0.0;
        for (int64_t j = 0; j < n; j++) {
            yr[j] = bertc_expf(xr[j] - max);
            sum += yr[j];
        }
        float inv = (float)(1.0 / sum);
        for (int64_t j = 0; j < n; j++)
            yr[j] *= inv;
    }
}

/* dL/dx_j = sum_i dy_i * dy_i/dx_j = y_j (dy_j - sum_i dy_i y_i). */
static void softmax_rows_backward_scalar(float *dx, const float *y, const float *dy,
                                         int64_t rows, int64_t n, bool accumulate)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *yr = y + r * n, *dyr = dy + r * n;
        float *dxr = dx + r * n;
        double dot = 0.0;
        for (int64_t j = 0; j < n; j++)
            dot += (double)dyr[j] * yr[j];
        for (int64_t j = 0; j < n; j++)
            dxr[j] = (accumulate ? dxr[j] : 0.0f) + yr[j] * (dyr[j] - (float)dot);
    }
}

static void log_softmax_rows_scalar(float *y, const float *x, int64_t rows, int64_t n)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * n;
        float *yr = y + r * n;
        float max = -INFINITY;
        for (int64_t j = 0; j < n; j++)
            max = xr[j] > max ? xr[j] : max;
        double sum = 0.0;
        for (int64_t j = 0; j < n; j++)
            sum += bertc_expf(xr[j] - max);
        float log_sum = (float)log(sum);
        for (int64_t j = 0; j < n; j++)
            yr[j] = xr[j] - max - log_sum;
    }
}

/* y = x - logsumexp(x), so dy_i/dx_j = [i==j] - softmax_j and
 * dL/dx_j = dy_j - exp(y_j) * sum_i dy_i. */
static void log_softmax_rows_backward_scalar(float *dx, const float *y, const float *dy,
                                             int64_t rows, int64_t n, bool accumulate)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *yr = y + r * n, *dyr = dy + r * n;
        float *dxr = dx + r * n;
        double sum = 0.0;
        for (int64_t j = 0; j < n; j++)
            sum += dyr[j];
        for (int64_t j = 0; j < n; j++)
            dxr[j] = (accumulate ? dxr[j] : 0.0f) + (dyr[j] - bertc_expf(yr[j]) * (float)sum);
    }
}

/* y[j] += b[j] and the row max in one pass: the bias add of a logits row
 * costs no pass of its own. */
static float add_max_scalar(float *y, const float *b, int64_t n)
{
    float max = -INFINITY;
    for (int64_t j = 0; j < n; j++) {
        if (b)
            y[j] += b[j];
        max = y[j] > max ? y[j] : max;
    }
    return max;
}

/* y[j] = exp(x[j] - shift) and their sum in one pass. The sum is kept in
 * double: over a 30522-word vocabulary a float sum would carry an error of
 * up to ~V eps/2 = 2e-3 relative into log(sum), i.e. into the loss. */
static double exp_sum_scalar(float *y, const float *x, float shift, int64_t n)
{
    double sum = 0.0;
    for (int64_t j = 0; j < n; j++) {
        y[j] = bertc_expf(x[j] - shift);
        sum += y[j];
    }
    return sum;
}

/* Mean and variance are accumulated in double: with H = 768 and activations
 * of size ~10, float sums lose digits that the 1e-4 parity tolerance needs. */
static void layernorm_rows_scalar(float *y, float *mean, float *rstd, const float *x,
                                  const float *gamma, const float *beta,
                                  int64_t rows, int64_t n, float eps)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * n;
        float *yr = y + r * n;
        double sum = 0.0;
        for (int64_t j = 0; j < n; j++)
            sum += xr[j];
        double mu = sum / (double)n;
        double var = 0.0;
        for (int64_t j = 0; j < n; j++) {
            double d = xr[j] - mu;
            var += d * d;
        }
        var /= (double)n; /* biased, as torch.nn.LayerNorm */
        float rs = (float)(1.0 / sqrt(var + eps));
        float m = (float)mu;
        for (int64_t j = 0; j < n; j++) {
            float xhat = (xr[j] - m) * rs;
            float g = gamma ? gamma[j] : 1.0f;
            float b = beta ? beta[j] : 0.0f;
            yr[j] = xhat * g + b;
        }
        if (mean)
            mean[r] = m;
        if (rstd)
            rstd[r] = rs;
    }
}

/* With xhat = (x - mean) * rstd and g = dy * gamma:
 *   dx = rstd * (g - mean_j(g) - xhat * mean_j(g * xhat))
 *   dgamma += sum_rows dy * xhat,   dbeta += sum_rows dy.
 * dx accumulates too, or is written when !dx_accumulate. */
static void layernorm_rows_backward_scalar(float *dx, float *dgamma, float *dbeta,
                                           const float *dy, const float *x,
                                           const float *mean, const float *rstd,
                                           const float *gamma, int64_t rows, int64_t n,
                                           bool dx_accumulate)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * n, *dyr = dy + r * n;
        float m = mean[r], rs = rstd[r];
        double sum_g = 0.0, sum_gx = 0.0;
        for (int64_t j = 0; j < n; j++) {
            float xhat = (xr[j] - m) * rs;
            float g = dyr[j] * (gamma ? gamma[j] : 1.0f);
            sum_g += g;
            sum_gx += (double)g * xhat;
            if (dgamma)
                dgamma[j] += dyr[j] * xhat;
            if (dbeta)
                dbeta[j] += dyr[j];
        }
        if (!dx)
            continue;
        float mean_g = (float)(sum_g / (double)n);
        float mean_gx = (float)(sum_gx / (double)n);
        float *dxr = dx + r * n;
        for (int64_t j = 0; j < n; j++) {
            float xhat = (xr[j] - m) * rs;
            float g = dyr[j] * (gamma ? gamma[j] : 1.0f);
            dxr[j] = (dx_accumulate ? dxr[j] : 0.0f) + rs * (g - mean_g - xhat * mean_gx);
        }
    }
}

/* The exact (erf) GELU of BERT and torch's gelu(approximate='none'), x Phi(x)
 * with Phi the normal CDF: the tanh form differs from it by up to 4.7e-4 (at
 * x = -2.70), far outside the parity tolerance, so the two are separate
 * kernels. bertc_normal_cdf has no exp and no branch per element; its
 * relative error is 1.2e-7 for x >= -3, smaller in the negative tail than
 * float's 1 + erf(x / sqrt 2), which cancels there. */
static void gelu_scalar(float *y, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] * bertc_normal_cdf(x[i]);
}

/* d/dx [x Phi(x)] = Phi(x) + x phi(x), phi the standard normal density. */
static void gelu_backward_scalar(float *dx, const float *x, const float *dy, int64_t n,
                                 bool accumulate)
{
    for (int64_t i = 0; i < n; i++) {
        float cdf = bertc_normal_cdf(x[i]);
        float pdf = GELU_INV_SQRT_2PI * bertc_expf(-0.5f * x[i] * x[i]);
        dx[i] = (accumulate ? dx[i] : 0.0f) + dy[i] * (cdf + x[i] * pdf);
    }
}

static void gelu_tanh_scalar(float *y, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float u = GELU_SQRT2_PI * (x[i] + GELU_TANH_A * x[i] * x[i] * x[i]);
        y[i] = 0.5f * x[i] * (1.0f + bertc_tanhf(u));
    }
}

/* y = 0.5 x (1 + t), t = tanh(u), u = c (x + a x^3):
 * dy/dx = 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 a x^2). */
static void gelu_tanh_backward_scalar(float *dx, const float *x, const float *dy, int64_t n,
                                      bool accumulate)
{
    for (int64_t i = 0; i < n; i++) {
        float x2 = x[i] * x[i];
        float t = bertc_tanhf(GELU_SQRT2_PI * (x[i] + GELU_TANH_A * x2 * x[i]));
        float du = GELU_SQRT2_PI * (1.0f + 3.0f * GELU_TANH_A * x2);
        float d = 0.5f * (1.0f + t) + 0.5f * x[i] * (1.0f - t * t) * du;
        dx[i] = (accumulate ? dx[i] : 0.0f) + dy[i] * d;
    }
}

/* a, out, keep are (n). Draw i of the stream that starts at `state` is
 * rng_mix(state + (i+1) RNG_GAMMA): the loop steps the state exactly as
 * bertc_rng_next_u64 does, and keeps the element when bertc_rng_uniform of the draw is
 * >= p, tested in integers as (draw >> 11) >= threshold. */
static void dropout_scalar(const float *a, float *out, uint8_t *keep, int64_t n,
                           uint64_t state, uint64_t threshold, float scale)
{
    for (int64_t i = 0; i < n; i++) {
        state += RNG_GAMMA;
        keep[i] = (rng_mix(state) >> 11) >= threshold;
        out[i] = keep[i] ? a[i] * scale : 0.0f;
    }
}

/* out = keep * a * scale, so da += keep * scale * dy; a dropped element's
 * da is not touched at all (adding 0 would turn a -0 into +0). */
static void dropout_backward_scalar(const uint8_t *keep, const float *dy, float scale,
                                    float *da, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (keep[i])
            da[i] += scale * dy[i];
}

static void add_inplace_scalar(float *y, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] += x[i];
}

static void axpy_scalar(float *y, float a, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] += a * x[i];
}

static void adam_scalar(float *p, const float *g, float *m, float *v, int64_t n,
                        const AdamStep *s)
{
    for (int64_t i = 0; i < n; i++) {
        float gi = g ? g[i] : 0.0f;
        if (s->decoupled)
            p[i] *= s->decay;
        else if (s->wd != 0.0f)
            gi += s->wd * p[i];
        m[i] = m[i] * s->b1 + s->one_minus_b1 * gi;
        v[i] = v[i] * s->b2 + s->one_minus_b2 * gi * gi;
        float denom = sqrtf(v[i]) / s->bc2_sqrt + s->eps;
        p[i] += s->neg_step * m[i] / denom;
    }
}

/* y[i] = f(x[i]): bertc_expf_n, bertc_tanhf_n, bertc_erff_n and
 * bertc_normal_cdf_n on this path. */
static void expf_n_scalar(float *y, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = bertc_expf(x[i]);
}

static void tanhf_n_scalar(float *y, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = bertc_tanhf(x[i]);
}

static void erff_n_scalar(float *y, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = bertc_erff(x[i]);
}

static void normal_cdf_n_scalar(float *y, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = bertc_normal_cdf(x[i]);
}

/* The scalar path's table: the fallback on every target and, through it, the
 * oracle the tests hold every SIMD path to. */
const RowKernels bertc_row_kernels_scalar = {
    .softmax_rows = softmax_rows_scalar,
    .softmax_rows_backward = softmax_rows_backward_scalar,
    .log_softmax_rows = log_softmax_rows_scalar,
    .log_softmax_rows_backward = log_softmax_rows_backward_scalar,
    .add_max = add_max_scalar,
    .exp_sum = exp_sum_scalar,
    .layernorm_rows = layernorm_rows_scalar,
    .layernorm_rows_backward = layernorm_rows_backward_scalar,
    .gelu = gelu_scalar,
    .gelu_backward = gelu_backward_scalar,
    .gelu_tanh = gelu_tanh_scalar,
    .gelu_tanh_backward = gelu_tanh_backward_scalar,
    .dropout = dropout_scalar,
    .dropout_backward = dropout_backward_scalar,
    .add_inplace = add_inplace_scalar,
    .axpy = axpy_scalar,
    .adam = adam_scalar,
    .expf_n = expf_n_scalar,
    .tanhf_n = tanhf_n_scalar,
    .erff_n = erff_n_scalar,
    .normal_cdf_n = normal_cdf_n_scalar,
};
