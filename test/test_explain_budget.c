/* test/test_explain_budget.c — the cells of a `bertc explain` page are a
 * budget for the whole page (cli/explain_budget.c), not per picture: a
 * 12-layer, 12-head model at 64 tokens stays as small as a 4-layer one
 * (2.8 MB before, one picture's cap times 25 pictures), each picture fits
 * its share by fewer heads or pooled features, and a vocabulary axis is
 * never pooled. */
#include "cli/explain.h"
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char dir[256];

static void setup(void) { test_scratch_make(dir, sizeof dir, "explain_budget"); }
static void teardown(void) { test_scratch_remove(dir); }

TestSuite(explain_budget, .init = setup, .fini = teardown);

/* A picture of panels x rows x cols (its data unused by the fit). */
static SvgPicture picture(SvgKind kind, int64_t panels, int64_t rows, int64_t cols)
{
    return (SvgPicture){.kind = kind, .panels = panels, .rows = rows, .cols = cols};
}

/* Maps lose heads, hidden states pool their features: within the cap. */
Test(explain_budget, a_picture_fits_its_cap)
{
    SvgPicture maps = picture(SVG_MAPS, 12, 64, 64);
    PictureFit f = explain_fit(&maps, false, 10000);
    cr_expect(f.panels == 2 && f.bin == 1 && f.cells == 2 * 4096,
              "12 heads of 64 x 64 under 10000 cells: %lld heads, bin %lld, %lld cells; want 2, "
              "1, 8192", (long long)f.panels, (long long)f.bin, (long long)f.cells);
    f = explain_fit(&maps, false, 100);
    cr_expect_eq(f.panels, 1, "a map keeps one head however small the cap, got %lld",
                 (long long)f.panels);
    SvgPicture hidden = picture(SVG_MATRIX, 1, 64, 768);
    f = explain_fit(&hidden, true, 2048);
    cr_expect(f.panels == 1 && f.bin == 24 && f.cells == 64 * 32,
              "(64, 768) under 2048 cells: bin %lld, %lld cells; want bins of 24 (32 columns), "
              "2048 cells", (long long)f.bin, (long long)f.cells);
    f = explain_fit(&hidden, true, 1 << 30);
    cr_expect(f.cells <= 4096, "a feature map wants at most 4096 cells, drew %lld",
              (long long)f.cells);
    SvgPicture small = picture(SVG_MATRIX, 1, 16, 32);
    f = explain_fit(&small, true, 1 << 30);
    cr_expect(f.bin == 1 && f.cells == 512, "(16, 32) pooled though it fits: bin %lld",
              (long long)f.bin);
}

/* Whether a shape's picture may be pooled: features yes; tokens, class
 * names and a vocabulary no. */
Test(explain_budget, only_features_are_pooled)
{
    static const char *const names[] = {"a", "b", "c"};
    SvgPicture hidden = picture(SVG_MATRIX, 1, 64, 128), logits = hidden, classes = hidden;
    classes.col_labels = names;
    OutputSpec h = {.name = "hidden_states.0", .shape = "(B, S, H)"};
    OutputSpec v = {.name = "logits", .shape = "(B, S, V)"};
    OutputSpec c = {.name = "logits", .shape = "(B, num_labels)"};
    cr_expect(explain_poolable(&h, &hidden), "(B, S, H) is not pooled");
    cr_expect(!explain_poolable(&v, &logits), "(B, S, V) is pooled: means of unrelated ids");
    cr_expect(!explain_poolable(&c, &classes), "named classes are pooled");
    SvgPicture maps = picture(SVG_MAPS, 4, 64, 64);
    OutputSpec a = {.name = "layers.0.attention_probs", .shape = "(B, nh, S, S)"};
    cr_expect(!explain_poolable(&a, &maps), "an attention map's keys are pooled");
}

/* 64 tokens of the bertc-docs vocabulary, [CLS] and [SEP] included. */
static const char text64[] =
    "the cat sat on the mat and the dog ran after it while the children watched from the "
    "window of the old house near the river where the boats were tied up for the night and "
    "the wind was cold so they went inside to have some soup and then they all went to bed "
    "early because it was late";

/* A deep model (12 layers of 12 heads, random weights, bertc-docs'
 * vocabulary): its 64-token page is no bigger than the page budget allows. */
Test(explain_budget, a_deep_model_keeps_to_the_page_budget)
{
    char cmd[4096], log[4096], page[400];
    snprintf(cmd, sizeof cmd, "cp data/pretrained/bertc-docs/vocab.txt "
             "data/pretrained/bertc-docs/tokenizer_config.json %s/ && sed -e "
             "'s/\"hidden_size\": 128/\"hidden_size\": 96/' -e "
             "'s/\"num_hidden_layers\": 4/\"num_hidden_layers\": 12/' -e "
             "'s/\"num_attention_heads\": 4/\"num_attention_heads\": 12/' -e "
             "'s/\"intermediate_size\": 512/\"intermediate_size\": 96/' "
             "data/pretrained/bertc-docs/config.json > %s/config.json && %s init --config "
             "%s/config.json --output %s/model.safetensors --seed 1", dir, dir, BERTC_CLI, dir,
             dir);
    cr_assert_eq(test_shell(cmd, TEST_STDOUT_AND_STDERR, log, sizeof log), 0, "%s: %s", cmd,
                 log);
    snprintf(page, sizeof page, "%s/deep.html", dir);
    snprintf(cmd, sizeof cmd, "%s explain --model %s --out %s '%s'", BERTC_CLI, dir, page,
             text64);
    cr_assert_eq(test_shell(cmd, TEST_STDOUT_AND_STDERR, log, sizeof log), 0, "%s", log);
    static char html[4 << 20];
    test_read_text(page, html, sizeof html);
    cr_assert(strstr(html, "64 tokens (sequence 0"), "the text is not 64 tokens");
    cr_expect(strstr(html, "layers.11.attention_probs</code>") &&
              strstr(strstr(html, "layers.11.attention_probs</code>"), "<path fill="),
              "the last layer's attention is not drawn: the budget ran out before it");
    cr_expect(strstr(html, "of 12 drawn (a page keeps its maps to about 98304 cells"),
              "no note says heads were left out for the page's budget");
    long bytes = test_file_bytes(page);
    cr_expect_lt(bytes, 1500000L, "12 layers x 12 heads at 64 tokens: the page is %ld bytes, "
                 "want < 1.5 MB (a budget per picture, not per page?)", bytes);
}
