/* test/test_predict.c — `bertc predict` as a user runs it, on the zoo's
 * fixture models made into model directories (config.json,
 * model.safetensors and a vocabulary whose token "tN" is id N, so a text
 * "t29 t109" is ids 29 109). Each task's answer is checked against the
 * model's own outputs for the same text (a forward through the library),
 * QAConv's against the logits the PyTorch fixture recorded, and long
 * question-answering contexts against the windows run one by one. */
#include "cli/cli.h"
#include "test/test_util.h"
#include "zoo/train/pipeline.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char root[256];

static void write_vocab(const char *dir)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/vocab.txt", dir);
    FILE *f = fopen(path, "w");
    cr_assert(f, "cannot write %s", path);
    fputs("[PAD]\n[CLS]\n[SEP]\n[MASK]\n[UNK]\n", f);   /* the fixtures' ids 0 1 2 3 */
    for (int i = 5; i < 120; i++)
        fprintf(f, "t%d\n", i);
    fclose(f);
}

/* root/NAME: test/data/zoo/NAME as a model directory. */
static void make_model_dir(const char *name)
{
    char cmd[4096], dir[512];
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    snprintf(cmd, sizeof cmd, "mkdir -p %s && cp test/data/zoo/%s/config.json %s/ && "
             "cp test/data/zoo/%s/weights.safetensors %s/model.safetensors", dir, name, dir,
             name, dir);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    write_vocab(dir);
}

static void setup(void)
{
    snprintf(root, sizeof root, "/tmp/bertc_predict_%d", (int)getpid());
    static const char *const models[] = {"bert_seqcls_single", "bert_tokcls", "bert_qa",
                                         "bert_mlm", "cgbert_gate", "bertsum_a",
                                         "qaconv_given", "bert_model", "bert_seqcls_multi",
                                         "bert_seqcls_regression"};
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++)
        make_model_dir(models[i]);
}

static void teardown(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(predict, .init = setup, .fini = teardown);

/* `bertc ARGS` from the repository root: stdout in out (stderr dropped), or
 * with err_only its stderr. Returns the exit code. */
static char out[65536];
static int bertc_out(const char *args)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "{ %s %s 2>/dev/null; }", BERTC_CLI, args);
    return test_shell(cmd, TEST_STDOUT_AND_STDERR, out, sizeof out);
}

static int bertc_err(const char *args)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s %s", BERTC_CLI, args);
    return test_shell(cmd, TEST_STDERR, out, sizeof out);
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* The model directory's forward on n examples, as bertc predict batches them. */
typedef struct Direct {
    Arena *arena;
    Graph *g;
    ModelDir d;
    Batch b;
    Outputs out;
} Direct;

static void direct_run(Direct *x, const char *name, const TextExample *ex, int n)
{
    char dir[512];
    BertcError err;
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    x->arena = bertc_arena_create("direct", 1 << 20);
    cr_assert_eq(bertc_model_dir_open(&x->d, x->arena, dir, &err), 0, "%s", err.msg);
    x->g = bertc_ag_graph_create(1 << 20, 0);
    bertc_ag_set_training(x->g, false);
    bertc_ag_set_no_grad(x->g, true);
    bertc_batch_init(&x->b, "test");
    bertc_outputs_init(&x->out);
    cr_assert_eq(bertc_model_batch_from_text(&x->d.model, &x->d.tok, ex, n,
                                             x->d.model_max_length, x->g, &x->b, &err), 0,
                 "%s", err.msg);
    cr_assert_eq(bertc_model_forward(&x->d.model, x->g, &x->b, &x->out, &err), 0, "%s", err.msg);
}

static void direct_close(Direct *x)
{
    bertc_ag_graph_destroy(x->g);
    bertc_arena_destroy(x->arena);
}

static Tensor direct_output(const Direct *x, const char *name)
{
    Var *v = bertc_outputs_get(&x->out, name);
    cr_assert(v, "the forward gave no %s", name);
    return v->value;
}

static int argmax(const float *x, int n)
{
    int best;
    bertc_top_k(x, n, 1, &best);
    return best;
}

static bool close_to(double a, double want, double atol, double rtol)
{
    return fabs(a - want) <= atol + rtol * fabs(want);
}

/* The JSON object of one output line. */
static const JsonValue *parse_line(Arena *a, const char *line)
{
    JsonDoc *doc;
    BertcError err;
    cr_assert_eq(bertc_json_parse(a, "output", line, strcspn(line, "\n"), &doc, &err), 0,
                 "not one JSON object: %s (%s)", line, err.msg);
    return doc->root;
}

/* ---- sequence classification ---------------------------------------------- */

Test(predict, seq_cls_label_is_the_argmax_of_the_forward)
{
    TextExample ex = {.text = "t29 t109 t113", .text_pair = "t5 t6", .context_id = -1};
    Direct x;
    direct_run(&x, "bert_seqcls_single", &ex, 1);
    Tensor logits = direct_output(&x, "logits");
    float p[3];
    bertc_softmax(logits.data, 3, p);
    int want = argmax(p, 3);
    direct_close(&x);

    char args[1024];
    snprintf(args, sizeof args, "predict --model %s/bert_seqcls_single --format jsonl "
             "--top-k 3 --pair 't29 t109 t113' 't5 t6'", root);
    cr_assert_eq(bertc_out(args), 0, "%s", out);
    Arena *a = bertc_arena_create("json", 0);
    const JsonValue *o = parse_line(a, out);
    char label[16];
    snprintf(label, sizeof label, "LABEL_%d", want);
    cr_expect_str_eq(bertc_json_string(bertc_json_get(o, "label")), label);
    double score = bertc_json_number(bertc_json_get(o, "score"));
    cr_expect(close_to(score, p[want], 1e-5, 1e-4), "score %.6g, the forward's %.6g", score,
              p[want]);
    const JsonValue *labels = bertc_json_get(o, "labels");
    cr_assert(labels && bertc_json_at(labels, 2) && !bertc_json_at(labels, 3), "3 labels: %s", out);
    for (int j = 1; j < 3; j++)
        cr_expect(bertc_json_number(bertc_json_get(bertc_json_at(labels, j - 1), "score")) >=
                      bertc_json_number(bertc_json_get(bertc_json_at(labels, j), "score")),
                  "labels best first: %s", out);
    cr_expect_str_eq(bertc_json_string(bertc_json_get(o, "text_pair")), "t5 t6");
    bertc_arena_destroy(a);

    snprintf(args, sizeof args, "predict --model %s/bert_seqcls_single --pair 't29 t109 t113' "
             "'t5 t6'", root);
    cr_assert_eq(bertc_out(args), 0, "%s", out);
    char want_tsv[64];
    snprintf(want_tsv, sizeof want_tsv, "%s\t", label);
    cr_expect(!strncmp(out, want_tsv, strlen(want_tsv)) && strstr(out, "\tt29 t109 t113\n"),
              "label<TAB>score<TAB>text: %s", out);
}

Test(predict, multi_label_lists_sigmoids_at_half_and_regression_the_value)
{
    TextExample ex = {.text = "t5 t6 t7 t40", .context_id = -1};
    Direct x;
    direct_run(&x, "bert_seqcls_multi", &ex, 1);
    Tensor logits = direct_output(&x, "logits");
    int C = (int)logits.shape[1];
    char want[512] = "";
    float p[16];
    int order[16];
    for (int c = 0; c < C; c++)
        p[c] = 1.0f / (1.0f + expf(-logits.data[c]));
    bertc_top_k(p, C, C, order);
    for (int j = 0, n = 0; j < C && p[order[j]] >= 0.5f; j++)
        snprintf(want + strlen(want), sizeof want - strlen(want), "%sLABEL_%d", n++ ? " " : "",
                 order[j]);
    direct_close(&x);
    char args[1024];
    snprintf(args, sizeof args, "predict --model %s/bert_seqcls_multi 't5 t6 t7 t40'", root);
    cr_assert_eq(bertc_out(args), 0, "%s", out);
    /* the fourth column: label:score pairs; keep the labels */
    char got[512] = "", *col = strrchr(out, '\t') + 1;
    for (char *tok = strtok(col, " \n"); tok; tok = strtok(NULL, " \n"))
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%.*s", got[0] ? " " : "",
                 (int)strcspn(tok, ":"), tok);
    cr_expect_str_eq(got, want, "labels at or above 0.5 (sigmoid), best first");

    direct_run(&x, "bert_seqcls_regression", &ex, 1);
    float value = direct_output(&x, "logits").data[0];
    direct_close(&x);
    snprintf(args, sizeof args, "predict --model %s/bert_seqcls_regression 't5 t6 t7 t40'", root);
    cr_assert_eq(bertc_out(args), 0, "%s", out);
    float score;
    cr_assert_eq(sscanf(out, "LABEL_0\t%f\t", &score), 1, "%s", out);
    cr_expect(close_to(score, value, 1e-5, 1e-4), "regression: %g, the logit %g", score, value);
}

Test(predict, cgbert_classifies_in_the_given_context)
{
    char args[1024];
    snprintf(args, sizeof args, "predict --model %s/cgbert_gate 't104 t45 t97'", root);
    cr_expect_eq(bertc_err(args), 1);
    cr_expect(strstr(out, "--context") && count_lines(out) == 1, "names --context: %s", out);
    snprintf(args, sizeof args, "predict --model %s/cgbert_gate --context 8 't104 t45'", root);
    cr_expect_eq(bertc_err(args), 1);
    cr_expect(strstr(out, "--context 8") && strstr(out, "context_vocab_size"), "%s", out);

    TextExample ex = {.text = "t104 t45 t97", .context_id = 6};
    Direct x;
    direct_run(&x, "cgbert_gate", &ex, 1);
    int want = argmax(direct_output(&x, "logits").data, 3);
    direct_close(&x);
    snprintf(args, sizeof args, "predict --model %s/cgbert_gate --context 6 't104 t45 t97'", root);
    cr_assert_eq(bertc_out(args), 0, "%s", out);
    char label[16];
    snprintf(label, sizeof label, "LABEL_%d\t", want);
    cr_expect(!strncmp(out, label, strlen(label)), "want %s: %s", label, out);
}

/* ---- token classification ------------------------------------------------- */

Test(predict, token_cls_entities_are_runs_of_the_argmax)
{
    const char *text = "t63 t16 t118 t101 t119 t90 t74 t18";
    TextExample ex = {.text = text, .context_id = -1};
    Direct x;
    direct_run(&x, "bert_tokcls", &ex, 1);
    Tensor logits = direct_output(&x, "logits");   /* (1, 10, 5) */
    int label[8];
    float score[8];
    for (int k = 0; k < 8; k++) {
        float p[5];
        bertc_softmax(logits.data + (1 + k) * 5, 5, p);
        label[k] = argmax(p, 5);
        score[k] = p[label[k]];
    }
    direct_close(&x);
    /* LABEL_i has no B-/I-: a run of one label is one entity (HF "simple") */
    int32_t start[8];
    for (int k = 0, c = 0; k < 8; k++) {
        start[k] = c;
        c += (int)strcspn(text + c, " ") + 1;
    }
    char want[2048] = "", line[256];
    for (int k = 0; k < 8;) {
        int j = k;
        double sum = 0;
        while (j < 8 && label[j] == label[k])
            sum += score[j++];
        int32_t end = start[j - 1] + (int32_t)strcspn(text + start[j - 1], " ");
        snprintf(line, sizeof line, "1\tLABEL_%d\t%d\t%d\t%.6g\t%.*s\n", label[k], start[k], end,
                 sum / (j - k), (int)(end - start[k]), text + start[k]);
        strcat(want, line);
        k = j;
    }
    char args[1024];
    snprintf(args, sizeof args, "predict --model %s/bert_tokcls '%s'", root, text);
    cr_assert_eq(bertc_out(args), 0, "%s", out);
    /* the scores may differ in the last printed digit: compare line by line */
    cr_assert_eq(count_lines(out), count_lines(want), "got\n%swant\n%s", out, want);
    char *g = out, *w = want;
    for (int i = 0; i < count_lines(want); i++) {
        char gl[256], wl[256];
        sscanf(g, "%255[^\n]", gl);
        sscanf(w, "%255[^\n]", wl);
        int gs, ge, ws, we;
        float gsc, wsc;
        char gn[32], wn[32];
        cr_assert_eq(sscanf(gl, "1\t%31s\t%d\t%d\t%f", gn, &gs, &ge, &gsc), 4, "%s", gl);
        sscanf(wl, "1\t%31s\t%d\t%d\t%f", wn, &ws, &we, &wsc);
        cr_expect(!strcmp(gn, wn) && gs == ws && ge == we && close_to(gsc, wsc, 1e-5, 1e-4),
                  "entity %d: %s, want %s", i, gl, wl);
        cr_expect(!strcmp(strrchr(gl, '\t'), strrchr(wl, '\t')), "word: %s, want %s", gl, wl);
        g += strlen(gl) + 1;
        w += strlen(wl) + 1;
    }
}

/* ---- question answering --------------------------------------------------- */

/* The character offsets of token k of a text of "tN" tokens, one space apart. */
static void token_span(const char *text, int k, int *start, int *end)
{
    int c = 0;
    for (int i = 0; i < k; i++)
        c += (int)strcspn(text + c, " ") + 1;
    *start = c;
    *end = c + (int)strcspn(text + c, " ");
}

Test(predict, qaconv_answer_from_the_pytorch_fixture_logits)
{
    /* row 0 of the fixture: [CLS] t104 t45 t97 t43 t37 [SEP] t60 ... t44 [SEP] */
    const char *q = "t104 t45 t97 t43 t37", *c = "t60 t77 t57 t107 t40 t105 t64 t44";
    Arena *a = bertc_arena_create("expected", 1 << 20);
    BertcError err;
    SafeTensors *st;
    cr_assert_eq(bertc_st_open_file(a, "test/data/zoo/qaconv_given/expected.safetensors", &st,
                                    &err), 0, "%s", err.msg);
    Tensor sl, el;
    cr_assert_eq(bertc_st_load_tensor(st, "start_logits", a, &sl, &err), 0, "%s", err.msg);
    cr_assert_eq(bertc_st_load_tensor(st, "end_logits", a, &el, &err), 0, "%s", err.msg);
    bertc_st_close(st);
    bool ctx[16] = {false};
    for (int t = 7; t < 15; t++)
        ctx[t] = true;
    QaSpan span;
    cr_assert_eq(bertc_qa_best_span(sl.data, el.data, ctx, 16, QA_MAX_ANSWER_LEN, &span), 0);
    int ws, we, unused;
    token_span(c, span.start - 7, &ws, &unused);
    token_span(c, span.end - 7, &unused, &we);
    bertc_arena_destroy(a);

    char args[1024];
    snprintf(args, sizeof args, "predict --model %s/qaconv_given '%s' '%s'", root, q, c);
    cr_assert_eq(bertc_out(args), 0, "%s", out);
    float score;
    int s, e;
    cr_assert_eq(sscanf(out, "%f\t%d\t%d\t", &score, &s, &e), 3, "%s", out);
    cr_expect(s == ws && e == we, "span [%d, %d), the fixture's [%d, %d): %s", s, e, ws, we, out);
    cr_expect(close_to(score, span.score, 1e-5, 1e-3), "score %g, the fixture's %g", score,
              span.score);
    cr_expect(!strncmp(strrchr(out, '\t') + 1, c + s, (size_t)(e - s)), "the answer is the "
              "context's [%d, %d): %s", s, e, out);
}

/* The answer line's score and span. */
static void read_answer(float *score, int *s, int *e)
{
    cr_assert_eq(sscanf(out, "%f\t%d\t%d\t", score, s, e), 3, "%s", out);
}

Test(predict, qa_long_context_is_the_best_of_its_windows)
{
    /* bert_qa has 40 positions: a question of 2 tokens leaves 35 context
     * tokens a window; the default stride min(128, 40 / 2) = 20 overlaps
     * windows [0, 35) and [15, 50) */
    char ctx[512] = "";
    for (int i = 0; i < 50; i++)
        snprintf(ctx + strlen(ctx), sizeof ctx - strlen(ctx), "%st%d", i ? " " : "",
                 5 + (i * 37) % 115);
    char args[2048];
    snprintf(args, sizeof args, "predict --model %s/bert_qa 't71 t46' '%s'", root, ctx);
    cr_assert_eq(bertc_err(args), 0, "%s", out);
    cr_expect(!strstr(out, "truncated"), "windows, not truncation: %s", out);
    cr_assert_eq(bertc_out(args), 0, "%s", out);
    float score;
    int s, e;
    read_answer(&score, &s, &e);
    cr_expect(!strncmp(strrchr(out, '\t') + 1, ctx + s, (size_t)(e - s)), "answer = "
              "context[%d, %d): %s", s, e, out);
    float best = -1;
    int bs = -1, be = -1;
    for (int w = 0; w < 2; w++) {   /* each window alone is a context that fits */
        int cs, ce, unused;
        token_span(ctx, 15 * w, &cs, &unused);
        token_span(ctx, 15 * w + 34, &unused, &ce);
        snprintf(args, sizeof args, "predict --model %s/bert_qa 't71 t46' '%.*s'", root,
                 ce - cs, ctx + cs);
        cr_assert_eq(bertc_out(args), 0, "%s", out);
        float ws;
        int a, b;
        read_answer(&ws, &a, &b);
        if (ws > best) {
            best = ws;
            bs = cs + a;
            be = cs + b;
        }
    }
    cr_expect(s == bs && e == be && close_to(score, best, 1e-6, 1e-4),
              "long context: %g [%d, %d); best window: %g [%d, %d)", score, s, e, best, bs, be);
    snprintf(args, sizeof args, "predict --model %s/bert_qa --stride 35 't71 t46' '%s'", root,
             ctx);
    cr_expect_eq(bertc_err(args), 1);
    cr_expect(strstr(out, "--stride 35") && count_lines(out) == 1, "%s", out);
}

/* ---- fill-mask, BertSum ------------------------------------------------------ */

Test(predict, fill_mask_best_token_is_the_argmax)
{
    TextExample ex = {.text = "t73 [MASK] t117", .context_id = -1};
    Direct x;
    direct_run(&x, "bert_mlm", &ex, 1);
    Tensor logits = direct_output(&x, "logits");   /* (1, 5, 120): [MASK] at 2 */
    int want = argmax(logits.data + 2 * 120, 120);
    direct_close(&x);
    char args[1024], line[128];
    snprintf(args, sizeof args, "predict --model %s/bert_mlm --top-k 3 't73 [MASK] t117'", root);
    cr_assert_eq(bertc_out(args), 0, "%s", out);
    cr_expect_eq(count_lines(out), 3, "3 candidates: %s", out);
    snprintf(line, sizeof line, "1\t1\tt%d\t", want);
    cr_expect(!strncmp(out, line, strlen(line)), "want t%d first: %s", want, out);
    snprintf(line, sizeof line, "\tt73 t%d t117\n", want);
    cr_expect(strstr(out, line), "the filled sentence: %s", out);
    snprintf(args, sizeof args, "predict --model %s/bert_mlm 't73 t117'", root);
    cr_expect_eq(bertc_err(args), 1);
    cr_expect(strstr(out, "input 1 has no [MASK]") && count_lines(out) == 1, "%s", out);
}

Test(predict, bertsum_keeps_the_three_best_sentences)
{
    const char *sents[] = {"t104 t45.", "t97 t43!", "t37 t6?", "t60 t77."};
    TextExample ex = {.text = sents[0], .sentences = sents, .n_sentences = 4, .context_id = -1};
    Direct x;
    direct_run(&x, "bertsum_a", &ex, 1);
    Tensor scores = direct_output(&x, "sent_scores");
    float sc[4];
    memcpy(sc, scores.data, sizeof sc);
    direct_close(&x);
    int worst = 0;
    for (int i = 1; i < 4; i++)
        worst = sc[i] < sc[worst] ? i : worst;
    char args[1024];
    snprintf(args, sizeof args, "predict --model %s/bertsum_a 't104 t45. t97 t43!  t37 t6? "
             "t60 t77.'", root);
    cr_assert_eq(bertc_out(args), 0, "%s", out);
    cr_assert_eq(count_lines(out), 3, "%s", out);
    const char *p = out;
    for (int i = 0; i < 4; i++) {
        if (i == worst)
            continue;
        int idx;
        float s;
        char text[64];
        cr_assert_eq(sscanf(p, "1\t%d\t%f\t%63[^\n]", &idx, &s, text), 3, "%s", p);
        cr_expect(idx == i && close_to(s, sc[i], 1e-5, 1e-4) && !strcmp(text, sents[i]),
                  "sentence %d (%s, %g): %s", i, sents[i], sc[i], p);
        p = strchr(p, '\n') + 1;
    }
}

/* ---- truncation and errors -------------------------------------------------- */

Test(predict, long_inputs_are_truncated_with_a_warning)
{
    char args[1024], input[512];
    snprintf(args, sizeof args, "predict --model %s/bert_seqcls_single --max-len 5 "
             "'t5 t6 t7 t8 t9 t10'", root);
    cr_expect_eq(bertc_err(args), 0, "%s", out);
    cr_expect(strstr(out, "warning: 1 of 1 inputs are longer than 5 tokens and were truncated "
                          "to it (the longest is 8; 3 tokens unread)") && count_lines(out) == 1,
              "%s", out);
    snprintf(input, sizeof input, "%s/in.txt", root);
    FILE *f = fopen(input, "w");
    cr_assert(f);
    fputs("t5 t6\n\nt5 t6 t7 t8 t9 t10\n", f);
    fclose(f);
    snprintf(args, sizeof args, "predict --model %s/bert_seqcls_single --max-len 5 --input %s",
             root, input);
    cr_expect_eq(bertc_err(args), 0, "%s", out);
    cr_expect(strstr(out, "warning: 1 of 2 inputs are longer than 5 tokens") &&
                  count_lines(out) == 1, "one summary line, the blank line not counted: %s", out);
    cr_assert_eq(bertc_out(args), 0);
    cr_expect_eq(count_lines(out), 3, "one line per input line, the blank one empty: %s", out);
    cr_expect(strstr(out, "\tt5 t6\n\nLABEL_"), "the blank line's result is empty: %s", out);
}

Test(predict, errors_are_one_line_naming_the_flag_or_file)
{
    static const struct {
        const char *args, *want;
    } cases[] = {
        {"--model %s/bert_seqcls_single --format xml t5", "--format 'xml'"},
        {"--model %s/bert_seqcls_single --top-k 0 t5", "--top-k '0'"},
        {"--model %s/bert_seqcls_single --batch-size x t5", "--batch-size 'x'"},
        {"--model %s/bert_tokcls --stride 4 t5", "--stride"},
        {"--model %s/bert_seqcls_single --max-len 99 t5",
         "--max-len 99 is more than the model's 40 positions"},
        {"--model %s/no_such_model t5", "no_such_model"},
        {"--model %s/bert_seqcls_single --input %s/none.txt", "none.txt"},
        {"--model %s/bert_seqcls_single", "no text: give TEXT ... or --input FILE"},
        {"--model %s/bert_model t5", "bertc embed"},
        {"--model %s/bert_qa t5", "reads QUESTION CONTEXT pairs: 1 texts given"},
        {"--model %s/bert_seqcls_single --config x.json t5", "--model and --config"},
        {"--model %s/bert_seqcls_single --formt jsonl t5", "unknown option '--formt'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char fmt[512], args[1024];
        snprintf(fmt, sizeof fmt, "predict %s", cases[i].args);
        snprintf(args, sizeof args, fmt, root, root);
        int rc = bertc_err(args);
        cr_expect(rc == 1 || rc == 2, "%s: exit %d", args, rc);
        cr_expect(count_lines(out) == 1 && strstr(out, cases[i].want),
                  "%s: one line naming '%s', got: %s", args, cases[i].want, out);
    }
    cr_assert_eq(bertc_out("predict --help"), 0);
    cr_expect(strstr(out, "--stride") && strstr(out, "--top-k"), "--help lists the flags");
}

Test(predict, jsonl_quotes_the_text_and_input_lines_hold_pairs)
{
    char input[300], args[1024];
    snprintf(input, sizeof input, "%s/qa.txt", root);
    FILE *f = fopen(input, "w");
    cr_assert(f);
    fputs("t71 t46\tt27 \"t35\" t112 \\ t82\r\nt9\tt10 t11\n", f);
    fclose(f);
    snprintf(args, sizeof args, "predict --model %s/bert_qa --format jsonl --input %s", root,
             input);
    cr_assert_eq(bertc_out(args), 0, "%s", out);
    cr_assert_eq(count_lines(out), 2, "%s", out);
    Arena *a = bertc_arena_create("json", 0);
    const JsonValue *o = parse_line(a, out);
    cr_expect_str_eq(bertc_json_string(bertc_json_get(o, "question")), "t71 t46");
    cr_expect_eq(bertc_json_number(bertc_json_get(o, "line")), 1, "the input's line: %s", out);
    cr_expect_str_eq(bertc_json_string(bertc_json_get(o, "context")), "t27 \"t35\" t112 \\ t82",
                     "quotes and backslashes round-trip, the \\r is dropped");
    const char *ctx = "t27 \"t35\" t112 \\ t82";
    int s = (int)bertc_json_number(bertc_json_get(o, "start"));
    int e = (int)bertc_json_number(bertc_json_get(o, "end"));
    cr_assert(s >= 0 && s < e && e <= (int)strlen(ctx), "[%d, %d)", s, e);
    cr_expect(!strncmp(bertc_json_string(bertc_json_get(o, "answer")), ctx + s, (size_t)(e - s)),
              "the answer is context[%d, %d): %s", s, e, out);
    o = parse_line(a, strchr(out, '\n') + 1);
    cr_expect_str_eq(bertc_json_string(bertc_json_get(o, "context")), "t10 t11");
    cr_expect_eq(bertc_json_number(bertc_json_get(o, "line")), 2, "line 2: %s", out);
    bertc_arena_destroy(a);
    snprintf(args, sizeof args, "predict --model %s/bert_mlm --top-k 500 't5 [MASK]'", root);
    cr_assert_eq(bertc_out(args), 0, "%s", out);
    cr_expect_eq(count_lines(out), 120, "--top-k above the vocabulary: all 120 tokens");
}

/* Journey (b) of issue 15: a Hugging Face-style classifier directory with
 * id2label, written by tools/embed_ref.py with PyTorch's probabilities for its
 * texts; bertc predict names the same labels in the same order with the same
 * scores, within the parity tolerance. */
Test(predict, equals_pytorch_on_a_hf_classifier_directory)
{
    static const char *const names[3] = {"negative", "neutral", "positive"};
    Arena *a = bertc_arena_create("st", 1 << 16);
    SafeTensors *ref;
    BertcError err;
    Tensor probs;
    cr_assert_eq(bertc_st_open_file(a, "test/data/predict_seqcls/expected.safetensors", &ref,
                                    &err), 0, "%s", err.msg);
    cr_assert_eq(bertc_st_load_tensor(ref, "probs", a, &probs, &err), 0, "%s", err.msg);
    bertc_st_close(ref);
    cr_assert_eq(bertc_out("predict --model test/data/predict_seqcls --input "
                           "test/data/predict_seqcls/texts.txt --format jsonl --top-k 3"), 0,
                 "%s", out);
    int64_t N = probs.shape[0];
    cr_assert_eq(count_lines(out), (int)N, "%s", out);
    const char *line = out;
    for (int64_t i = 0; i < N; i++) {
        const JsonValue *o = parse_line(a, line);
        int order[3];
        bertc_top_k(probs.data + i * 3, 3, 3, order);
        const JsonValue *labels = bertc_json_get(o, "labels");
        cr_expect_str_eq(bertc_json_string(bertc_json_get(o, "label")), names[order[0]],
                         "text %lld", (long long)i);
        for (int j = 0; j < 3; j++) {
            const JsonValue *l = bertc_json_at(labels, (size_t)j);
            double want = probs.data[i * 3 + order[j]];
            double got = bertc_json_number(bertc_json_get(l, "score"));
            cr_expect_str_eq(bertc_json_string(bertc_json_get(l, "label")), names[order[j]],
                             "text %lld, rank %d", (long long)i, j);
            cr_expect(close_to(got, want, 1e-5, 1e-4), "text %lld, %s: %.6g, PyTorch %.6g",
                      (long long)i, names[order[j]], got, want);
        }
        line = strchr(line, '\n') + 1;
    }
    bertc_arena_destroy(a);
}

/* ---- each input tokenized once ---------------------------------------------- */

static char warnings[4096];

/* `bertc predict --model root/MODEL [--max-len N] --input FILE` in this
 * process, FILE holding `lines`; stdout into out, stderr into warnings. Returns the exit status and
 * in *calls the tokenizer's calls it made (test_tokenizer_calls). */
static int predict_counting(const char *model, const char *max_len, const char *lines,
                            long *calls)
{
    char input[512], dir[512], path[512], errors[512];
    snprintf(input, sizeof input, "%s/once.txt", root);
    snprintf(dir, sizeof dir, "%s/%s", root, model);
    snprintf(path, sizeof path, "%s/once.out", root);
    snprintf(errors, sizeof errors, "%s/once.err", root);
    test_write_text(input, lines);
    char *argv[] = {"predict", "--model", dir, "--input", input, "--max-len",
                    (char *)max_len, NULL};
    int argc = max_len ? 7 : 5;
    fflush(stdout);
    fflush(stderr);
    int saved_out = dup(1), saved_err = dup(2);
    int fd_out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int fd_err = open(errors, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert(saved_out >= 0 && saved_err >= 0 && fd_out >= 0 && fd_err >= 0);
    dup2(fd_out, 1);
    dup2(fd_err, 2);
    close(fd_out);
    close(fd_err);
    long before = test_tokenizer_calls();
    int rc = cmd_predict(argc, argv);
    *calls = test_tokenizer_calls() - before;
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
    test_read_text(path, out, sizeof out);
    test_read_text(errors, warnings, sizeof warnings);
    return rc;
}

/* bertc predict tokenizes each input once, in the model's batch_from_text,
 * and reads the tokens, offsets and truncation of what it prints from that
 * encoding (the batch's enc): classification, tagging, fill-mask and
 * windowed question answering make one tokenizer call per input. QAConv
 * makes two: its batch_from_text first finds where query_len cuts the
 * question, then encodes the pair. Truncated inputs too (--max-len). */
Test(predict, each_input_is_tokenized_once)
{
    static const struct {
        const char *model, *max_len, *lines;
        int n, calls_each;
    } runs[] = {
        {"bert_seqcls_single", NULL, "t5 t6 t7\nt8 t9\nt10 t11 t12 t13\n", 3, 1},
        {"bert_seqcls_single", "4", "t5 t6 t7\nt8 t9\nt10 t11 t12 t13\n", 3, 1},
        {"bert_tokcls", NULL, "t63 t16 t118\nt101 t119 t90 t74 t18\n", 2, 1},
        {"bert_mlm", NULL, "t73 [MASK] t117\n[MASK] t5\nt6 t7 [MASK]\n", 3, 1},
        {"bert_qa", NULL, "t71 t46\tt60 t77 t57 t107\nt8\tt9 t10 t11\n", 2, 1},
        {"qaconv_given", NULL, "t104 t45 t97\tt60 t77 t57 t107 t40\n", 1, 2},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        long calls;
        int rc = predict_counting(runs[i].model, runs[i].max_len, runs[i].lines, &calls);
        cr_assert_eq(rc, 0, "%s: bertc predict failed", runs[i].model);
        cr_expect(count_lines(out) >= runs[i].n, "%s: a line per input: %s", runs[i].model, out);
        cr_expect_eq(calls, (long)runs[i].n * runs[i].calls_each,
                     "%s%s%s: %d inputs made %ld tokenizer calls, want %d each", runs[i].model,
                     runs[i].max_len ? " --max-len " : "", runs[i].max_len ? runs[i].max_len : "",
                     runs[i].n, calls, runs[i].calls_each);
        if (runs[i].max_len)   /* [CLS] t5 t6 t7 [SEP] is 5 tokens; line 2 fits */
            cr_expect(strstr(warnings, "2 of 3 inputs are longer than 4 tokens and were "
                                       "truncated to it (the longest is 6; 3 tokens unread)"),
                      "the truncated lines: %s", warnings);
        else
            cr_expect_str_empty(warnings, "%s: no warning", runs[i].model);
    }
}
