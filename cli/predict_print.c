/* cli/predict_print.c — the lines `bertc predict` prints, TSV or JSONL
 * (docs/predict.md). TSV fields never hold a tab or a line end (they
 * become spaces); JSON strings are quoted by cli_json_string. */
#include "cli/predict.h"

#include <stdlib.h>
#include <string.h>

const char *predict_input_name(const CliText *t, int index)
{
    static char name[32];
    if (t->line > 0)
        snprintf(name, sizeof name, "line %d", t->line);
    else
        snprintf(name, sizeof name, "text %d", index + 1);
    return name;
}

static void tsv_field(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        putchar(s[i] == '\t' || s[i] == '\n' || s[i] == '\r' ? ' ' : s[i]);
}

static void tsv_str(const char *s) { tsv_field(s, strlen(s)); }

static void json_field(const char *s, size_t len) { cli_json_string(stdout, s, len); }

static void json_str(const char *s) { json_field(s, strlen(s)); }

/* {"line": N, "text": ..., "text_pair": ..., — the start of every JSONL object */
static void json_open(const CliText *t, int index, const char *text_key, const char *pair_key)
{
    printf("{\"line\": %d, \"%s\": ", cli_text_number(t, index), text_key);
    json_str(t->text);
    if (t->pair) {
        printf(", \"%s\": ", pair_key);
        json_str(t->pair);
    }
}

/* ---- sequence classification ---------------------------------------------- */

typedef enum ClassRule { RULE_SOFTMAX, RULE_SIGMOID, RULE_REGRESSION } ClassRule;

/* HF's TextClassificationPipeline: softmax for single-label, sigmoid for
 * multi-label; bertc prints a regression's value as it is. The problem is
 * the one the model's loss solves (bertc_problem_type; a prediction has no
 * labels). */
static ClassRule class_rule(const BertConfig *cfg)
{
    switch (bertc_problem_type(cfg, true)) {
    case PROBLEM_MULTI_LABEL:
        return RULE_SIGMOID;
    case PROBLEM_REGRESSION:
        return RULE_REGRESSION;
    default:
        return RULE_SOFTMAX;
    }
}

void predict_print_classes(const PredictRun *r, const CliText *t, int index, const float *logits,
                           int C)
{
    ClassRule rule = class_rule(&r->cm->model->cfg);
    float p[C];
    int order[C], n_list = 0;
    if (rule == RULE_SOFTMAX)
        bertc_softmax(logits, C, p);
    for (int c = 0; c < C; c++)
        p[c] = rule == RULE_SIGMOID ? bertc_sigmoid(logits[c])
               : rule == RULE_REGRESSION ? logits[c] : p[c];
    bertc_top_k(p, C, C, order);
    bool listed = r->top_k > 0 || rule == RULE_SIGMOID || (rule == RULE_REGRESSION && C > 1);
    if (r->top_k > 0)
        n_list = r->top_k < C ? r->top_k : C;
    else if (rule == RULE_SIGMOID)   /* every label at or above 0.5 */
        while (n_list < C && p[order[n_list]] >= 0.5f)
            n_list++;
    else if (listed)
        n_list = C;
    int best = rule == RULE_REGRESSION ? 0 : order[0];
    if (r->jsonl) {
        json_open(t, index, "text", "text_pair");
        printf(", \"label\": ");
        json_str(r->labels[best]);
        printf(", \"score\": %.6g", p[best]);
        if (listed) {
            printf(", \"labels\": [");
            for (int j = 0; j < n_list; j++) {
                printf("%s{\"label\": ", j ? ", " : "");
                json_str(r->labels[order[j]]);
                printf(", \"score\": %.6g}", p[order[j]]);
            }
            putchar(']');
        }
        puts("}");
        return;
    }
    tsv_str(r->labels[best]);
    printf("\t%.6g\t", p[best]);
    tsv_str(t->text);
    if (listed) {
        putchar('\t');
        for (int j = 0; j < n_list; j++) {
            printf("%s", j ? " " : "");
            tsv_str(r->labels[order[j]]);
            printf(":%.6g", p[order[j]]);
        }
    }
    putchar('\n');
}

/* ---- token classification ------------------------------------------------- */

void predict_print_entities(const PredictRun *r, const CliText *t, int index, const Entity *e,
                            int n)
{
    if (r->jsonl) {
        json_open(t, index, "text", "text_pair");
        printf(", \"entities\": [");
        for (int i = 0; i < n; i++) {
            printf("%s{\"entity_group\": ", i ? ", " : "");
            json_field(e[i].group, (size_t)e[i].group_len);
            printf(", \"score\": %.6g, \"word\": ", e[i].score);
            json_field(t->text + e[i].byte_start, (size_t)(e[i].byte_end - e[i].byte_start));
            printf(", \"start\": %d, \"end\": %d}", (int)e[i].start, (int)e[i].end);
        }
        puts("]}");
        return;
    }
    for (int i = 0; i < n; i++) {
        printf("%d\t", cli_text_number(t, index));
        tsv_field(e[i].group, (size_t)e[i].group_len);
        printf("\t%d\t%d\t%.6g\t", (int)e[i].start, (int)e[i].end, e[i].score);
        tsv_field(t->text + e[i].byte_start, (size_t)(e[i].byte_end - e[i].byte_start));
        putchar('\n');
    }
}

/* ---- fill-mask -------------------------------------------------------------- */

/* The token as text: a "##" continuation without its marks. */
static const char *token_text(const Tokenizer *tok, int id)
{
    const char *s = bertc_tokenizer_token(tok, id);
    return s && s[0] == '#' && s[1] == '#' && s[2] ? s + 2 : s ? s : "";
}

/* The input with mask m's bytes replaced by token id, through emit. */
static void filled(const CliText *t, const PredictMask *m, const char *token,
                   void (*emit)(const char *s, size_t len))
{
    size_t len = strlen(t->text), cap = len + strlen(token) + 1;
    char *s = malloc(cap);
    if (!s)
        return;
    int n = snprintf(s, cap, "%.*s%s%s", (int)m->byte_start, t->text, token,
                     t->text + m->byte_end);
    emit(s, (size_t)n);
    free(s);
}

void predict_print_masks(const PredictRun *r, const CliText *t, int index, const PredictMask *m,
                         int n)
{
    const Tokenizer *tok = r->cm->tok;
    if (r->jsonl) {
        json_open(t, index, "text", "text_pair");
        printf(", \"masks\": [");
        for (int i = 0; i < n; i++) {
            printf("%s[", i ? ", " : "");
            for (int j = 0; j < m[i].k; j++) {
                printf("%s{\"token\": %d, \"token_str\": ", j ? ", " : "", m[i].ids[j]);
                json_str(token_text(tok, m[i].ids[j]));
                printf(", \"score\": %.6g, \"sequence\": ", m[i].score[j]);
                filled(t, &m[i], token_text(tok, m[i].ids[j]), json_field);
                putchar('}');
            }
            putchar(']');
        }
        puts("]}");
        return;
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < m[i].k; j++) {
            printf("%d\t%d\t", cli_text_number(t, index), i + 1);
            tsv_str(token_text(tok, m[i].ids[j]));
            printf("\t%.6g\t", m[i].score[j]);
            filled(t, &m[i], token_text(tok, m[i].ids[j]), tsv_field);
            putchar('\n');
        }
}

/* ---- extractive summarization ---------------------------------------------- */

void predict_print_sentences(const PredictRun *r, const CliText *t, int index,
                             const char *const *sents, const float *scores, int n)
{
    int k = r->top_k > 0 ? r->top_k : 3, order[n > 0 ? n : 1];
    k = bertc_top_k(scores, n, k, order);
    bool chosen[n > 0 ? n : 1];
    memset(chosen, 0, sizeof chosen);
    for (int j = 0; j < k; j++)
        chosen[order[j]] = true;
    if (r->jsonl) {
        json_open(t, index, "text", "text_pair");
        printf(", \"sentences\": [");
        for (int i = 0, j = 0; i < n; i++) {
            if (!chosen[i])
                continue;
            printf("%s{\"index\": %d, \"score\": %.6g, \"sentence\": ", j++ ? ", " : "", i,
                   scores[i]);
            json_str(sents[i]);
            putchar('}');
        }
        puts("]}");
        return;
    }
    for (int i = 0; i < n; i++) {   /* in the document's order, as BertSum writes summaries */
        if (!chosen[i])
            continue;
        printf("%d\t%d\t%.6g\t", cli_text_number(t, index), i, scores[i]);
        tsv_str(sents[i]);
        putchar('\n');
    }
}

/* ---- question answering ---------------------------------------------------- */

void predict_print_answer(const PredictRun *r, const CliText *t, int index,
                          const PredictAnswer *a)
{
    const char *ctx = t->pair;
    size_t len = (size_t)(a->byte_end - a->byte_start);
    if (r->jsonl) {
        json_open(t, index, "question", "context");
        printf(", \"score\": %.6g, \"start\": %d, \"end\": %d, \"answer\": ", a->score,
               (int)a->start, (int)a->end);
        json_field(ctx + a->byte_start, len);
        puts("}");
        return;
    }
    printf("%.6g\t%d\t%d\t", a->score, (int)a->start, (int)a->end);
    tsv_field(ctx + a->byte_start, len);
    putchar('\n');
}

/* ---- a blank input ------------------------------------------------------------ */

void predict_print_blank(const PredictRun *r, const CliText *t, int index)
{
    bool qa = r->task == MODEL_TASK_QA_SPAN;
    if (r->jsonl) {
        json_open(t, index, qa ? "question" : "text", qa ? "context" : "text_pair");
        puts("}");
    } else if (qa || r->task == MODEL_TASK_SEQ_CLS) {
        putchar('\n');
    }
}
