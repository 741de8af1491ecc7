/* cli/text_batches.c — the sequences a model reads for the inputs of
 * `bertc predict` and `bertc embed`, and their batches.
 *
 * Each input is tokenized once, to the limit. One that is longer is either
 * truncated (counted for the run's one warning line) or, with a stride,
 * read whole in overlapping windows, as Hugging Face's tokenizer makes
 * them with return_overflowing_tokens: window w holds text A's tokens
 * [w·step, w·step + L) between [CLS] and [SEP] (and the whole pair after
 * it), L = the limit less the special tokens and the pair, step = L −
 * stride, so two neighbours share `stride` tokens and the last one ends
 * with the text.
 *
 * The sequences are then sorted by length and batched in that order, so a
 * batch holds sequences of nearly one length and pads little (a batch ends
 * early rather than pad more than an eighth or hold more than BATCH_TOKENS):
 * a batch of 8 costs about 8 sequences' work, not 8 times the longest
 * one's. Each row's outputs go to the caller's callback with the sequence's
 * input and window, so results land in input order whatever order the
 * batches ran. */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- sequences: a text, or its windows ------------------------------------ */

typedef struct Sequences {
    CliSeq *seq;
    int n, cap;
} Sequences;

static CliSeq *add_seq(Sequences *s, Arena *arena)
{
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 64;
        CliSeq *bigger = bertc_arena_alloc(arena, sizeof *bigger * (size_t)cap);
        if (s->n)
            memcpy(bigger, s->seq, sizeof *bigger * (size_t)s->n);
        s->seq = bigger;
        s->cap = cap;
    }
    return &s->seq[s->n++];
}

/* The windows of full (text A untruncated, the pair whole) for a limit of
 * max_len tokens and a stride (bertc_encoding_windows), as sequences. */
static int add_windows(const CliSeqPlan *p, const CliText *t, int input, int index,
                       const Encoding *full, Arena *arena, Sequences *s, BertcError *err)
{
    Encoding *windows;
    int32_t n;
    if (bertc_encoding_windows(full, p->max_len, p->stride, arena, &windows, &n, err) != 0) {
        char why[BERTC_ERROR_LEN];
        snprintf(why, sizeof why, "%s", err->msg);
        return bertc_errorf(err, "input %d: %s (--max-len %d, --stride %d)",
                            cli_text_number(t, index), why, (int)p->max_len, (int)p->stride);
    }
    for (int32_t w = 0; w < n; w++)
        *add_seq(s, arena) = (CliSeq){.input = input, .window = w, .enc = windows[w]};
    return 0;
}

/* The sequences of input i: its tokens to the limit, or its windows. */
static int add_input(const CliModel *cm, const CliSeqPlan *p, const CliText *t, int input,
                     int index, Arena *arena, Sequences *s, CliRunStats *st, BertcError *err)
{
    const char *a = t->text, *b = t->pair;
    Encoding e;
    if (bertc_tokenizer_encode(cm->tok, arena, a, strlen(a), b, b ? strlen(b) : 0, p->max_len,
                               false, &e, err) != 0)
        return -1;
    st->inputs++;
    st->longest = e.untruncated > st->longest ? e.untruncated : st->longest;
    if (e.untruncated <= p->max_len || p->stride < 0) {
        if (e.untruncated > p->max_len) {
            st->truncated++;
            st->cut += e.untruncated - e.S;
        }
        CliSeq *q = add_seq(s, arena);
        *q = (CliSeq){.input = input, .window = 0, .enc = e};
        return 0;
    }
    st->windowed++;
    Encoding full;
    if (bertc_tokenizer_encode(cm->tok, arena, a, strlen(a), b, b ? strlen(b) : 0, 0, false,
                               &full, err) != 0)
        return -1;
    return add_windows(p, t, input, index, &full, arena, s, err);
}

/* ---- batches in order of length ------------------------------------------ */

static int longer_first(const void *x, const void *y)
{
    const CliSeq *const *a = x, *const *b = y;
    if ((*a)->enc.S != (*b)->enc.S)
        return (*a)->enc.S > (*b)->enc.S ? -1 : 1;
    return *a < *b ? -1 : *a > *b;   /* the input order among equals: a stable sort */
}

/* The most tokens (padded) a batch holds: beyond about 8 x 128 a batch's
 * activations and attention maps outgrow the caches and a BERT-base batch
 * costs more per token, not less (bench/predict_batching.sh: batch 32 of
 * 128-token texts ran 0.84x batch 1). */
#define BATCH_TOKENS 1024

/* How many of order[0, n) (longest first) the next batch takes: up to
 * batch_size and BATCH_TOKENS, but not one that would make padding more
 * than an eighth of the batch (k rows padded to the first's length). Where
 * the lengths spread (few texts, or a long tail) a batch ends early rather
 * than pad its short rows to a long one: a larger --batch-size is then
 * never much more work than batch 1. */
static int batch_rows(CliSeq *const *order, int n, int batch_size)
{
    int64_t longest = order[0]->enc.S, real = longest;
    int k = 1;
    for (; k < n && k < batch_size; k++) {
        int64_t padded = (int64_t)(k + 1) * longest;
        if (padded > BATCH_TOKENS || padded - (real + order[k]->enc.S) > padded / 8)
            break;
        real += order[k]->enc.S;
    }
    return k;
}

/* Sequences order[0, k) as one batch through the model, each row to fn. */
static int run_batch(const CliModel *cm, const CliSeqPlan *p, CliSeq *const *order, int k,
                     Graph *g, const CliText *t, CliSeqRow fn, void *ctx, CliRunStats *st,
                     BertcError *err)
{
    TextExample *ex = bertc_arena_calloc(g->step, (size_t)k, sizeof *ex);
    for (int j = 0; j < k; j++) {
        const CliText *in = &t[order[j]->input];
        ex[j] = (TextExample){.text = in->text, .text_pair = in->pair,
                              .context_id = p->context, .encoding = &order[j]->enc};
    }
    Batch b;
    Outputs out;
    bertc_batch_init(&b, "the texts");
    bertc_outputs_init(&out);
    out.final_only = true;   /* predict and embed read logits, pooled or last hidden states */
    Model *m = cm->model;
    if (bertc_model_batch_from_text(m, cm->tok, ex, k, p->max_len, g, &b, err) != 0) {
        if (p->context >= 0) {   /* the flag the value came from */
            char msg[BERTC_ERROR_LEN];
            snprintf(msg, sizeof msg, "%s", err->msg);
            bertc_errorf(err, "--context %d: %s", p->context, msg);
        }
        return -1;
    }
    st->sequences += k;
    st->tokens_padded += (int64_t)k * order[0]->enc.S;   /* the longest comes first */
    for (int j = 0; j < k; j++)
        st->tokens += order[j]->enc.S;
    if (cli_forward(m, g, &b, &out, err) != 0)
        return -1;
    for (int j = 0; j < k; j++)
        if (fn(ctx, order[j], &b, &out, j, g, err) != 0)
            return -1;
    return 0;
}

int cli_run_texts(const CliModel *cm, const CliSeqPlan *p, const CliText *t, int first, int n,
                  CliSeqRow fn, void *ctx, CliRunStats *st, BertcError *err)
{
    double start = now_seconds();
    Arena *arena = bertc_arena_create("the inputs' tokens", 1 << 20);
    Graph *g = bertc_ag_graph_create(1 << 20, 0);
    bertc_ag_set_training(g, false);
    bertc_ag_set_no_grad(g, true);
    Sequences s = {0};
    int rc = 0;
    for (int i = 0; rc == 0 && i < n; i++)
        if (!cli_text_blank(&t[i]))
            rc = add_input(cm, p, &t[i], i, first + i, arena, &s, st, err);
    CliSeq **order = bertc_arena_alloc(arena, sizeof *order * (size_t)(s.n > 0 ? s.n : 1));
    for (int i = 0; i < s.n; i++)
        order[i] = &s.seq[i];
    qsort(order, (size_t)s.n, sizeof *order, longer_first);
    for (int i = 0, k; rc == 0 && i < s.n; i += k) {
        k = batch_rows(order + i, s.n - i, p->batch_size);
        rc = run_batch(cm, p, order + i, k, g, t, fn, ctx, st, err);
        bertc_ag_graph_reset(g);
    }
    bertc_ag_graph_destroy(g);
    bertc_arena_destroy(arena);
    st->seconds += now_seconds() - start;
    return rc;
}

int cli_aggregate(const CliCommand *c, const CliArgs *a, WindowAggregate *rule,
                  BertcError *err)
{
    static const char *const names[] = {"mean", "max", "first"};   /* WindowAggregate's order */
    if (cli_given(c, a, "--aggregate") && !cli_given(c, a, "--stride"))
        return bertc_errorf(err, "--aggregate: give --stride N too (a text is one window "
                            "without it: nothing to aggregate)");
    const char *value = cli_value(c, a, "--aggregate");
    for (int i = 0; i < 3; i++)
        if (!strcmp(value, names[i])) {
            *rule = (WindowAggregate)i;
            return 0;
        }
    char shown[BERTC_SHOWN];
    return bertc_errorf(err, "--aggregate '%s': expected mean, max or first",
                        bertc_shown(value, shown));
}

/* ---- what the run tells the user ------------------------------------------ */

void cli_warn_truncation(const char *command, const CliRunStats *st, int32_t max_len,
                         bool can_stride)
{
    if (st->truncated == 0)
        return;
    fprintf(stderr, "bertc %s: warning: %lld of %lld inputs are longer than %d tokens and were "
            "truncated to it (the longest is %d; %lld tokens unread)%s\n", command,
            (long long)st->truncated, (long long)st->inputs, (int)max_len, (int)st->longest,
            (long long)st->cut,
            can_stride ? "; --stride N reads a long text whole, in windows" : " (--max-len)");
}

void cli_print_stats(const char *command, const CliRunStats *st)
{
    double pad = st->tokens > 0 ? 100.0 * (double)(st->tokens_padded - st->tokens) /
                                      (double)st->tokens
                                : 0.0;
    fprintf(stderr, "bertc %s: %lld inputs (%lld in windows), %lld sequences, %lld tokens "
            "+ %.1f %% padding in %.2f s: %.0f tokens/s\n", command, (long long)st->inputs,
            (long long)st->windowed, (long long)st->sequences, (long long)st->tokens, pad,
            st->seconds, st->seconds > 0 ? (double)st->tokens / st->seconds : 0.0);
}
