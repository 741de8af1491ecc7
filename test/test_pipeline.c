/* test/test_pipeline.c — the steps of `bertc predict` and `bertc embed`
 * (zoo/train/pipeline.c) against cases computed by hand: the task each
 * architecture declares and the outputs it promises, softmax and top-k, HF's answer-span search,
 * "simple" entity grouping, sentence splitting, mean/cls pooling and L2
 * normalisation. */
#include "zoo/train/pipeline.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

static bool close_to(double a, double want, double atol, double rtol)
{
    return fabs(a - want) <= atol + rtol * fabs(want);
}

/* Each architecture declares its task (ModelArch.task); predict reads it. */
Test(pipeline, task_declared_by_each_architecture)
{
    static const struct {
        const char *arch;
        ModelTask task;
    } cases[] = {
        {"BertForSequenceClassification", MODEL_TASK_SEQ_CLS},
        {"BertForNextSentencePrediction", MODEL_TASK_SEQ_CLS},
        {"CGBertForSequenceClassification", MODEL_TASK_SEQ_CLS},
        {"QACGBertForSequenceClassification", MODEL_TASK_SEQ_CLS},
        {"BertForTokenClassification", MODEL_TASK_TOKEN_CLS},
        {"BertForQuestionAnswering", MODEL_TASK_QA_SPAN},
        {"QAConvModelV2", MODEL_TASK_QA_SPAN},
        {"BertForMaskedLM", MODEL_TASK_MASKED_LM},
        {"BertForPreTraining", MODEL_TASK_MASKED_LM},
        {"Summarizer", MODEL_TASK_SUMMARIZATION},
        {"BertModel", MODEL_TASK_ENCODER},
        {"BertForMultipleChoice", MODEL_TASK_MULTIPLE_CHOICE},
        {"SpanBertForPreTraining", MODEL_TASK_PRETRAINING},   /* its forward masks its input */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const ModelArch *arch = bertc_zoo_arch(cases[i].arch);
        cr_assert(arch, "no architecture %s", cases[i].arch);
        cr_expect_eq(arch->task, cases[i].task, "%s: task %s, want %s", cases[i].arch,
                     bertc_model_task_name(arch->task), bertc_model_task_name(cases[i].task));
    }
}

/* The declared shape of output `name` of arch, NULL if it has none. */
static const char *shape_of(const ModelArch *arch, const char *name)
{
    const OutputSpec *o;
    for (int i = 0; (o = bertc_model_output(arch, i)) != NULL; i++)
        if (!strcmp(o->name, name))
            return o->shape;
    return NULL;
}

static bool is(const char *shape, const char *want) { return shape && !strcmp(shape, want); }

/* A task is a promise about outputs predict and finetune read: every
 * architecture declares the outputs of its task with their shapes. */
Test(pipeline, each_task_has_its_outputs)
{
    const ModelArch *a;
    for (int i = 0; (a = bertc_zoo_arch_at(i)) != NULL; i++) {
        const char *logits = shape_of(a, "logits"), *mlm = shape_of(a, "prediction_logits");
        bool ok = true;
        switch (a->task) {
        case MODEL_TASK_SEQ_CLS:
            ok = is(logits, "(B, num_labels)") || is(logits, "(B, 2)");
            break;
        case MODEL_TASK_TOKEN_CLS: ok = is(logits, "(B, S, num_labels)"); break;
        case MODEL_TASK_QA_SPAN:
            ok = is(shape_of(a, "start_logits"), "(B, S)") &&
                 is(shape_of(a, "end_logits"), "(B, S)");
            break;
        case MODEL_TASK_MASKED_LM: ok = is(logits, "(B, S, V)") || is(mlm, "(B, S, V)"); break;
        case MODEL_TASK_SUMMARIZATION: ok = is(shape_of(a, "sent_scores"), "(B, N)"); break;
        case MODEL_TASK_MULTIPLE_CHOICE: ok = logits != NULL; break;
        case MODEL_TASK_ENCODER:
        case MODEL_TASK_PRETRAINING: ok = is(shape_of(a, "last_hidden_state"), "(B, S, H)"); break;
        }
        cr_expect(ok, "%s declares the task %s but not its outputs", a->name,
                  bertc_model_task_name(a->task));
    }
}

/* bertc finetune --task builds the first head of the table for its task. */
Test(pipeline, finetune_heads_by_task)
{
    static const struct {
        ModelTask task;
        const char *arch;
    } cases[] = {
        {MODEL_TASK_SEQ_CLS, "BertForSequenceClassification"},
        {MODEL_TASK_TOKEN_CLS, "BertForTokenClassification"},
        {MODEL_TASK_QA_SPAN, "BertForQuestionAnswering"},
        {MODEL_TASK_MASKED_LM, "BertForMaskedLM"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const ModelArch *a = bertc_zoo_arch_for_task(cases[i].task);
        cr_expect(a && !strcmp(a->name, cases[i].arch), "%s: head %s, want %s",
                  bertc_model_task_name(cases[i].task), a ? a->name : "none", cases[i].arch);
    }
    cr_expect_null(bertc_zoo_arch_for_task(MODEL_TASK_SUMMARIZATION));
    cr_expect_str_eq(bertc_zoo_arch_symbol(bertc_zoo_arch("BertForSequenceClassification")),
                     "bertc_arch_bert_seqcls");
}

Test(pipeline, softmax_sigmoid_and_top_k)
{
    float p[3];
    bertc_softmax((float[]){1, 2, 3}, 3, p);
    /* e^k / (e + e^2 + e^3) */
    const double want[3] = {0.09003057317038046, 0.24472847105479767, 0.6652409557748219};
    for (int i = 0; i < 3; i++)
        cr_expect(close_to(p[i], want[i], 1e-7, 1e-6), "softmax[%d] = %.9g, want %.9g", i, p[i],
                  want[i]);
    bertc_softmax((float[]){1000, 1000}, 2, p);   /* no overflow: the max is subtracted */
    cr_expect(p[0] == 0.5f && p[1] == 0.5f, "softmax(1000, 1000) = %g %g", p[0], p[1]);
    cr_expect(bertc_sigmoid(0) == 0.5f);
    cr_expect(bertc_sigmoid(-1000) == 0.0f && bertc_sigmoid(1000) == 1.0f);
    cr_expect(close_to(bertc_sigmoid(2), 0.8807970779778823, 1e-7, 0), "sigmoid(2) = %.9g",
              bertc_sigmoid(2));
    int idx[4];
    int n = bertc_top_k((float[]){0.2f, 0.5f, 0.5f, 0.1f}, 4, 3, idx);
    cr_assert_eq(n, 3);
    cr_expect(idx[0] == 1 && idx[1] == 2 && idx[2] == 0, "top 3: %d %d %d (ties to the lower "
              "index)", idx[0], idx[1], idx[2]);
    cr_expect_eq(bertc_top_k((float[]){1, 2}, 2, 5, idx), 2, "k capped at n");
}

/* [CLS] q [SEP] c c c [SEP]: the context is 3..5. */
Test(pipeline, qa_span_is_hf_decode_spans)
{
    const float start[7] = {9, 5, 5, 0, 2, 1, 5};   /* [CLS], the question, [SEP] ignored */
    const float end[7] = {9, 5, 5, 3.5f, 0, 1, 5};
    const bool ctx[7] = {0, 0, 0, 1, 1, 1, 0};
    QaSpan s;
    cr_assert_eq(bertc_qa_best_span(start, end, ctx, 7, 15, &s), 0);
    /* softmax over {[CLS], 3, 4, 5}; the best start (4) and the best end (3)
     * make no span:
     * candidates p_s[3]p_e[3], p_s[4]p_e[5], p_s[5]p_e[5], p_s[3]p_e[5], ... */
    double zs = exp(9) + exp(0) + exp(2) + exp(1), ze = exp(9) + exp(3.5) + exp(0) + exp(1);
    double best = 0;
    int bs = -1, be = -1;
    for (int a = 3; a <= 5; a++)
        for (int b = a; b <= 5; b++) {
            double v = exp(start[a]) / zs * exp(end[b]) / ze;
            if (v > best) {
                best = v;
                bs = a;
                be = b;
            }
        }
    cr_expect(bs == 3 && be == 3, "hand search: %d..%d", bs, be);
    cr_expect(s.start == bs && s.end == be, "span %d..%d, want %d..%d", s.start, s.end, bs, be);
    cr_expect(close_to(s.score, best, 1e-9, 1e-5), "score %.9g, want %.9g", s.score, best);
    /* max_answer_len 1: only one-token spans */
    const float start2[7] = {0, 0, 0, 5, 0, 0, 0}, end2[7] = {0, 0, 0, 0, 0, 5, 0};
    cr_assert_eq(bertc_qa_best_span(start2, end2, ctx, 7, 3, &s), 0);
    cr_expect(s.start == 3 && s.end == 5, "3..5 within 3 tokens: got %d..%d", s.start, s.end);
    cr_assert_eq(bertc_qa_best_span(start2, end2, ctx, 7, 2, &s), 0);
    cr_expect(s.end - s.start < 2, "max_answer_len 2: got %d..%d", s.start, s.end);
    const bool none[7] = {0};
    cr_expect_eq(bertc_qa_best_span(start, end, none, 7, 15, &s), -1, "no context, no span");
}

Test(pipeline, entities_grouped_as_hf_simple)
{
    const char *const names[] = {"O", "B-PER", "I-PER", "B-LOC", "I-LOC", "MISC"};
    /* "Ann Lee in New York , Rome and X Y": B-PER I-PER O B-LOC I-LOC I-PER B-LOC O MISC MISC */
    const int labels[] = {1, 2, 0, 3, 4, 2, 3, 0, 5, 5};
    const float scores[] = {0.9f, 0.7f, 0.99f, 0.8f, 0.6f, 0.5f, 0.4f, 0.9f, 0.3f, 0.5f};
    TokenTag tags[10];
    for (int i = 0; i < 10; i++)
        tags[i] = (TokenTag){.label = labels[i], .score = scores[i], .start = 10 * i,
                             .end = 10 * i + 5, .byte_start = 10 * i, .byte_end = 10 * i + 5};
    Entity e[10];
    int n = bertc_group_entities(tags, 10, names, e);
    /* PER [0, 2), LOC [3, 5), PER [5] (I- of another type starts a group),
     * LOC [6], MISC [8, 10) (no prefix: continues like I-); the O groups dropped */
    cr_assert_eq(n, 5, "%d groups", n);
    const struct {
        const char *group;
        int first, last;
        double score;
    } want[5] = {{"PER", 0, 1, 0.8}, {"LOC", 3, 4, 0.7}, {"PER", 5, 5, 0.5}, {"LOC", 6, 6, 0.4},
                 {"MISC", 8, 9, 0.4}};
    for (int i = 0; i < 5; i++) {
        cr_expect(e[i].group_len == (int)strlen(want[i].group) &&
                      !strncmp(e[i].group, want[i].group, (size_t)e[i].group_len),
                  "group %d: %.*s, want %s", i, e[i].group_len, e[i].group, want[i].group);
        cr_expect(e[i].start == 10 * want[i].first && e[i].end == 10 * want[i].last + 5,
                  "group %d: [%d, %d)", i, e[i].start, e[i].end);
        cr_expect(close_to(e[i].score, want[i].score, 1e-6, 0), "group %d: score %.9g, want %g",
                  i, e[i].score, want[i].score);
    }
}

Test(pipeline, sentences_split_at_end_marks)
{
    const char *text = "  Hello there.  How are you?\"\nPi is 3.14, e.g. fine!end";
    int32_t s[8], e[8];
    int n = bertc_split_sentences(text, strlen(text), s, e, 8);
    const char *want[] = {"Hello there.", "How are you?\"", "Pi is 3.14, e.g.", "fine!end"};
    cr_assert_eq(n, 4, "%d sentences", n);
    for (int i = 0; i < 4; i++)
        cr_expect(e[i] - s[i] == (int32_t)strlen(want[i]) &&
                      !strncmp(text + s[i], want[i], strlen(want[i])),
                  "sentence %d: '%.*s', want '%s'", i, (int)(e[i] - s[i]), text + s[i], want[i]);
    n = bertc_split_sentences(text, strlen(text), s, e, 2);
    cr_assert_eq(n, 2);
    cr_expect_eq(e[1], (int32_t)strlen(text), "the last of cap takes the rest");
    cr_expect_eq(bertc_split_sentences("   ", 3, s, e, 8), 0);
}

Test(pipeline, mean_pooling_over_the_mask_and_cls)
{
    /* h (S=3, H=2); the third token is padding */
    const float h[6] = {1, 2, 3, 6, 100, -100};
    const int32_t mask[3] = {1, 1, 0};
    float out[2];
    bertc_pool(POOL_MEAN, h, mask, 3, 2, out);
    cr_expect(out[0] == 2.0f && out[1] == 4.0f, "mean (1+3)/2, (2+6)/2: got %g %g", out[0],
              out[1]);
    bertc_pool(POOL_CLS, h, mask, 3, 2, out);
    cr_expect(out[0] == 1.0f && out[1] == 2.0f, "cls: got %g %g", out[0], out[1]);
    const int32_t none[3] = {0, 0, 0};
    bertc_pool(POOL_MEAN, h, none, 3, 2, out);
    cr_expect(out[0] == 0.0f && out[1] == 0.0f, "no token: 0 / 1e-9 = 0, got %g %g", out[0],
              out[1]);
    float v[2] = {3, 4}, z[2] = {0, 0};
    bertc_l2_normalize(v, 2);
    cr_expect(close_to(v[0], 0.6, 1e-7, 0) && close_to(v[1], 0.8, 1e-7, 0), "%g %g", v[0], v[1]);
    bertc_l2_normalize(z, 2);
    cr_expect(z[0] == 0 && z[1] == 0, "the zero vector stays zero (eps 1e-12)");
}
