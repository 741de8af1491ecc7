/* test/test_dataset.c — the CSV, TSV and JSONL readers (zoo/train/dataset.c), label
 * sets, and the metrics of zoo/train/metrics.c against values worked out by hand. */
#include "test/test_util.h"
#include "zoo/train/dataset.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static Arena *arena;

static void setup(void) { arena = bertc_arena_create("dataset test", 1 << 16); }
static void teardown(void) { bertc_arena_destroy(arena); }

TestSuite(dataset, .init = setup, .fini = teardown);

static int parse(Dataset *d, const char *name, const char *text, BertcError *err)
{
    return bertc_dataset_parse(d, arena, name, bertc_dataset_guess_format(name, text, strlen(text)),
                               text, strlen(text), err);
}

static void expect_cell(const Dataset *d, int64_t row, int col, const char *want)
{
    const char *got = bertc_dataset_cell(d, row, col);
    cr_assert(got && strcmp(got, want) == 0, "%s row %lld column %d: expected '%s', got '%s'",
              d->name, (long long)row, col, want, got ? got : "(absent)");
}

static void expect_error(const char *name, const char *text, const char *want)
{
    Dataset d;
    BertcError err;
    cr_assert_neq(parse(&d, name, text, &err), 0, "%s: parsed, expected an error with '%s'",
                  name, want);
    cr_assert(strstr(err.msg, want), "%s: expected '%s' in the error, got: %s", name, want,
              err.msg);
    cr_assert(!strchr(err.msg, '\n'), "the error is not one line: %s", err.msg);
}

Test(dataset, csv_quoted_fields_hold_commas_quotes_and_newlines)
{
    const char *text = "text,label\n"
                       "\"a, b\",x\n"
                       "\"say \"\"hi\"\"\",y\n"
                       "\"two\nlines\",z\n"
                       "plain,\"\"\n";
    Dataset d;
    BertcError err;
    cr_assert_eq(parse(&d, "q.csv", text, &err), 0, "%s", err.msg);
    cr_assert_eq(d.n_columns, 2);
    cr_assert_eq(d.n_rows, 4, "expected 4 rows, got %lld", (long long)d.n_rows);
    expect_cell(&d, 0, 0, "a, b");
    expect_cell(&d, 1, 0, "say \"hi\"");
    expect_cell(&d, 2, 0, "two\nlines");
    expect_cell(&d, 3, 1, "");
    /* each record's first line: the quoted newline moves the next record on */
    int64_t lines[4] = {2, 3, 4, 6};
    for (int i = 0; i < 4; i++)
        cr_assert_eq(d.line[i], lines[i], "row %d starts on line %lld, expected %lld", i,
                     (long long)d.line[i], (long long)lines[i]);
}

Test(dataset, crlf_line_ends_are_not_part_of_the_cells)
{
    Dataset d;
    BertcError err;
    cr_assert_eq(parse(&d, "w.csv", "text,label\r\nhello,a\r\n\"q\",b\r\n\r\n", &err), 0, "%s",
                 err.msg);
    cr_assert_eq(d.n_rows, 2);
    expect_cell(&d, 0, 1, "a");
    expect_cell(&d, 1, 0, "q");
    expect_cell(&d, 1, 1, "b");
    cr_assert_eq(parse(&d, "w.tsv", "label\ttext\r\na\tsome \"quoted\" text\r\n", &err), 0, "%s",
                 err.msg);
    expect_cell(&d, 0, 1, "some \"quoted\" text");   /* TSV: quotes are ordinary */
    cr_assert_eq(d.format, DATASET_TSV);
}

Test(dataset, bad_rows_name_the_file_and_line)
{
    expect_error("b.csv", "text,label\nok,a\nthree,fields,here\n", "b.csv:3: 3 fields, the header has 2");
    expect_error("b.csv", "text,label\nok,a\none\n", "b.csv:3: 1 field, the header has 2");
    expect_error("u.csv", "text,label\nok,a\n\"never closed,b\nmore\n",
                 "u.csv:3: unterminated quoted field");
    expect_error("g.csv", "text,label\n\"x\"y,a\n", "g.csv:2: 'y' after a closing quote");
    expect_error("i.csv", "text,label\nok,a\nbad \xff byte,b\n",
                 "i.csv:3: invalid UTF-8 in column 'text'");
}

Test(dataset, a_nul_byte_is_an_error_naming_the_line)
{
    const char text[] = "text,label\nok,a\nnul\0here,b\n";
    Dataset d;
    BertcError err;
    cr_assert_neq(bertc_dataset_parse(&d, arena, "z.csv", DATASET_CSV, text, sizeof text - 1, &err),
                  0);
    cr_assert(strstr(err.msg, "z.csv:3: a NUL byte in column 'text'"), "%s", err.msg);
    /* every format: refused naming the line, never cut there */
    static const struct {
        const char *name, *text, *want;
        size_t len;
    } more[] = {
#define NUL_CASE(name, lit, want) {name, lit, want, sizeof lit - 1}
        NUL_CASE("z.tsv", "text\tlabel\nok\ta\nnul\0here\tb\n", "z.tsv:3: a NUL byte in column 'text'"),
        NUL_CASE("z.jsonl", "{\"text\": \"ok\"}\n{\"text\": \"nul\\u0000here\"}\n",
                 "z.jsonl:2: a NUL byte in column 'text'"),
        NUL_CASE("r.jsonl", "{\"text\": \"ok\"}\n{\"text\": \"nul\0here\"}\n", "r.jsonl:2"),
        NUL_CASE("z.conll", "EU B-ORG\nra\0w O\n", "z.conll:2: a NUL byte in column"),
#undef NUL_CASE
    };
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) {
        DatasetFormat f = bertc_dataset_guess_format(more[i].name, more[i].text, more[i].len);
        cr_expect_neq(bertc_dataset_parse(&d, arena, more[i].name, f, more[i].text, more[i].len,
                                          &err), 0, "%s: a NUL was read", more[i].name);
        cr_expect(strstr(err.msg, more[i].want), "%s: want '%s', got '%s'", more[i].name,
                  more[i].want, err.msg);
    }
}

/* Excel's "CSV UTF-8" and Notepad start a file with a UTF-8 byte order
 * mark: it is no part of the first column's name (it used to give "no
 * column 'text' (it has 'text')"), nor of a JSONL or SQuAD file's first
 * line, and it does not hide the '{' that makes a .txt file JSONL. */
Test(dataset, a_byte_order_mark_is_no_part_of_the_header)
{
    static const struct {
        const char *name, *text;
    } files[] = {
        {"b.csv", "\xEF\xBB\xBFtext,label\nhi,a\n"},
        {"b.tsv", "\xEF\xBB\xBFtext\tlabel\nhi\ta\n"},
        {"b.jsonl", "\xEF\xBB\xBF{\"text\": \"hi\", \"label\": \"a\"}\n"},
        {"b.txt", "\xEF\xBB\xBF{\"text\": \"hi\", \"label\": \"a\"}\n"},
        {"b.json", "\xEF\xBB\xBF{\"data\": [{\"paragraphs\": [{\"context\": \"hi\", \"qas\": "
                   "[{\"id\": \"1\", \"question\": \"a\", \"answers\": []}]}]}]}"},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        Dataset d;
        BertcError err;
        cr_assert_eq(parse(&d, files[i].name, files[i].text, &err), 0, "%s: %s", files[i].name,
                     err.msg);
        const char *first = i == 4 ? "question" : "text";
        int col = bertc_dataset_column(&d, first, &err);
        cr_assert_geq(col, 0, "%s: %s", files[i].name, err.msg);
        expect_cell(&d, 0, col, i == 4 ? "a" : "hi");
        cr_expect_eq(d.line[0], 2 - (i >= 2), "%s: row 0 on line %lld", files[i].name,
                     (long long)d.line[0]);
    }
}

Test(dataset, a_huge_field_is_read_whole)
{
    size_t n = 4 << 20;
    char *text = malloc(n + 32);
    strcpy(text, "text,label\n\"");
    size_t k = strlen(text);
    memset(text + k, 'w', n);
    strcpy(text + k + n, "\",a\n");
    Dataset d;
    BertcError err;
    cr_assert_eq(parse(&d, "h.csv", text, &err), 0, "%s", err.msg);
    cr_assert_eq(strlen(bertc_dataset_cell(&d, 0, 0)), n);
    free(text);
}

Test(dataset, jsonl_strings_numbers_lists_and_absent_keys)
{
    const char *text = "{\"text\": \"caf\\u00e9\", \"label\": 2, \"tags\": [\"a\", \"b\"]}\n"
                       "\n"
                       "{\"label\": -0.25, \"text\": \"two\", \"tags\": []}\r\n"
                       "{\"text\": \"three\", \"label\": null}\n";
    Dataset d;
    BertcError err;
    cr_assert_eq(parse(&d, "j.jsonl", text, &err), 0, "%s", err.msg);
    cr_assert_eq(d.n_columns, 3);
    cr_assert_eq(d.n_rows, 3);
    expect_cell(&d, 0, 0, "café");
    expect_cell(&d, 0, 1, "2");
    expect_cell(&d, 0, 2, "a|b");
    expect_cell(&d, 1, 1, "-0.25");
    expect_cell(&d, 1, 2, "");
    cr_assert_null(bertc_dataset_cell(&d, 2, 1), "null is an absent cell");
    cr_assert_null(bertc_dataset_cell(&d, 2, 2), "a missing key is an absent cell");
    cr_assert_eq(d.line[2], 4, "the third object is on line 4, got %lld", (long long)d.line[2]);
    expect_error("j.jsonl", "{\"text\": \"a\"}\n{\"text\": \"b\",}\n", "j.jsonl:2:");
    expect_error("j.jsonl", "{\"text\": \"a\"}\n[1]\n", "j.jsonl:2: a JSONL line must be an object");
    expect_error("j.jsonl", "{\"text\": \"a\"}\n{\"text\": {\"x\": 1}}\n",
                 "j.jsonl:2: column 'text' is an object");
    expect_error("j.jsonl", "{\"tags\": [\"a|b\"]}\n", "j.jsonl:1: column 'tags' must be a list");
}

Test(dataset, format_by_extension_else_by_content)
{
    cr_assert_eq(bertc_dataset_guess_format("x.csv", "a\tb", 3), DATASET_CSV);
    cr_assert_eq(bertc_dataset_guess_format("x.jsonl", "a,b", 3), DATASET_JSONL);
    cr_assert_eq(bertc_dataset_guess_format("x.txt", " {\"a\": 1}", 9), DATASET_JSONL);
    cr_assert_eq(bertc_dataset_guess_format("x.txt", "a\tb\nc,d", 7), DATASET_TSV);
    cr_assert_eq(bertc_dataset_guess_format("x.txt", "a,b\nc\td", 7), DATASET_CSV);
}

Test(dataset, columns_are_found_or_listed)
{
    Dataset d;
    BertcError err;
    cr_assert_eq(parse(&d, "c.csv", "sentence,label\nhi,a\n", &err), 0, "%s", err.msg);
    const char *names[2] = {"text", "sentence"};
    cr_assert_eq(bertc_dataset_column_of(&d, names, 2, &err), 0);
    cr_assert_eq(bertc_dataset_column(&d, "text", &err), -1);
    cr_assert(strstr(err.msg, "c.csv: no column 'text' in the header (it has 'sentence', 'label')"),
              "%s", err.msg);
}

Test(dataset, empty_and_header_only_files_are_errors)
{
    expect_error("e.csv", "", "e.csv: empty");
    expect_error("e.csv", "text,label\n", "e.csv: a header and no rows");
}

Test(dataset, a_fifo_is_refused_without_blocking)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/bertc_dataset_fifo_%d.csv", (int)getpid());
    unlink(path);
    cr_assert_eq(mkfifo(path, 0600), 0);
    Dataset d;
    BertcError err;
    int rc = bertc_dataset_read(&d, arena, path, &err);
    unlink(path);
    cr_assert_neq(rc, 0);
    cr_assert(strstr(err.msg, "not a regular file"), "%s", err.msg);
}

Test(dataset, a_file_is_read_and_parsed_by_its_extension)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/bertc_dataset_%d.tsv", (int)getpid());
    FILE *f = fopen(path, "w");
    fputs("label\ttext\nfood\tsoup, hot\n", f);
    fclose(f);
    Dataset d;
    BertcError err;
    int rc = bertc_dataset_read(&d, arena, path, &err);
    unlink(path);
    cr_assert_eq(rc, 0, "%s", err.msg);
    expect_cell(&d, 0, 1, "soup, hot");
}

/* ---- label sets ------------------------------------------------------- */

Test(dataset, label_sets_are_sorted_and_stable)
{
    Dataset d;
    LabelSet s;
    BertcError err;
    cr_assert_eq(parse(&d, "l.csv", "text,label\na,science\nb,law\nc,food\nd,law\n", &err), 0);
    cr_assert_eq(bertc_label_set_build(&s, arena, &d, 1, false, &err), 0, "%s", err.msg);
    cr_assert_eq(s.n, 3);
    const char *want[3] = {"food", "law", "science"};
    for (int i = 0; i < 3; i++)
        cr_assert_str_eq(s.names[i], want[i]);
    cr_assert_eq(bertc_label_set_id(&s, "law", 3), 1);
    cr_assert_eq(bertc_label_set_id(&s, "la", 2), -1);
    cr_assert_eq(bertc_label_set_id(&s, "zoo", 3), -1);

    cr_assert_eq(parse(&d, "m.csv", "text,label\na,b|a\nb,\nc,c|a\n", &err), 0);
    cr_assert_eq(bertc_label_set_build(&s, arena, &d, 1, true, &err), 0, "%s", err.msg);
    cr_assert_eq(s.n, 3, "multi-label: a, b, c; got %d", s.n);
    cr_assert_str_eq(s.names[0], "a");
    cr_assert_str_eq(s.names[2], "c");

    cr_assert_eq(parse(&d, "m.csv", "text,label\na,b||a\n", &err), 0);
    cr_assert_neq(bertc_label_set_build(&s, arena, &d, 1, true, &err), 0);
    cr_assert(strstr(err.msg, "m.csv:2: an empty label"), "%s", err.msg);
}

/* ---- metrics -------------------------------------------------------------- */

static void expect_near(double got, double want, const char *what)
{
    cr_assert(fabs(got - want) <= 1e-12 + 1e-12 * fabs(want), "%s: expected %.15g, got %.15g",
              what, want, got);
}

Test(dataset, classification_metrics_by_hand)
{
    /* gold 0 0 1 1 2 2, pred 0 1 1 1 0 2: 4 of 6 right.
     * class 0: tp 1 fp 1 fn 1 -> F1 2/4 = 0.5
     * class 1: tp 2 fp 1 fn 0 -> F1 4/5 = 0.8
     * class 2: tp 1 fp 0 fn 1 -> F1 2/3
     * class 3: never seen -> left out of the mean */
    int32_t gold[6] = {0, 0, 1, 1, 2, 2}, pred[6] = {0, 1, 1, 1, 0, 2};
    expect_near(bertc_metric_accuracy(gold, pred, 6), 4.0 / 6.0, "accuracy");
    expect_near(bertc_metric_macro_f1(gold, pred, 6, 4), (0.5 + 0.8 + 2.0 / 3.0) / 3.0,
                "macro-F1");
    /* multi-label, 2 rows x 3: gold 1 0 1 / 0 1 0, pred 1 1 0 / 0 1 0:
     * tp 2 (cells 0, 4), fp 1 (cell 1), fn 1 (cell 2) -> 4 / 6 */
    uint8_t g[6] = {1, 0, 1, 0, 1, 0}, p[6] = {1, 1, 0, 0, 1, 0};
    expect_near(bertc_metric_micro_f1(g, p, 2, 3), 4.0 / 6.0, "micro-F1");
    uint8_t z[6] = {0};
    expect_near(bertc_metric_micro_f1(z, z, 2, 3), 1.0, "micro-F1 with no positives");
}

Test(dataset, regression_metrics_by_hand)
{
    /* gold 1 2 3, pred 2 2 4: errors 1 0 1 -> MSE 2/3.
     * Pearson: gold centred -1 0 1, pred centred (mean 8/3) -2/3 -2/3 4/3;
     * sxy = 2/3 + 4/3 = 2, sxx = 2, syy = 4/9 + 4/9 + 16/9 = 24/9 -> r = 2 / sqrt(48/9) */
    float gold[3] = {1, 2, 3}, pred[3] = {2, 2, 4};
    expect_near(bertc_metric_mse(gold, pred, 3), 2.0 / 3.0, "MSE");
    cr_assert(fabs(bertc_metric_pearson(gold, pred, 3) - 2.0 / sqrt(48.0 / 9.0)) < 1e-7,
              "Pearson: expected %.9f, got %.9f", 2.0 / sqrt(48.0 / 9.0),
              bertc_metric_pearson(gold, pred, 3));
    float flat[3] = {5, 5, 5};
    expect_near(bertc_metric_pearson(gold, flat, 3), 0.0, "Pearson of a constant");
}

Test(dataset, entity_f1_by_hand)
{
    /* sentence 1: gold PER[0,2) LOC[3,4), predicted PER[0,2) ORG[3,4): 1 found.
     * sentence 2: gold I-MISC I-MISC is one chunk [0,2) (I after O starts
     * one); B-MISC B-MISC predicts two: none found.
     * gold 3, predicted 4, TP 1 -> F1 = 2 / 7 */
    const char *gold[6] = {"B-PER", "I-PER", "O", "B-LOC", "I-MISC", "I-MISC"};
    const char *pred[6] = {"B-PER", "I-PER", "O", "B-ORG", "B-MISC", "B-MISC"};
    int64_t lengths[2] = {4, 2};
    expect_near(bertc_metric_entity_f1(gold, pred, lengths, 2), 2.0 / 7.0, "entity F1");
    expect_near(bertc_metric_entity_f1(gold, gold, lengths, 2), 1.0, "entity F1 of gold");
    /* a chunk does not run across sentences: I-PER at the start of the
     * second sentence is a chunk of its own in both */
    const char *g2[3] = {"B-PER", "I-PER", "I-PER"}, *p2[3] = {"B-PER", "I-PER", "I-PER"};
    int64_t split[2] = {2, 1}, whole[1] = {3};
    expect_near(bertc_metric_entity_f1(g2, p2, split, 2), 1.0, "entity F1, split");
    const char *p3[3] = {"B-PER", "I-PER", "O"};
    expect_near(bertc_metric_entity_f1(g2, p3, whole, 1), 0.0, "a chunk cut short is missed");
    expect_near(bertc_metric_entity_f1(g2, p3, split, 2), 2.0 / 3.0, "one of two chunks found");
}

Test(dataset, squad_em_and_f1_by_hand)
{
    /* normalised: "eiffel tower" vs "eiffel tower" */
    expect_near(bertc_metric_squad_em("The Eiffel Tower!", "eiffel  tower"), 1.0, "EM");
    expect_near(bertc_metric_squad_em("Eiffel", "the Eiffel tower"), 0.0, "EM, partial");
    /* pred {in, paris, france}, gold {paris}: same 1, P 1/3, R 1 -> F1 0.5 */
    expect_near(bertc_metric_squad_f1("in Paris, France", "Paris"), 0.5, "F1");
    /* repeated words count once per match: pred {a->dropped} "paris paris"
     * vs "paris": same 1, P 1/2, R 1 -> 2/3 */
    expect_near(bertc_metric_squad_f1("Paris paris", "Paris"), 2.0 / 3.0, "F1, repeats");
    expect_near(bertc_metric_squad_f1("London", "Paris"), 0.0, "F1, disjoint");
    expect_near(bertc_metric_squad_f1("the", ""), 1.0, "F1, both empty after normalising");
    expect_near(bertc_metric_squad_f1("x", "a"), 0.0, "F1, one side empty");
}

Test(dataset, jsonl_nested_answers_become_dotted_columns)
{
    const char *text = "{\"question\": \"where?\", \"context\": \"in Paris\", "
                       "\"answers\": {\"text\": [\"Paris\", \"in Paris\"], "
                       "\"answer_start\": [3, 0]}}\n";
    Dataset d;
    BertcError err;
    cr_assert_eq(parse(&d, "s.jsonl", text, &err), 0, "%s", err.msg);
    cr_assert_eq(d.n_columns, 4);
    int t = bertc_dataset_column(&d, "answers.text", &err);
    int s = bertc_dataset_column(&d, "answers.answer_start", &err);
    cr_assert(t >= 0 && s >= 0, "%s", err.msg);
    expect_cell(&d, 0, t, "Paris|in Paris");
    expect_cell(&d, 0, s, "3|0");
}

/* CoNLL-2003 as distributed: word, POS, chunk, NER tag; -DOCSTART- and
 * blank lines between sentences. */
static const char conll2003[] =
    "-DOCSTART- -X- -X- O\n"
    "\n"
    "EU NNP B-NP B-ORG\n"
    "rejects VBZ B-VP O\n"
    "German JJ B-NP B-MISC\n"
    "call NN I-NP O\n"
    ". . O O\n"
    "\n"
    "Peter NNP B-NP B-PER\n"
    "Blackburn NNP I-NP I-PER\n"
    "\n"
    "-DOCSTART- -X- -X- O\n"
    "\n"
    "BRUSSELS NNP B-NP B-LOC\n"
    "1996-08-22 CD I-NP O\n";

Test(dataset, conll_sentences_become_rows_of_tokens_and_tags)
{
    Dataset d;
    BertcError err;
    cr_assert_eq(parse(&d, "train.conll", conll2003, &err), 0, "%s", err.msg);
    cr_assert_eq(d.format, DATASET_CONLL);
    cr_assert_eq(d.n_columns, 2);
    cr_assert_str_eq(d.columns[0], "tokens");
    cr_assert_str_eq(d.columns[1], "tags");
    cr_assert_eq(d.n_rows, 3, "3 sentences, got %lld rows", (long long)d.n_rows);
    expect_cell(&d, 0, 0, "EU|rejects|German|call|.");
    expect_cell(&d, 0, 1, "B-ORG|O|B-MISC|O|O");
    expect_cell(&d, 1, 0, "Peter|Blackburn");
    expect_cell(&d, 1, 1, "B-PER|I-PER");
    expect_cell(&d, 2, 0, "BRUSSELS|1996-08-22");
    expect_cell(&d, 2, 1, "B-LOC|O");
    cr_assert_eq(d.line[0], 3, "a row's line is its first token's, got %lld", (long long)d.line[0]);
    cr_assert_eq(d.line[1], 9);
    cr_assert_eq(d.line[2], 14);
}

Test(dataset, conll_crlf_tabs_and_trailing_blank_lines)
{
    Dataset d;
    BertcError err;
    const char *text = "EU\tB-ORG\r\nrejects\tO\r\n\r\n \r\nBonn  B-LOC \r\n\r\n\r\n\n";
    cr_assert_eq(parse(&d, "x.conll", text, &err), 0, "%s", err.msg);
    cr_assert_eq(d.n_rows, 2, "trailing blank lines are no sentence: %lld rows",
                 (long long)d.n_rows);
    expect_cell(&d, 0, 0, "EU|rejects");
    expect_cell(&d, 0, 1, "B-ORG|O");
    expect_cell(&d, 1, 0, "Bonn");
    expect_cell(&d, 1, 1, "B-LOC");
    cr_assert_eq(d.line[1], 5);
}

Test(dataset, conll_bad_lines_name_the_file_and_line)
{
    expect_error("b.conll", "EU B-ORG\nrejects O\n\nGerman B-MISC\ncall\n",
                 "b.conll:5: one column ('call')");
    expect_error("b.conll", "EU B-ORG\na|b O\n", "b.conll:2: a '|' in the word 'a|b'");
    expect_error("b.conll", "EU B-ORG\nx \xff\n", "b.conll:2: invalid UTF-8 in column 'tags'");
    expect_error("b.conll", "\n\r\n-DOCSTART- O\n\n", "b.conll: no sentences");
}

Test(dataset, conll_by_extension_or_docstart)
{
    cr_assert_eq(bertc_dataset_guess_format("x.conll", "a,b", 3), DATASET_CONLL);
    cr_assert_eq(bertc_dataset_guess_format("x.txt", "\n-DOCSTART- -X- O\n", 17), DATASET_CONLL);
    cr_assert_eq(bertc_dataset_guess_format("x.txt", "EU\tB-ORG\n", 9), DATASET_TSV,
                 "a .txt without -DOCSTART- is not guessed (finetune --task token-cls "
                 "reads it as CoNLL)");
}

/* The official SQuAD JSON (v2.0 here: an unanswerable question) is read as
 * Hugging Face's `datasets` flattens it: one row per question. */
Test(dataset, squad_json_is_one_row_per_question)
{
    const char *text =
        "{\"version\": \"v2.0\", \"data\": [{\"title\": \"T\", \"paragraphs\": [\n"
        " {\"context\": \"Paris is in \\\"France\\\".\", \"qas\": [\n"
        "  {\"id\": \"q1\", \"question\": \"Where is Paris?\", \"answers\": [\n"
        "    {\"text\": \"France\", \"answer_start\": 13}, {\"text\": \"\\\"France\\\"\", "
        "\"answer_start\": 12}]},\n"
        "  {\"id\": \"q2\", \"question\": \"Who?\", \"answers\": [], \"is_impossible\": true}]},\n"
        " {\"context\": \"Rome.\", \"qas\": [{\"id\": \"q3\", \"question\": \"City?\", "
        "\"answers\": [{\"text\": \"Rome\", \"answer_start\": 0}]}]}]}]}\n";
    Dataset d;
    BertcError err;
    cr_assert_eq(parse(&d, "train-v2.0.json", text, &err), 0, "%s", err.msg);
    cr_assert_eq(d.n_rows, 3);
    int q = bertc_dataset_column(&d, "question", &err), c = bertc_dataset_column(&d, "context", &err);
    int at = bertc_dataset_column(&d, "answers.text", &err);
    int st = bertc_dataset_column(&d, "answers.answer_start", &err);
    cr_assert(q >= 0 && c >= 0 && at >= 0 && st >= 0, "%s", err.msg);
    expect_cell(&d, 0, q, "Where is Paris?");
    expect_cell(&d, 0, c, "Paris is in \"France\".");
    expect_cell(&d, 0, at, "France|\"France\"");
    expect_cell(&d, 0, st, "13|12");
    expect_cell(&d, 1, at, "");
    expect_cell(&d, 2, c, "Rome.");
    /* each row carries the line of its question in the file (it used to be
     * the row's number), so later messages name the file's line */
    static const int64_t lines[3] = {3, 5, 6};
    for (int r = 0; r < 3; r++)
        cr_expect_eq(d.line[r], lines[r], "row %d on line %lld, its question is on %lld", r,
                     (long long)d.line[r], (long long)lines[r]);
    expect_error("nul.json", "{\"data\": [{\"paragraphs\": [{\"context\": \"x\", \"qas\": [\n"
                 "{\"question\": \"q\", \"answers\": []},\n\n"
                 "{\"question\": \"a\\u0000b\", \"answers\": []}]}]}]}",
                 "nul.json:4: a NUL byte in column 'question'");
    expect_error("bad.json", "{\"data\": [{\"paragraphs\": [{\"context\": \"x\", \"qas\": [\n"
                 "{\"question\": \"q\", \"answers\": [{\"text\": \"x\", \"answer_start\": -1}]}]}]}]}",
                 "bad.json:2: SQuAD: an answer needs a whole \"answer_start\" >= 0");
}

/* A row with more fields than the header and a bad byte in the extra one
 * (the fuzzer's finding: the message read a header name past the end). */
Test(dataset, a_bad_byte_past_the_header_is_named_by_its_number)
{
    expect_error("x.csv", "label,text\npos,a,b\xff\n", "x.csv:2: invalid UTF-8 in column '3, past the header'");
}
