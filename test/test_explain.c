/* test/test_explain.c — `bertc explain` and the shape-aware `bertc attention`
 * as a user runs them on the zoo fixtures: a page that fetches nothing and
 * shows every layer's attention and the variant's own outputs, gates drawn
 * as bars, undrawable shapes refused in one line, signed maps on a
 * diverging scale, a model that reads less of the text saying so; and the
 * rules under them (bertc_svg_kind, every architecture's steps). */
#include "cli/explain.h"
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char out_dir[256];

static void setup(void)
{
    snprintf(out_dir, sizeof out_dir, "/tmp/bertc_explain_%d", (int)getpid());
    char cmd[300];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", out_dir);
    cr_assert_eq(system(cmd), 0);
}

static void teardown(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", out_dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(explain, .init = setup, .fini = teardown);

/* Words whose ids fit every fixture model (vocab 80 and up). */
static const char *tiny_vocab(void)
{
    static char path[300];
    static const char *const tokens[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the",
                                         "cat", "sat", "on", "mat", "a", "dog", ".", "ran"};
    snprintf(path, sizeof path, "%s/vocab.txt", out_dir);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    for (size_t i = 0; i < sizeof tokens / sizeof tokens[0]; i++)
        fprintf(f, "%s\n", tokens[i]);
    fclose(f);
    return path;
}

/* `bertc CMD --config/--weights of FIXTURE --vocab tiny ARGS`: exit code,
 * stdout + stderr in *log. */
static int bertc(const char *cmd, const char *fixture, const char *args, const char **log)
{
    static char text[16384];
    char line[4096];
    snprintf(line, sizeof line, "%s %s --config test/data/zoo/%s/config.json --weights "
             "test/data/zoo/%s/weights.safetensors --vocab %s %s", BERTC_CLI, cmd, fixture,
             fixture, tiny_vocab(), args);
    *log = text;
    return test_shell(line, TEST_STDOUT_AND_STDERR, text, sizeof text);
}

/* The whole of a written file (pages run to ~1 MB). */
static const char *read_file(const char *path)
{
    static char text[4 << 20];
    test_read_text(path, text, sizeof text);
    cr_assert(text[0], "%s is empty or missing", path);
    return text;
}

static int count(const char *text, const char *needle)
{
    int n = 0;
    for (const char *s = strstr(text, needle); s; s = strstr(s + 1, needle))
        n++;
    return n;
}

/* One line on stderr holding want, and the exit code. */
static void expect_refusal(int rc, int want_rc, const char *log, const char *want,
                           const char *what)
{
    const char *nl = strchr(log, '\n');
    cr_expect_eq(rc, want_rc, "%s: exit %d, want %d: %s", what, rc, want_rc, log);
    cr_expect(strstr(log, want) && nl && !nl[1], "%s: want one line with \"%s\", got: %s", what,
              want, log);
}

/* ---- bertc explain ------------------------------------------------------- */

/* The page of fixture: written (exit 0), nothing to fetch, and a section
 * with a picture for every layer's attention. Returns the page's text. */
static const char *explain_page(const char *fixture, const char *args)
{
    char page[400], all[600];
    snprintf(page, sizeof page, "%s/%s.html", out_dir, fixture);
    snprintf(all, sizeof all, "--out %s %s", page, args);
    const char *log;
    int rc = bertc("explain", fixture, all, &log);
    cr_assert_eq(rc, 0, "%s: %s", fixture, log);
    const char *html = read_file(page);
    static const char *const fetch[] = {"http", "src=", "href=", "@import", "url(", "<script"};
    for (size_t i = 0; i < sizeof fetch / sizeof fetch[0]; i++)
        cr_expect(!strstr(html, fetch[i]), "%s: the page holds '%s': it must fetch nothing",
                  fixture, fetch[i]);
    cr_expect(strncmp(html, "<!DOCTYPE html>", 15) == 0 && strstr(html, "</html>"),
              "%s: not a whole HTML page", fixture);
    for (int l = 0; l < 2; l++) {   /* every fixture has 2 layers */
        char id[64], map[64];
        snprintf(id, sizeof id, "<h3 id=\"layer-%d\">", l);
        snprintf(map, sizeof map, "layers.%d.attention_probs</code>", l);
        const char *at = strstr(html, map);
        cr_expect(strstr(html, id), "%s: no section for layer %d", fixture, l);
        cr_expect(at && strstr(at, "<svg") && strstr(at, "colour:"),
                  "%s: layer %d's attention is not drawn with a colour scale", fixture, l);
    }
    cr_expect(strstr(html, "key token j (column)") && strstr(html, "query token i (row)"),
              "%s: the maps do not say which axis is the query and which the key", fixture);
    cr_expect(strstr(html, "<h2 id=\"prediction\">"), "%s: no prediction section", fixture);
    return html;
}

Test(explain, pages_fetch_nothing_and_show_every_layer)
{
    const char *html = explain_page("bert_seqcls_single", "'the cat sat on the mat.'");
    cr_expect(strstr(html, "zoo/models/bert.c:bertc_bert_embeddings_forward") && strstr(html, "min ") &&
              strstr(html, "std "), "no file:function or statistics");
    html = explain_page("bertsum_a", "'the cat sat. the dog ran. a cat ran.'");
    cr_expect(strstr(html, "sent_scores</code>") && strstr(html, "sentence 2: a cat ran."),
              "BertSum: the sentence scores or the ranked sentences are missing");
    html = explain_page("qaconv_given", "'the cat' 'the dog ran on the mat.'");
    cr_expect(strstr(html, "attention_rate</code>") && strstr(html, "Best span"),
              "QAConv: no query attention or answer span");
    explain_page("bert_multiple_choice", "'the cat sat' 'a dog ran'");
    html = explain_page("spanbert_a", "'the cat [MASK] [MASK] the mat .'");
    cr_expect(strstr(html, "From <code>sbo_logits</code>") &&
              count(strstr(html, "From <code>sbo_logits</code>"), "<td>[MASK]</td>") == 2,
              "SpanBERT: the SBO predictions of the two [MASK] tokens are missing");
}

/* CGBERT's gates are bars per head and token; QACGBERT's quasi-attention
 * goes below 0 and gets the diverging scale. */
Test(explain, gates_are_bars_and_quasi_attention_diverges)
{
    const char *html = explain_page("cgbert_gate", "--context 3 'the cat sat on the mat.'");
    const char *gate = strstr(html, "layers.1.lambda_q</code>");
    cr_assert(gate, "no section for layers.1.lambda_q");
    const char *end = strstr(gate, "</svg>");
    cr_assert(end);
    int bars = 0;
    for (const char *s = strstr(gate, "stroke-width=\"0.5\""); s && s < end;
         s = strstr(s + 1, "stroke-width=\"0.5\""))
        bars++;
    cr_expect_eq(bars, 4 * 9, "lambda_q (1, 4, 9, 1): want 36 bars (4 heads x 9 tokens), "
                 "got %d", bars);
    html = explain_page("qacgbert_gate", "'the cat sat on the mat.'");
    const char *quasi = strstr(html, "layers.1.quasi_attention_prob</code>");
    cr_assert(quasi, "no section for layers.1.quasi_attention_prob");
    cr_expect(strstr(quasi, "diverging: blue &lt; 0 &lt; red"),
              "QACGBERT's quasi-attention (min < 0) is not on a diverging scale");
}

/* An output the table names and the model does not (yet) declare is a
 * note, not an error. */
Test(explain, outputs_not_landed_are_noted)
{
    const char *html = explain_page("cgbert_gate", "'the cat'");
    cr_expect(strstr(html, "class=\"note\">Skipped: CGBertForSequenceClassification "
                           "<code>layers.0.deep_context</code>") ||
              strstr(html, "layers.0.deep_context</code>, declared"),
              "deep_context is neither shown nor noted as missing");
}

Test(explain, refuses_bad_flags_in_one_line)
{
    const char *log;
    int rc;
    char out[400];
    snprintf(out, sizeof out, "--out %s/p.html", out_dir);
    char args[600];
    snprintf(args, sizeof args, "%s --context x 'the cat'", out);
    rc = bertc("explain", "cgbert_gate", args, &log);
    expect_refusal(rc, 2, log,
                   "--context needs a whole number from 0 to 2147483647, got 'x'", "--context x");
    rc = bertc("explain", "cgbert_gate", "'the cat'", &log);
    expect_refusal(rc, 2, log,
                   "--out PAGE.html is required", "no --out");
    rc = bertc("explain", "cgbert_gate", out, &log);
    expect_refusal(rc, 2, log, "TEXT is required",
                   "no TEXT");
    snprintf(args, sizeof args, "%s --layer 1 'the cat'", out);
    rc = bertc("explain", "cgbert_gate", args, &log);
    expect_refusal(rc, 2, log, "--layer", "--layer");
    snprintf(args, sizeof args, "%s --context 1 'the cat'", out);
    rc = bertc("explain", "bert_seqcls_single", args, &log);
    expect_refusal(rc, 1, log,
                   "--context 1: BertForSequenceClassification takes no context id",
                   "--context on BERT");
    snprintf(args, sizeof args, "%s --context 8 'the cat'", out);
    rc = bertc("explain", "cgbert_gate", args, &log);
    expect_refusal(rc, 1, log, "--context 8:",
                   "--context out of range");
    snprintf(args, sizeof args, "--out test/data/zoo/cgbert_gate/config.json 'the cat'");
    rc = bertc("explain", "cgbert_gate", args, &log);
    expect_refusal(rc, 1, log, "--out",
                   "--out over the config");
}

/* ---- bertc attention --map by shape --------------------------------------- */

static int attention(const char *fixture, const char *args, const char **log,
                     const char **svg_text)
{
    char svg[400], all[1200];
    snprintf(svg, sizeof svg, "%s/a.svg", out_dir);
    remove(svg);
    snprintf(all, sizeof all, "--output %s %s", svg, args);
    int rc = bertc("attention", fixture, all, log);
    if (svg_text && rc == 0)
        *svg_text = read_file(svg);
    return rc;
}

Test(explain, attention_draws_a_gate_as_bars)
{
    const char *log, *svg;
    int rc = attention("cgbert_gate", "--map lambda_q 'the cat sat on the mat.'", &log, &svg);
    cr_assert_eq(rc, 0, "%s", log);
    cr_expect(strstr(svg, "layers.1.lambda_q (B, nh, S, 1)"), "title does not name the gate");
    cr_expect_eq(count(svg, "stroke-width=\"0.5\""), 4 * 9,
                 "(1, 4, 9, 1): want 36 bars, got %d", count(svg, "stroke-width=\"0.5\""));
    cr_expect_eq(count(svg, "head "), 4, "want 4 heads");
    cr_expect(strstr(svg, "colour: ") && strstr(svg, "min ") && strstr(svg, "max "),
              "no colour scale with min and max");
    rc = attention("bertsum_a", "--map sent_scores 'the cat sat. the dog ran.'", &log, &svg);
    cr_assert_eq(rc, 0, "%s", log);
    cr_expect_eq(count(svg, "stroke-width=\"0.5\""), 2, "sent_scores (1, 2): want 2 bars");
}

Test(explain, attention_refuses_what_it_cannot_draw_in_one_line)
{
    const char *log;
    int rc;
    rc = attention("cgbert_gate", "--map hidden_states.0 'the cat'", &log, NULL);
    expect_refusal(rc, 1, log, "'hidden_states.0' has shape (B, S, H): bertc attention draws",
                   "hidden_states.0");
    rc = attention("cgbert_gate", "--map nonesuch 'the cat'", &log, NULL);
    expect_refusal(rc, 1, log,
                   "has no output 'layers.1.nonesuch' nor 'nonesuch'", "nonesuch");
    rc = attention("cgbert_gate", "--map loss 'the cat'", &log, NULL);
    expect_refusal(rc, 1, log, "'loss' has shape (): bertc attention draws", "loss");
}

Test(explain, attention_on_signed_maps_diverges)
{
    const char *log, *svg;
    int rc = attention("qacgbert_gate", "--map quasi_attention_prob 'the cat sat on the mat.'",
                       &log, &svg);
    cr_assert_eq(rc, 0, "%s", log);
    cr_expect(strstr(svg, "diverging"), "a map with values below 0 is not diverging");
    int negative = 0;   /* every colour level clearly below 0 is blue (r < b), not white */
    for (const char *c = strstr(svg, "<path fill=\"rgb("); c;
         c = strstr(c + 1, "<path fill=\"rgb(")) {
        int r, g, b;
        float lo, hi;
        const char *title = strstr(c, "<title>");
        if (sscanf(c, "<path fill=\"rgb(%d,%d,%d)", &r, &g, &b) != 3 || !title ||
            title > strstr(c, "</path>") || sscanf(title, "<title>%f to %f", &lo, &hi) != 2 ||
            hi > -0.05f)
            continue;
        negative++;
        cr_expect(r < b, "the level of %g to %g is rgb(%d,%d,%d), not blue", lo, hi, r, g, b);
    }
    cr_expect_gt(negative, 0, "no cell below -0.05 in the quasi-attention");
    rc = attention("qacgbert_gate", "'the cat sat on the mat.'", &log, &svg);
    cr_assert_eq(rc, 0, "%s", log);
    cr_expect(!strstr(svg, "diverging"), "softmax attention (>= 0) drawn as diverging");
}

/* QAConv reads TEXT as its question, kept to query_len (8) tokens: the rest
 * is not silently dropped from the picture. */
Test(explain, attention_says_when_the_model_read_less)
{
    const char *log, *svg;
    int rc = attention("qaconv_given", "'the cat sat on the mat . the dog ran .'", &log, &svg);
    cr_assert_eq(rc, 0, "%s", log);
    cr_expect(strstr(log, "QAConvModelV2 read 8 of the 13 tokens of the text") &&
              strstr(log, "give the context as TEXT_PAIR"), "no note on stderr: %s", log);
    cr_expect(strstr(svg, "read 8 of the 13 tokens"), "the picture does not say it");
    rc = attention("qaconv_given", "'the cat' 'sat on the mat . the dog ran .'", &log, &svg);
    cr_assert_eq(rc, 0, "%s", log);
    cr_expect(!strstr(log, "note:"), "a note though every token was read: %s", log);
}

/* ---- the rules ---------------------------------------------------------- */

Test(explain, kinds_come_from_the_declared_shape)
{
    static const struct { const char *shape; SvgKind kind; } cases[] = {
        {"(B, nh, S, S)", SVG_MAPS},       {"(B·C, nh, S, S)", SVG_MAPS},
        {"(B, heads, N, N)", SVG_MAPS},    {"(B, nh, S, 1)", SVG_GATES},
        {"(B, S)", SVG_VECTOR},            {"(B, N)", SVG_VECTOR},
        {"(S)", SVG_VECTOR},               {"(B, S, 1)", SVG_VECTOR},
        {"(B, S, H)", SVG_MATRIX},         {"(B, conv_filters, S)", SVG_MATRIX},
        {"(B, H)", SVG_MATRIX},            {"(n_masked, V)", SVG_MATRIX},
        {"(B, num_question_types)", SVG_MATRIX},
        {"(n_spans)", SVG_MATRIX},         {"(V, H)", SVG_UNDRAWABLE},
        {"()", SVG_UNDRAWABLE},            {"(B, nh, S, d)", SVG_MATRIX},
        {"(B, nh, S, N)", SVG_UNDRAWABLE}, {"(B, nh, S, S, S)", SVG_UNDRAWABLE},
        {"B, S", SVG_UNDRAWABLE},          {"(B, S", SVG_UNDRAWABLE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_expect_eq(bertc_svg_kind(cases[i].shape), cases[i].kind, "%s: kind %d, want %d",
                     cases[i].shape, bertc_svg_kind(cases[i].shape), cases[i].kind);
    cr_expect(bertc_output_name_matches("layers.{l}.lambda_q", "layers.11.lambda_q"));
    cr_expect(!bertc_output_name_matches("layers.{l}.lambda_q", "layers..lambda_q"));
    cr_expect(!bertc_output_name_matches("layers.{l}.lambda_q", "layers.1.lambda_qq"));
    cr_expect(bertc_output_name_matches("sent_scores", "sent_scores"));
}

/* Whether the C file at path defines function fn: a line at column 0 (a
 * definition, not an indented call) holding "fn(" after a non-name
 * character, not ending in ';' (a prototype). */
static bool defines(const char *path, const char *fn)
{
    static char text[1 << 20];
    test_read_text(path, text, sizeof text);
    size_t n = strlen(fn);
    for (const char *line = text; *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : "") {
        const char *end = strchr(line, '\n') ? strchr(line, '\n') : line + strlen(line);
        if (*line == ' ' || *line == '\t' || *line == '#' || *line == '/' || *line == '*')
            continue;
        for (const char *at = strstr(line, fn); at && at + n < end; at = strstr(at + 1, fn)) {
            bool start = at == line || !(isalnum((unsigned char)at[-1]) || at[-1] == '_');
            if (start && at[n] == '(' && end[-1] != ';')
                return true;
        }
    }
    return false;
}

/* A step's "file:function" names a function its file defines. */
static void expect_defined(const char *arch, const ExplainStep *s)
{
    char path[256];
    const char *colon = strchr(s->where, ':');
    cr_assert(colon && s->output, "%s step '%s': no file:function or output", arch, s->title);
    snprintf(path, sizeof path, "%.*s", (int)(colon - s->where), s->where);
    cr_expect(defines(path, colon + 1), "%s step '%s': %s does not define %s()", arch, s->title,
              path, colon + 1);
}

/* Every architecture declares its explain steps (ModelArch.explain), and
 * every file:function they cite exists: a renamed function or a moved file
 * fails here, not on a learner's page. */
Test(explain, every_architecture_has_steps_that_exist)
{
    const ModelArch *arch;
    for (int i = 0; (arch = bertc_zoo_arch_at(i)) != NULL; i++) {
        const ModelExplain *a = arch->explain;
        cr_assert(a && a->mechanism && a->n_encoder > 0 && a->n_steps > 0,
                  "%s declares no explain steps (ModelArch.explain)", arch->name);
        for (int k = 0; k < a->n_encoder; k++)
            expect_defined(arch->name, &a->encoder[k]);
        for (int k = 0; k < a->n_steps; k++)
            expect_defined(arch->name, &a->steps[k]);
    }
}

/* The check itself finds a definition and nothing else. */
Test(explain, defines_finds_definitions_only)
{
    cr_expect(defines("zoo/models/bert_heads.c", "seqcls_run"));
    cr_expect(defines("zoo/models/bert_heads.c", "bertc_bert_lm_head_forward"));
    cr_expect(!defines("zoo/models/bert_heads.c", "lm_head_forward"), "a name's tail");
    cr_expect(!defines("zoo/models/bert_heads.c", "bertc_bert_model_forward"), "a call");
    cr_expect(!defines("zoo/models/bert_heads.c", "no_such_function"));
    cr_expect(!defines("zoo/models/no_such_file.c", "seqcls_run"));
}

/* ---- issue #29: labels, size, class names, cut texts ----------------------- */

/* 64 tokens of the shipped bertc-docs model, [CLS] and [SEP] included. */
static const char text64[] =
    "the quick brown fox jumps over the lazy dog while the children play in the park near the "
    "river and the old man reads a book about the history of the city and its people who lived "
    "there many years ago before the war came to the town and all the young men left their "
    "homes to fight";

/* `bertc explain --model data/pretrained/bertc-docs ARGS --out PAGE TEXT`: the
 * page's text (exit 0 asserted). */
static const char *docs_page(const char *args, const char *text, const char *page)
{
    char line[4096], log[4096];
    snprintf(line, sizeof line, "%s explain --model data/pretrained/bertc-docs %s --out %s "
             "'%s'", BERTC_CLI, args, page, text);
    int rc = test_shell(line, TEST_STDOUT_AND_STDERR, log, sizeof log);
    cr_assert_eq(rc, 0, "%s: exit %d: %s", line, rc, log);
    return read_file(page);
}

/* The position of one <text> of an axis group: x="..." y="...", or the
 * translate(x,y) of a rotated label. */
static bool label_at(const char *t, double *x, double *y)
{
    return sscanf(t, "<text x=\"%lf\" y=\"%lf\"", x, y) == 2 ||
           sscanf(t, "<text transform=\"translate(%lf,%lf)", x, y) == 2;
}

/* Every axis of the page (<g class="xlabels"> above or below the columns,
 * "ylabels" left of the rows): its labels share the other coordinate and
 * consecutive ones are at least the group's font-size apart. Returns the
 * labels seen. */
static int expect_axes_apart(const char *html, const char *what)
{
    int labels = 0, axes = 0;
    for (const char *g = strstr(html, "<g class=\""); g; g = strstr(g + 1, "<g class=\"")) {
        bool x_axis = strncmp(g, "<g class=\"xlabels\"", 18) == 0;
        if (!x_axis && strncmp(g, "<g class=\"ylabels\"", 18) != 0)
            continue;
        double font = 0;
        const char *fs = strstr(g, "font-size=\""), *end = strstr(g, "</g>");
        cr_assert(fs && end && sscanf(fs, "font-size=\"%lf\"", &font) == 1 && font > 0,
                  "%s: an axis group without a font-size", what);
        double px = 0, py = 0;
        int n = 0;
        axes++;
        for (const char *t = strstr(g, "<text "); t && t < end; t = strstr(t + 1, "<text ")) {
            double x, y;
            cr_assert(label_at(t, &x, &y), "%s: a label without a position: %.60s", what, t);
            if (n > 0) {
                double along = x_axis ? x - px : y - py, across = x_axis ? y - py : x - px;
                cr_expect(across == 0, "%s: axis %d: labels %d and %d are not in line (%s "
                          "%g vs %g)", what, axes, n - 1, n, x_axis ? "y" : "x",
                          x_axis ? py : px, x_axis ? y : x);
                cr_expect(along >= font, "%s: axis %d: labels %d and %d are %g px apart, less "
                          "than the font size %g: they overlap", what, axes, n - 1, n, along,
                          font);
            }
            px = x;
            py = y;
            n++;
        }
        labels += n;
    }
    cr_expect_gt(axes, 10, "%s: only %d axis groups", what, axes);
    return labels;
}

Test(explain, axis_labels_never_overlap_at_64_tokens)
{
    char page[400];
    snprintf(page, sizeof page, "%s/p64.html", out_dir);
    const char *html = docs_page("", text64, page);
    cr_assert(strstr(html, "64 tokens (sequence 0"), "the text is not 64 tokens");
    int labels = expect_axes_apart(html, "64 tokens");
    cr_expect_gt(labels, 100, "64 tokens: %d axis labels in all", labels);
}

/* Heat maps as paths and pooled features keep a page small (11 MB of
 * rects at 64 tokens before), and bounded at the longest text. */
Test(explain, pages_stay_small)
{
    char page[400], longer[4 * sizeof text64 + 8];
    snprintf(page, sizeof page, "%s/p64.html", out_dir);
    const char *html = docs_page("", text64, page);
    long bytes = test_file_bytes(page);
    cr_expect_lt(bytes, 1500000L, "a 64-token page is %ld bytes, want < 1.5 MB", bytes);
    cr_expect(strstr(html, "dimensions pooled in bins of 2"),
              "(64, 128) hidden states over 4096 cells, but no pooling is said");
    cr_expect(count(html, "<path fill=") > 100 && count(html, "<rect ") < 2000,
              "cells are still drawn one rect each (%d rects)", count(html, "<rect "));
    snprintf(longer, sizeof longer, "%s %s %s %s", text64, text64, text64, text64);
    snprintf(page, sizeof page, "%s/p256.html", out_dir);
    docs_page("--max-len 256", longer, page);
    bytes = test_file_bytes(page);
    cr_expect_lt(bytes, 1500000L, "a 256-token page is %ld bytes, want < 1.5 MB", bytes);
}

/* A classifier's logits are labelled with its id2label names. */
Test(explain, logits_are_labelled_with_id2label)
{
    char dir[300], cmd[2400];
    snprintf(dir, sizeof dir, "%s/named", out_dir);
    snprintf(cmd, sizeof cmd, "mkdir -p %s && cp test/data/zoo/bert_seqcls_single/"
             "weights.safetensors %s/model.safetensors && cp %s %s/vocab.txt && sed "
             "'s/\"num_labels\": 3,/\"num_labels\": 3, \"id2label\": {\"0\": \"sad\", "
             "\"1\": \"calm\", \"2\": \"glad\"},/' test/data/zoo/bert_seqcls_single/config.json "
             "> %s/config.json", dir, dir, tiny_vocab(), dir, dir);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    char line[2400], log[4096], page[400];
    snprintf(page, sizeof page, "%s/named.html", out_dir);
    snprintf(line, sizeof line, "%s explain --model %s --out %s 'the cat sat'", BERTC_CLI, dir,
             page);
    int rc = test_shell(line, TEST_STDOUT_AND_STDERR, log, sizeof log);
    cr_assert_eq(rc, 0, "%s", log);
    const char *html = read_file(page);
    const char *logits = strstr(html, "logits</code>, declared");
    cr_assert(logits, "no logits section");
    const char *axis = strstr(logits, "<g class=\"xlabels\""), *end = strstr(logits, "</svg>");
    cr_assert(axis && end && axis < end, "the logits map has no column labels");
    static const char *const names[] = {">sad</text>", ">calm</text>", ">glad</text>"};
    for (int i = 0; i < 3; i++) {
        const char *at = strstr(axis, names[i]);
        cr_expect(at && at < end, "logits column %d is not labelled %s", i, names[i]);
    }
    const char *zero = strstr(axis, ">0</text>");
    cr_expect(!zero || zero > end, "the logits columns are still numbered");
}

/* A text longer than --max-len: one warning line, a note on the page, and
 * only the part read shown. */
Test(explain, a_cut_text_is_said_and_shown_as_read)
{
    char args[600];
    const char *log;
    snprintf(args, sizeof args, "--max-len 8 --out %s/cut.html 'the cat sat on the mat . the "
             "dog ran .'", out_dir);
    int rc = bertc("explain", "bert_seqcls_single", args, &log);
    cr_assert_eq(rc, 0, "%s", log);
    const char *want = "bertc explain: warning: the text is 13 tokens; the page shows the "
                       "first 8 (--max-len)\n";
    cr_expect(strstr(log, want) && count(log, "warning") == 1, "want one line \"%s\", got: %s",
              want, log);
    char page[400];
    snprintf(page, sizeof page, "%s/cut.html", out_dir);
    const char *html = read_file(page);
    cr_expect(strstr(html, "<p class=\"note\">The text is 13 tokens; the page shows the first 8 "
                           "(--max-len)"), "no note on the page");
    cr_expect(strstr(html, "<p>Text: <q>the cat sat on the mat</q>"),
              "the page does not show just the text read (6 tokens)");
    cr_expect(!strstr(html, "dog ran"), "the page shows text the model did not read");
    snprintf(args, sizeof args, "--out %s/cut.html 'the cat sat'", out_dir);
    rc = bertc("explain", "bert_seqcls_single", args, &log);
    cr_expect(rc == 0 && !strstr(log, "warning"), "a warning though nothing was cut: %s", log);
}
