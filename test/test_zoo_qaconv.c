/* test/test_zoo_qaconv.c — QAConvModelV2 (SPEC §6.6) beyond the parity
 * fixtures: wrong inputs are errors naming the tensor and the limit, token
 * types derived from the first [SEP], labels all-or-none, and the module tree
 * printing as the PyTorch model's repr. */
#include "test/test_util.h"
#include "zoo/zoo.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CASE "test/data/zoo/qaconv_derived/"

static Arena *arena;
static Graph *graph;
static BertConfig cfg;
static Model model;
static Batch batch;
static ITensor ids, mask, start, end, qtype;

/* The fixture's config (V = 120, max_position_embeddings 40, query_len 4,
 * 4 question types, sep_token_id 2) and a valid (2, 8) batch without
 * token_type_ids, [SEP] at 3 and 5, that each test then breaks in one way. */
static void setup(void)
{
    test_open(&arena, &graph);
    bertc_ag_set_training(graph, false);
    test_model_build(&model, arena, CASE "config.json", &cfg);
    int64_t bs[2] = {2, 8}, b[1] = {2};
    ids = bertc_itensor_new(arena, 2, bs);
    mask = bertc_itensor_new(arena, 2, bs);
    start = bertc_itensor_new(arena, 1, b);
    end = bertc_itensor_new(arena, 1, b);
    qtype = bertc_itensor_new(arena, 1, b);
    for (int i = 0; i < 16; i++) {
        ids.data[i] = 5 + i;
        mask.data[i] = 1;
    }
    ids.data[3] = ids.data[7] = cfg.sep_token_id;           /* row 0: [SEP] at 3 and 7 */
    ids.data[8 + 5] = cfg.sep_token_id;                      /* row 1: [SEP] at 5 */
    mask.data[8 + 7] = 0;
    start.data[1] = end.data[1] = 6;
    qtype.data[1] = 3;
    bertc_batch_init(&batch, "inputs.safetensors");
    bertc_batch_put_ids(&batch, "input_ids", ids);
    bertc_batch_put_ids(&batch, "attention_mask", mask);
    bertc_batch_put_ids(&batch, "start_positions", start);
    bertc_batch_put_ids(&batch, "end_positions", end);
    bertc_batch_put_ids(&batch, "question_type", qtype);
}

static void teardown(void) { test_close(arena, graph); }

TestSuite(zoo_qaconv, .init = setup, .fini = teardown);

static void expect_error(const char *a, const char *b, const char *c)
{
    test_forward_fails(&model, graph, &batch, a, b, c);
}

static void run_ok(Outputs *out) { test_forward_ok(&model, graph, &batch, out); }

static const OutputItem *find_output(const Outputs *o, const char *name)
{
    for (int i = 0; i < o->n; i++)
        if (strcmp(o->items[i].name, name) == 0)
            return &o->items[i];
    return NULL;
}

Test(zoo_qaconv, valid_batch_gives_every_output)
{
    Outputs out;
    run_ok(&out);
    const char *names[] = {"start_logits", "end_logits", "query_logits", "attention_rate",
                           "last_hidden_state", "qa_loss", "query_loss", "loss"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        cr_expect(bertc_outputs_get(&out, names[i]), "no output '%s'", names[i]);
    const OutputItem *tt = find_output(&out, "used_token_type_ids");
    cr_assert(tt && tt->is_int, "no integer output 'used_token_type_ids'");
}

/* 0 before the FIRST [SEP], 1 from it on, padding included (the seed's
 * make_token_type_ids). */
Test(zoo_qaconv, token_types_derived_from_first_sep)
{
    Outputs out;
    run_ok(&out);
    const int32_t want[16] = {0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1};
    const ITensor *tt = &find_output(&out, "used_token_type_ids")->ids;
    for (int i = 0; i < 16; i++)
        cr_expect_eq(tt->data[i], want[i], "used_token_type_ids[%d, %d] = %d, want %d", i / 8,
                     i % 8, tt->data[i], want[i]);
}

Test(zoo_qaconv, given_token_types_are_used_as_is)
{
    int64_t bs[2] = {2, 8};
    ITensor types = bertc_itensor_new(arena, 2, bs);
    types.data[5] = 1;
    ids.data[8 + 5] = 9;                                     /* no [SEP] needed now */
    bertc_batch_put_ids(&batch, "token_type_ids", types);
    Outputs out;
    run_ok(&out);
    const ITensor *tt = &find_output(&out, "used_token_type_ids")->ids;
    for (int i = 0; i < 16; i++)
        cr_expect_eq(tt->data[i], types.data[i], "used_token_type_ids[%d] = %d, given %d", i,
                     tt->data[i], types.data[i]);
}

Test(zoo_qaconv, no_labels_no_loss)
{
    batch.n = 2;                                             /* input_ids, attention_mask */
    Outputs out;
    run_ok(&out);
    cr_expect(bertc_outputs_get(&out, "start_logits"));
    cr_expect(!bertc_outputs_get(&out, "loss") && !bertc_outputs_get(&out, "qa_loss"));
}

Test(zoo_qaconv, row_without_sep_names_the_row)
{
    ids.data[8 + 5] = 9;
    expect_error("'input_ids' row 1 has no [SEP]", "sep_token_id 2", "'token_type_ids'");
}

Test(zoo_qaconv, missing_input_names_it)
{
    batch.n = 0;
    bertc_batch_put_ids(&batch, "attention_mask", mask);
    expect_error("missing input tensor", "'input_ids'", "inputs.safetensors");
}

Test(zoo_qaconv, labels_are_all_or_none)
{
    bertc_batch_init(&batch, "inputs.safetensors");
    bertc_batch_put_ids(&batch, "input_ids", ids);
    bertc_batch_put_ids(&batch, "end_positions", end);
    bertc_batch_put_ids(&batch, "question_type", qtype);
    expect_error("missing input tensor", "'start_positions'", NULL);
}

Test(zoo_qaconv, float_ids_are_rejected)
{
    int64_t bs[2] = {2, 8};
    bertc_batch_put_f32(&batch, "input_ids", bertc_tensor_new(arena, 2, bs));
    expect_error("'input_ids'", "integers", NULL);
}

Test(zoo_qaconv, float_question_type_is_rejected)
{
    int64_t b[1] = {2};
    bertc_batch_put_f32(&batch, "question_type", bertc_tensor_new(arena, 1, b));
    expect_error("'question_type'", "integers", NULL);
}

Test(zoo_qaconv, sequence_longer_than_positions)
{
    int64_t bs[2] = {2, 41};
    bertc_batch_put_ids(&batch, "input_ids", bertc_itensor_new(arena, 2, bs));
    expect_error("length 41", "max_position_embeddings 40", "'input_ids'");
}

Test(zoo_qaconv, sequence_shorter_than_query_len)
{
    int64_t bs[2] = {2, 3};
    ITensor short_ids = bertc_itensor_new(arena, 2, bs);
    short_ids.data[1] = short_ids.data[4] = cfg.sep_token_id;
    batch.n = 0;
    bertc_batch_put_ids(&batch, "input_ids", short_ids);
    expect_error("'input_ids' has sequence length 3", "shorter than query_len 4", NULL);
}

Test(zoo_qaconv, id_outside_vocabulary)
{
    ids.data[11] = 120;
    expect_error("'input_ids'[1, 3] = 120", "vocab_size 120", NULL);
}

Test(zoo_qaconv, question_type_outside_types)
{
    qtype.data[1] = 4;
    expect_error("'question_type'[1] = 4", "num_question_types 4", NULL);
}

Test(zoo_qaconv, negative_question_type)
{
    qtype.data[0] = -1;
    expect_error("'question_type'[0] = -1", "below 0", NULL);
}

Test(zoo_qaconv, positions_shape_must_match)
{
    int64_t b[1] = {3};
    bertc_batch_put_ids(&batch, "end_positions", bertc_itensor_new(arena, 1, b));
    expect_error("'end_positions'", "[2]", "[3]");
}

/* Positions outside [0, S) are not errors: clamp(., 0, S) with S ignored. */
Test(zoo_qaconv, positions_outside_sequence_are_clamped)
{
    start.data[0] = 1000;
    end.data[0] = -7;
    Outputs out;
    run_ok(&out);
    cr_expect(bertc_outputs_get(&out, "qa_loss"));
}

Test(zoo_qaconv, query_len_longer_than_positions_is_a_config_error)
{
    BertConfig bad = cfg;
    test_config_set(&bad, "query_len", 41);
    Model m;
    BertcError err;
    cr_assert_neq(bertc_model_build(&m, arena, &bad, &err), 0);
    cr_expect(strstr(err.msg, "query_len 41") && strstr(err.msg, "max_position_embeddings 40"),
              "%s", err.msg);
}

/* The top level prints as PyTorch's repr of the seed's module, in __init__
 * order (lines taken from `print(model)` of tools/fixtures_qaconv.py). */
Test(zoo_qaconv, module_tree_prints_like_pytorch)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    bertc_registry_print(model.reg, f);
    fclose(f);
    const char *lines[] = {
        "QAConvModelV2(",
        "  (backbone): BertModel(",
        "  (query_layer): Linear(in_features=128, out_features=32, bias=True)",
        "  (query_calssify_layer): Linear(in_features=32, out_features=4, bias=True)",
        "  (key_layer): Linear(in_features=32, out_features=32, bias=True)",
        "  (value_layer): Linear(in_features=32, out_features=32, bias=True)",
        "  (conv1d_layer1): Conv1d(32, 8, kernel_size=(1,), stride=(1,))",
        "  (conv1d_layer3): Conv1d(32, 8, kernel_size=(3,), stride=(1,), padding=(1,))",
        "  (conv1d_layer5): Conv1d(32, 8, kernel_size=(5,), stride=(1,), padding=(2,))",
        "  (drop_out): Dropout(p=0.3, inplace=False)",
        "  (classify_layer): Linear(in_features=24, out_features=2, bias=True)",
    };
    const char *at = text;
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
        const char *hit = strstr(at, lines[i]);
        cr_expect(hit, "the tree lacks (or misorders) \"%s\":\n%s", lines[i], text);
        if (hit)
            at = hit;
    }
    free(text);
}

/* Every start and end position outside [0, S) is clamped to S and ignored
 * (SPEC §6.6), so the qa_loss is a mean over no row: NaN, as in PyTorch.
 * bertc run wrote it and exited 0; bertc_outputs_check_finite (what run and
 * every command that prints outputs call) refuses it naming the output and
 * the label inputs. */
Test(zoo_qaconv, positions_all_outside_the_sequence_are_named_not_passed_on)
{
    for (int b = 0; b < 2; b++) {
        start.data[b] = 8 + b;
        end.data[b] = 100;
    }
    Outputs out;
    run_ok(&out);
    cr_assert(isnan(bertc_outputs_get(&out, "qa_loss")->value.data[0]), "0/0 as PyTorch");
    BertcError err = {{0}};
    cr_assert_neq(bertc_outputs_check_finite(&model, &batch, &out, &err), 0);
    cr_expect(strstr(err.msg, "inputs.safetensors") && strstr(err.msg, "'qa_loss' is NaN") &&
                  strstr(err.msg, "start_positions") && strstr(err.msg, "end_positions") &&
                  !strchr(err.msg, '\n'),
              "%s", err.msg);
    /* one position inside: a finite loss, no error */
    start.data[0] = end.data[0] = 2;
    run_ok(&out);
    cr_expect_eq(bertc_outputs_check_finite(&model, &batch, &out, &err), 0, "%s", err.msg);
}
