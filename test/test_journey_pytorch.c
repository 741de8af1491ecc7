/* test/test_journey_pytorch.c — issue #15's journey (c): a model that
 * `bertc finetune` trained is a Hugging Face model. test/data/finetuned/ is
 * such a model with what the PyTorch reference computed on six new texts
 * after load_state_dict(strict=True) (tools/make_finetuned_fixture.sh,
 * tools/hf_reference.py): `bertc run --model` must give the same logits,
 * and `bertc predict` the label of PyTorch's largest logit, by id2label. */
#include "test/test_util.h"
#include "zoo/zoo.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define DIR_ "test/data/finetuned"

static void read_logits(const char *path, float *out, size_t n, int64_t *shape)
{
    BertcError err;
    SafeTensors *st;
    cr_assert_eq(bertc_st_open_file(NULL, path, &st, &err), 0, "%s", err.msg);
    const StTensorInfo *t = bertc_st_find(st, "logits");
    cr_assert(t && t->ndim == 2, "%s: no (B, C) 'logits'", path);
    shape[0] = t->shape[0];
    shape[1] = t->shape[1];
    cr_assert_leq((size_t)t->numel, n, "%s: more logits than expected", path);
    cr_assert_eq(bertc_st_read_f32(st, t, out, (size_t)t->numel, &err), 0, "%s", err.msg);
    bertc_st_close(st);
}

Test(journey_pytorch, bertc_and_pytorch_agree_on_a_model_bertc_finetuned)
{
    char out[128], cmd[512], log[4096];
    snprintf(out, sizeof out, "/tmp/bertc_journey_c_%d.safetensors", (int)getpid());
    snprintf(cmd, sizeof cmd, "%s run --model " DIR_ " --inputs " DIR_ "/inputs.safetensors "
             "--output %s", BERTC_CLI, out);
    cr_assert_eq(test_shell(cmd, TEST_STDERR, log, sizeof log), 0, "%s", log);
    float got[64], want[64];
    int64_t gs[2], ws[2];
    read_logits(out, got, 64, gs);
    read_logits(DIR_ "/pytorch_outputs.safetensors", want, 64, ws);
    unlink(out);
    cr_assert(gs[0] == ws[0] && gs[1] == ws[1] && ws[0] == 6 && ws[1] == 4, "logits shapes");
    double max_ref = 0, max_err = 0;
    for (int i = 0; i < 24; i++) {
        max_ref = fmax(max_ref, fabs(want[i]));
        max_err = fmax(max_err, fabs((double)got[i] - want[i]));
    }
    cr_expect_leq(max_err, 1e-4 * max_ref + 1e-6, "bertc vs PyTorch logits: max error %.3g",
                  max_err);

    /* predict: one line a text, the label of the largest PyTorch logit */
    BertConfig cfg;
    BertcError err;
    cr_assert_eq(bertc_bert_config_read(DIR_ "/config.json", &cfg, &err), 0, "%s", err.msg);
    snprintf(cmd, sizeof cmd, "(%s predict --model " DIR_ " --input " DIR_ "/new.txt "
             "--max-len 64 > %s.tsv)", BERTC_CLI, out);
    cr_assert_eq(test_shell(cmd, TEST_STDERR, log, sizeof log), 0, "%s", log);
    cr_expect(strstr(log, "4 of 6 inputs are longer than 64 tokens and were truncated to it "
                          "(the longest is 160"), "no warning: %s", log);
    char tsv[160];
    snprintf(tsv, sizeof tsv, "%s.tsv", out);
    test_read_text(tsv, log, sizeof log);
    unlink(tsv);
    const char *line = log;
    for (int b = 0; b < 6; b++) {
        int best = 0;
        for (int c = 1; c < 4; c++)
            best = want[b * 4 + c] > want[b * 4 + best] ? c : best;
        const char *label = bertc_bert_config_label(&cfg, best);
        cr_assert(label && line && strncmp(line, label, strlen(label)) == 0 &&
                      line[strlen(label)] == '\t',
                  "text %d: PyTorch says %s; predict printed: %.60s", b + 1, label, line);
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    }
}
