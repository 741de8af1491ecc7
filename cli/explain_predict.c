/* cli/explain_predict.c — the last section of `bertc explain`: what the
 * model predicts, read from its outputs as its descriptor says
 * (ModelExplain.predict): classes with their id2label names, a label per token,
 * the best answer span, the sentences ranked, the top tokens at each [MASK]. */
#include "cli/explain.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* softmax of x[0..n) into p (max subtracted, double sums). */
static void softmax(const float *x, int64_t n, double *p)
{
    double hi = -INFINITY, sum = 0;
    for (int64_t i = 0; i < n; i++)
        hi = fmax(hi, x[i]);
    for (int64_t i = 0; i < n; i++)
        sum += p[i] = exp(x[i] - hi);
    for (int64_t i = 0; i < n; i++)
        p[i] /= sum;
}

static int64_t argmax(const float *x, int64_t n)
{
    int64_t best = 0;
    for (int64_t i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

static void label_name(FILE *f, const ExplainPage *p, const ExplainPrediction *w, int64_t i,
                       int64_t n)
{
    const char *name = w->labels ? (i < 2 ? w->labels[i] : NULL)
                     : n == p->m->cfg.num_labels ? bertc_bert_config_label(&p->m->cfg, (int)i)
                                                 : NULL;
    if (name)
        bertc_svg_put_text(f, name);
    else
        fprintf(f, "class %lld", (long long)i);
}

/* (B, C) logits: row 0 as probabilities, the best highlighted. */
static void classes(FILE *f, const ExplainPage *p, const ExplainPrediction *w, const Tensor *t)
{
    int64_t C = t->shape[t->ndim - 1];
    if (C == 1) {
        fprintf(f, "<p>Predicted value (regression): <b>%.5g</b></p>\n", t->data[0]);
        return;
    }
    double *prob = bertc_arena_alloc(p->arena, sizeof *prob * (size_t)C);
    softmax(t->data, C, prob);
    int64_t best = argmax(t->data, C);
    fprintf(f, "<table><tr><th>label</th><th>logit</th><th>softmax</th><th></th></tr>\n");
    for (int64_t i = 0; i < C; i++) {
        fprintf(f, "<tr%s><td>", i == best ? " class=\"best\"" : "");
        label_name(f, p, w, i, C);
        fprintf(f, "</td><td>%.4f</td><td>%.4f</td><td><span class=\"bar\" style=\"width:%dpx\">"
                   "</span></td></tr>\n", t->data[i], prob[i], (int)lround(prob[i] * 200));
    }
    fprintf(f, "</table>\n<p>Prediction: <b>");
    label_name(f, p, w, best, C);
    fprintf(f, "</b></p>\n");
}

/* (B, S, C): the best label of every token of sequence 0. */
static void token_classes(FILE *f, const ExplainPage *p, const ExplainPrediction *w,
                          const Tensor *t)
{
    int64_t S = t->shape[1], C = t->shape[2];
    fprintf(f, "<table><tr><th>token</th><th>label</th></tr>\n");
    for (int64_t s = 0; s < S && s < p->tk->S; s++) {
        fprintf(f, "<tr><td>");
        bertc_svg_put_text(f, p->tk->labels[s]);
        fprintf(f, "</td><td>");
        label_name(f, p, w, argmax(t->data + s * C, C), C);
        fprintf(f, "</td></tr>\n");
    }
    fprintf(f, "</table>\n");
}

/* start, end (B, S): the span s <= e < s + 30 of the highest start + end. */
static void span(FILE *f, const ExplainPage *p, const Tensor *start, const Tensor *end)
{
    int64_t S = start->shape[start->ndim - 1], bs = 0, be = 0;
    double best = -INFINITY;
    for (int64_t s = 0; s < S && s < p->tk->read; s++)
        for (int64_t e = s; e < S && e < s + 30 && e < p->tk->read; e++)
            if (start->data[s] + end->data[e] > best) {
                best = start->data[s] + end->data[e];
                bs = s;
                be = e;
            }
    fprintf(f, "<p>Best span: tokens %lld..%lld (start + end logit %.4f): <b>", (long long)bs,
            (long long)be, best);
    for (int64_t t = bs; t <= be; t++) {
        bertc_svg_put_text(f, p->tk->labels[t]);
        fputc(' ', f);
    }
    fprintf(f, "</b></p>\n");
}

/* (B, N) scores: the sentences from the highest. */
static void sentences(FILE *f, const ExplainPage *p, const Tensor *t)
{
    int64_t N = t->shape[t->ndim - 1];
    bool *done = bertc_arena_alloc(p->arena, sizeof *done * (size_t)N);
    memset(done, 0, sizeof *done * (size_t)N);
    fprintf(f, "<table><tr><th>rank</th><th>sentence</th><th>score</th></tr>\n");
    for (int64_t r = 0; r < N; r++) {
        int64_t best = -1;
        for (int64_t n = 0; n < N; n++)
            if (!done[n] && (best < 0 || t->data[n] > t->data[best]))
                best = n;
        done[best] = true;
        fprintf(f, "<tr%s><td>%lld</td><td>sentence %lld", r == 0 ? " class=\"best\"" : "",
                (long long)r + 1, (long long)best);
        if (best < p->ex->n_sentences) {
            fprintf(f, ": ");
            bertc_svg_put_text(f, p->ex->sentences[best]);
        }
        fprintf(f, "</td><td>%.4f</td></tr>\n", t->data[best]);
    }
    fprintf(f, "</table>\n");
}

/* The 3 most likely tokens of a row of V logits. */
static void top_tokens(FILE *f, const ExplainPage *p, const float *x, int64_t V)
{
    double *prob = bertc_arena_alloc(p->arena, sizeof *prob * (size_t)V);
    softmax(x, V, prob);
    int64_t top[3] = {-1, -1, -1};
    for (int k = 0; k < 3 && k < V; k++)
        for (int64_t v = 0; v < V; v++)
            if ((k < 1 || v != top[0]) && (k < 2 || v != top[1]) &&
                (top[k] < 0 || prob[v] > prob[top[k]]))
                top[k] = v;
    for (int k = 0; k < 3 && k < V; k++) {
        const char *s = bertc_tokenizer_token(p->tok, (int32_t)top[k]);
        fprintf(f, "%s", k ? ", " : "");
        bertc_svg_put_text(f, s ? s : "?");
        fprintf(f, " (%.3f)", prob[top[k]]);
    }
}

/* (B, S, V): the [MASK] positions' top tokens, or every position's. */
static void tokens(FILE *f, const ExplainPage *p, const Tensor *t)
{
    int64_t S = t->shape[1], V = t->shape[2], masked = 0;
    for (int64_t s = 0; s < S && s < p->tk->S; s++)
        masked += p->tk->row[s] == p->tok->mask_id;
    fprintf(f, "<p>%s</p>\n<table><tr><th>position</th><th>token</th><th>top 3 "
               "predictions (probability)</th></tr>\n",
            masked ? "At each [MASK]:" : "No [MASK] in the text: every position's guess at "
                                         "its own token:");
    for (int64_t s = 0; s < S && s < p->tk->S; s++) {
        if (masked && p->tk->row[s] != p->tok->mask_id)
            continue;
        fprintf(f, "<tr><td>%lld</td><td>", (long long)s);
        bertc_svg_put_text(f, p->tk->labels[s]);
        fprintf(f, "</td><td>");
        top_tokens(f, p, t->data + s * V, V);
        fprintf(f, "</td></tr>\n");
    }
    fprintf(f, "</table>\n");
}

/* (n_masked, V): one row per masked token, in order; (B, S, V): the rows
 * at the [MASK] positions. */
static void masked_rows(FILE *f, const ExplainPage *p, const Tensor *t)
{
    int64_t masked = 0;
    for (int64_t s = 0; s < p->tk->S; s++)
        masked += p->tk->row[s] == p->tok->mask_id;
    if (t->ndim == 3 && masked > 0) {
        tokens(f, p, t);
        return;
    }
    if (t->ndim != 2 || t->shape[0] == 0 || masked == 0) {
        fprintf(f, "<p class=\"note\">No masked span: write [MASK] [MASK] in the text to see "
                   "the span boundary objective predict it.</p>\n");
        return;
    }
    fprintf(f, "<table><tr><th>masked token</th><th>top 3 from the boundaries "
               "(probability)</th></tr>\n");
    for (int64_t r = 0; r < t->shape[0]; r++) {
        fprintf(f, "<tr><td>%lld</td><td>", (long long)r);
        top_tokens(f, p, t->data + r * t->shape[1], t->shape[1]);
        fprintf(f, "</td></tr>\n");
    }
    fprintf(f, "</table>\n");
}

static void one(FILE *f, const ExplainPage *p, const ExplainPrediction *w)
{
    const OutputItem *a = explain_output(p->out, w->output);
    const OutputItem *b = w->output2 ? explain_output(p->out, w->output2) : NULL;
    fprintf(f, "<h3>From <code>%s</code>%s%s</h3>\n", w->output, b ? " and " : "",
            b ? w->output2 : "");
    if (!a || (w->output2 && !b)) {
        fprintf(f, "<p class=\"note\">Skipped: %s put no <code>%s</code>.</p>\n",
                p->m->arch->name, a ? w->output2 : w->output);
        return;
    }
    Tensor t = explain_values(a, p->arena);
    bool rank3 = t.ndim == 3;
    if (w->kind == PREDICT_CLASSES && t.ndim == 2)
        classes(f, p, w, &t);
    else if (w->kind == PREDICT_TOKEN_CLASSES && rank3)
        token_classes(f, p, w, &t);
    else if (w->kind == PREDICT_SPAN && t.ndim == 2) {
        Tensor e = explain_values(b, p->arena);
        span(f, p, &t, &e);
    } else if (w->kind == PREDICT_SENTENCES && t.ndim == 2)
        sentences(f, p, &t);
    else if (w->kind == PREDICT_TOKENS && rank3)
        tokens(f, p, &t);
    else if (w->kind == PREDICT_MASKED_ROWS)
        masked_rows(f, p, &t);
    else
        fprintf(f, "<p class=\"note\">Skipped: <code>%s</code> has %d dimensions, not what "
                   "this prediction reads.</p>\n", w->output, t.ndim);
}

int explain_predictions(FILE *f, const ExplainPage *p, const ModelExplain *a, BertcError *err)
{
    (void)err;
    fprintf(f, "<h2 id=\"prediction\">Prediction</h2>\n");
    if (a->predict[0].kind == PREDICT_NONE) {
        fprintf(f, "<p>%s has no prediction head: its outputs above are the result.</p>\n",
                p->m->arch->name);
        return 0;
    }
    for (int i = 0; i < EXPLAIN_MAX_PREDICTIONS; i++)
        if (a->predict[i].kind != PREDICT_NONE)
            one(f, p, &a->predict[i]);
    return 0;
}
