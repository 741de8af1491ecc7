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
