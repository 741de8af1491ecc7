/* test/test_model_dir.c — a model directory as one unit: what
 * bertc_model_dir_save writes, bertc_model_dir_open reads back (weights,
 * labels, tokenizer and its config); a broken directory is one error naming
 * the file. */
#include "test/test_util.h"
#include "zoo/zoo.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[128];
static Arena *arena;

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/bertc_model_dir_%d", (int)getpid());
    arena = bertc_arena_create("model_dir", 1 << 20);
}

static void teardown(void)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
    bertc_arena_destroy(arena);
}

TestSuite(model_dir, .init = setup, .fini = teardown);

static const char vocab[] = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\nsat\n";

static void write_file(const char *name, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    cr_assert(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

/* The single-label fixture saved with label names and the tiny vocab. */
static void save_fixture(Model *m, Tokenizer *tok)
{
    BertcError err;
    test_model_build(m, arena, "test/data/zoo/bert_seqcls_single/config.json", NULL);
    test_model_load(m, "test/data/zoo/bert_seqcls_single/weights.safetensors");
    const char *names[] = {"sports", "science", "arts"};
    cr_assert_eq(bertc_bert_config_set_labels(&m->cfg, names, m->cfg.num_labels, &err), 0,
                 "%s", err.msg);
    cr_assert_eq(bertc_tokenizer_parse(tok, arena, "vocab", vocab, strlen(vocab), &err), 0);
    tok->do_lower_case = false;
    cr_assert_eq(bertc_model_dir_save(dir, m, tok, &err), 0, "%s", err.msg);
}

Test(model_dir, save_then_open_is_the_same_model)
{
    Model m;
    Tokenizer tok;
    BertcError err;
    save_fixture(&m, &tok);
    ModelDir d;
    cr_assert_eq(bertc_model_dir_open(&d, arena, dir, &err), 0, "%s", err.msg);
    cr_expect(d.has_weights && d.has_tokenizer);
    cr_expect_str_eq(d.model.cfg.architecture, "BertForSequenceClassification");
    cr_expect_str_eq(bertc_bert_config_label(&d.model.cfg, 1), "science");
    test_expect_same_weights(m.reg, d.model.reg, "after the round trip");
    cr_expect_eq(d.tok.V, tok.V);
    cr_expect(!d.tok.do_lower_case, "tokenizer_config.json's do_lower_case");
    cr_expect_eq(d.tok.cls_id, 2);
    cr_expect_eq(d.model_max_length, m.cfg.max_position_embeddings);
}

Test(model_dir, tokenizer_config_is_read)
{
    Model m;
    Tokenizer tok;
    BertcError err;
    save_fixture(&m, &tok);
    write_file("tokenizer_config.json", "{\"do_lower_case\": true, \"model_max_length\": 1e30, "
               "\"cls_token\": {\"content\": \"[CLS]\", \"lstrip\": false}}");
    ModelDir d;
    cr_assert_eq(bertc_model_dir_open(&d, arena, dir, &err), 0, "%s", err.msg);
    cr_expect(d.tok.do_lower_case);
    cr_expect_eq(d.model_max_length, m.cfg.max_position_embeddings, "capped by the model");
    write_file("tokenizer_config.json", "{\"cls_token\": \"<s>\"}");
    cr_assert_neq(bertc_model_dir_open(&d, arena, dir, &err), 0);
    cr_expect(strstr(err.msg, "tokenizer_config.json") && strstr(err.msg, "cls_token \"<s>\""),
              "%s", err.msg);
    write_file("tokenizer_config.json", "{\"do_lower_case\": true, \"strip_accents\": false}");
    cr_assert_neq(bertc_model_dir_open(&d, arena, dir, &err), 0);
    cr_expect(strstr(err.msg, "strip_accents"), "%s", err.msg);
    write_file("tokenizer_config.json", "{\"do_lower_case\": ");
    cr_assert_neq(bertc_model_dir_open(&d, arena, dir, &err), 0);
    cr_expect(strstr(err.msg, "tokenizer_config.json"), "%s", err.msg);
}

Test(model_dir, what_is_missing_is_named)
{
    ModelDir d;
    BertcError err;
    cr_assert_neq(bertc_model_dir_open(&d, arena, dir, &err), 0);
    cr_expect(strstr(err.msg, dir) && strstr(err.msg, "not a model directory"), "%s", err.msg);
    Model m;
    Tokenizer tok;
    save_fixture(&m, &tok);
    char path[256];
    snprintf(path, sizeof path, "%s/config.json", dir);
    unlink(path);
    cr_assert_neq(bertc_model_dir_open(&d, arena, dir, &err), 0);
    cr_expect(strstr(err.msg, "no config.json"), "%s", err.msg);
    cr_assert_neq(bertc_model_dir_open(&d, arena, "test/data/zoo/bert_qa/config.json", &err), 0);
    cr_expect(strstr(err.msg, "not a model directory"), "%s", err.msg);
}

/* Every string bertc writes into a model directory's JSON (config.json's
 * id2label and label2id, tokenizer_config.json's special tokens) and into a
 * safetensors header (__metadata__) is escaped: quotes, backslashes and
 * control characters come back equal. A special token holding '"' used to
 * make tokenizer_config.json unreadable. */
Test(model_dir, every_string_written_is_escaped_and_read_back_equal)
{
    static const char odd_vocab[] = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n[C\"L\\S]\n"
                                    "<se\\p\x01>\n\"pad\"\n<u\x1fnk>\n[MA\"\"SK\\\\]\nthe\n";
    Model m;
    Tokenizer tok;
    BertcError err;
    test_model_build(&m, arena, "test/data/zoo/bert_seqcls_single/config.json", NULL);
    test_model_load(&m, "test/data/zoo/bert_seqcls_single/weights.safetensors");
    const char *names[] = {"a \"quoted\" label", "back\\slash \\u0041", "tab\there\x01\x1f\n"};
    cr_assert_eq(m.cfg.num_labels, 3);
    cr_assert_eq(bertc_bert_config_set_labels(&m.cfg, names, 3, &err), 0, "%s", err.msg);
    cr_assert_eq(bertc_tokenizer_parse(&tok, arena, "vocab", odd_vocab, strlen(odd_vocab), &err),
                 0, "%s", err.msg);
    tok.cls_id = 5, tok.sep_id = 6, tok.pad_id = 7, tok.unk_id = 8, tok.mask_id = 9;
    cr_assert_eq(bertc_model_dir_save(dir, &m, &tok, &err), 0, "%s", err.msg);
    ModelDir d;
    cr_assert_eq(bertc_model_dir_open(&d, arena, dir, &err), 0, "%s", err.msg);
    for (int i = 0; i < 3; i++)
        cr_expect_str_eq(bertc_bert_config_label(&d.model.cfg, i), names[i], "label %d", i);
    const int32_t want[] = {5, 6, 7, 8, 9};
    const int32_t got[] = {d.tok.cls_id, d.tok.sep_id, d.tok.pad_id, d.tok.unk_id, d.tok.mask_id};
    for (int i = 0; i < 5; i++)
        cr_expect_eq(got[i], want[i], "special token %d: id %d, want %d (%s)", i, got[i],
                     want[i], bertc_tokenizer_token(&tok, want[i]));

    char path[256];
    snprintf(path, sizeof path, "%s/meta.safetensors", dir);
    const char *value = "a \"q\" \\ \x01\x7f\ttab\nline";
    StMetadata meta[] = {{"k\"e\\y\x02", value}};
    float x = 1.0f;
    StEntry e = bertc_st_entry_tensor("x", &(Tensor){.data = &x, .ndim = 1, .shape = {1},
                                                      .numel = 1});
    cr_assert_eq(bertc_st_write_file(path, &e, 1, meta, 1, &err), 0, "%s", err.msg);
    SafeTensors *st;
    cr_assert_eq(bertc_st_open_file(arena, path, &st, &err), 0, "%s", err.msg);
    const char *back = bertc_st_metadata_get(st, "k\"e\\y\x02");
    cr_expect(back && strcmp(back, value) == 0, "__metadata__ came back as %s", back);
    bertc_st_close(st);
}
