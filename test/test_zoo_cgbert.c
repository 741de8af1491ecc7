/* test/test_zoo_cgbert.c — CGBERT and QACGBERT (SPEC §6.3, §6.4) beyond the
 * parity fixtures: wrong inputs are errors naming the tensor and the limit,
 * every output of the SPEC is there with its shape, the original
 * repository's parameter names load, and the module tree. */
#include "test/test_util.h"
#include "zoo/zoo.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define CG_CASE "test/data/zoo/cgbert_gate/"
#define QA_CASE "test/data/zoo/qacgbert_gate/"

static Arena *arena;
static Graph *graph;
static Model model;
static Batch batch;
static ITensor ids, mask, types, context_ids, labels;

/* The cgbert_gate config (V = 120, max_position_embeddings 40,
 * context_vocab_size 8, 3 labels) and a valid (2, 8) batch with padding that
 * each test then breaks in one way. */
static void setup(void)
{
    test_open(&arena, &graph);
    bertc_ag_set_training(graph, false);
    test_model_build(&model, arena, CG_CASE "config.json", NULL);
    int64_t bs[2] = {2, 8}, b1[2] = {2, 1}, b[1] = {2};
    ids = bertc_itensor_new(arena, 2, bs);
    mask = bertc_itensor_new(arena, 2, bs);
    types = bertc_itensor_new(arena, 2, bs);
    context_ids = bertc_itensor_new(arena, 2, b1);
    labels = bertc_itensor_new(arena, 1, b);
    for (int i = 0; i < 16; i++) {
        ids.data[i] = 5 + i;
        mask.data[i] = i < 13;              /* row 1 has 3 padding tokens */
    }
    context_ids.data[0] = 7;
    labels.data[1] = 2;
    bertc_batch_init(&batch, "inputs.safetensors");
    bertc_batch_put_ids(&batch, "input_ids", ids);
    bertc_batch_put_ids(&batch, "attention_mask", mask);
    bertc_batch_put_ids(&batch, "token_type_ids", types);
    bertc_batch_put_ids(&batch, "context_ids", context_ids);
    bertc_batch_put_ids(&batch, "labels", labels);
}

static void teardown(void) { test_close(arena, graph); }

TestSuite(zoo_cgbert, .init = setup, .fini = teardown);

static void expect_error(const char *a, const char *b, const char *c)
{
    test_forward_fails(&model, graph, &batch, a, b, c);
}

/* ---- wrong inputs ------------------------------------------------------ */

Test(zoo_cgbert, missing_context_ids)
{
    batch.n = 0;
    bertc_batch_put_ids(&batch, "input_ids", ids);
    bertc_batch_put_ids(&batch, "attention_mask", mask);
    expect_error("missing input tensor", "'context_ids'", "inputs.safetensors");
}

Test(zoo_cgbert, missing_input_ids)
{
    batch.n = 0;
    bertc_batch_put_ids(&batch, "context_ids", context_ids);
    expect_error("missing input tensor", "'input_ids'", NULL);
}

Test(zoo_cgbert, float_context_ids_are_rejected)
{
    int64_t b1[2] = {2, 1};
    bertc_batch_put_f32(&batch, "context_ids", bertc_tensor_new(arena, 2, b1));
    expect_error("'context_ids'", "integers", NULL);
}

Test(zoo_cgbert, context_ids_must_be_b_by_1)
{
    int64_t b[1] = {2};
    bertc_batch_put_ids(&batch, "context_ids", bertc_itensor_new(arena, 1, b));
    expect_error("'context_ids'", "[2, 1]", "[2]");
}

Test(zoo_cgbert, context_id_outside_context_vocab)
{
    context_ids.data[1] = 8;
    expect_error("'context_ids'[1, 0] = 8", "context_vocab_size 8", NULL);
}

Test(zoo_cgbert, negative_context_id)
{
    context_ids.data[0] = -1;
    expect_error("'context_ids'[0, 0] = -1", "below 0", NULL);
}

Test(zoo_cgbert, sequence_longer_than_positions)
{
    int64_t bs[2] = {2, 41};
    bertc_batch_put_ids(&batch, "input_ids", bertc_itensor_new(arena, 2, bs));
    expect_error("length 41", "max_position_embeddings 40", "'input_ids'");
}

Test(zoo_cgbert, id_outside_vocabulary)
{
    ids.data[9] = 120;
    expect_error("'input_ids'[1, 1] = 120", "vocab_size 120", NULL);
}

Test(zoo_cgbert, label_outside_classes)
{
    labels.data[0] = 3;
    expect_error("'labels'[0] = 3", "num_labels 3", NULL);
}

Test(zoo_cgbert, mask_outside_0_1)
{
    mask.data[4] = 2;
    expect_error("'attention_mask'[0, 4] = 2", "neither 0 nor 1", NULL);
}

/* The same check through `bertc run`: the fixture's inputs with one context
 * id out of range, written to /tmp; the message names the file. */
Test(zoo_cgbert, bertc_run_names_the_inputs_file)
{
    BertcError err;
    SafeTensors *st;
    cr_assert_eq(bertc_st_open_file(NULL, CG_CASE "inputs.safetensors", &st, &err), 0, "%s", err.msg);
    StEntry e[8];
    ITensor t[8];
    size_t n = st->n_tensors;
    cr_assert(n <= 8);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(bertc_st_load_itensor(st, st->tensors[i].name, arena, &t[i], &err), 0, "%s",
                     err.msg);
        if (strcmp(st->tensors[i].name, "context_ids") == 0)
            t[i].data[t[i].numel - 1] = 9;
        e[i] = bertc_st_entry_itensor(st->tensors[i].name, &t[i]);
    }
    char inputs[128], output[128];
    snprintf(inputs, sizeof inputs, "/tmp/bertc_cg_inputs_%d.safetensors", (int)getpid());
    snprintf(output, sizeof output, "/tmp/bertc_cg_out_%d.safetensors", (int)getpid());
    cr_assert_eq(bertc_st_write_file(inputs, e, n, NULL, 0, &err), 0, "%s", err.msg);
    bertc_st_close(st);
    RunArgs args = {CG_CASE "config.json", CG_CASE "weights.safetensors", inputs, output, true,
                    false};
    int rc = bertc_zoo_run(&args, &err);
    remove(inputs);
    cr_assert_neq(rc, 0, "bertc run accepted context id 9");
    cr_expect(strstr(err.msg, inputs) && strstr(err.msg, "'context_ids'") &&
              strstr(err.msg, "= 9") && strstr(err.msg, "context_vocab_size 8"),
              "message: %s", err.msg);
}

/* ---- outputs ----------------------------------------------------------- */

static void expect_shape(const Outputs *out, const char *name, int ndim, const int64_t *shape)
{
    Var *v = bertc_outputs_get(out, name);
    cr_assert(v, "no output '%s'", name);
    char got[SHAPE_STR_LEN];
    bertc_shape_str(got, sizeof got, v->value.ndim, v->value.shape);
    cr_expect(bertc_shape_equal(v->value.ndim, v->value.shape, ndim, shape), "'%s' has shape %s",
              name, got);
}

/* SPEC §6.4's outputs (§6.3's and the quasi-attention's), B = 2, S = 8,
 * H = 32, nh = 4, L = 2. */
Test(zoo_cgbert, qacgbert_outputs_have_spec_names_and_shapes)
{
    Model qa;
    test_model_build(&qa, arena, QA_CASE "config.json", NULL);
    Outputs out;
    test_forward_ok(&qa, graph, &batch, &out);
    int64_t logits[2] = {2, 3}, pooled[2] = {2, 32}, hidden[3] = {2, 8, 32};
    int64_t probs[4] = {2, 4, 8, 8}, gate[4] = {2, 4, 8, 1}, scalar[1] = {0};
    expect_shape(&out, "logits", 2, logits);
    expect_shape(&out, "pooled_output", 2, pooled);
    expect_shape(&out, "loss", 0, scalar);
    char name[64];
    for (int l = 0; l <= 2; l++) {
        snprintf(name, sizeof name, "hidden_states.%d", l);
        expect_shape(&out, name, 3, hidden);
    }
    const char *per_layer[] = {"attention_probs", "new_attention_probs", "quasi_attention_prob",
                               "quasi_attention_scores", "lambda_q", "lambda_k", "lambda_context"};
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < 7; i++) {
            snprintf(name, sizeof name, "layers.%d.%s", l, per_layer[i]);
            expect_shape(&out, name, 4, i < 4 ? probs : gate);
        }
    /* and the named intermediates (test_zoo_cgbert_views checks their shapes):
     * pooler_weights; deep_context, context_q, context_k per layer */
    cr_expect_eq(out.n, 3 + 4 + 2 * 10, "%d outputs", out.n);
}

/* CGBERT has no quasi-attention outputs. */
Test(zoo_cgbert, cgbert_outputs_have_no_quasi_attention)
{
    Outputs out;
    test_forward_ok(&model, graph, &batch, &out);
    cr_expect(bertc_outputs_get(&out, "layers.1.lambda_q") && bertc_outputs_get(&out, "layers.1.lambda_k"));
    cr_expect(!bertc_outputs_get(&out, "layers.0.quasi_attention_prob"));
    cr_expect(!bertc_outputs_get(&out, "layers.0.quasi_attention_scores"));
    cr_expect(bertc_outputs_get(&out, "layers.1.q_hat") && bertc_outputs_get(&out, "layers.1.k_hat"));
    /* hidden_states 3, logits, pooled_output, pooler_weights, loss; 8 maps x L = 2 */
    cr_expect_eq(out.n, 3 + 4 + 2 * 8, "%d outputs", out.n);
}

/* ---- original-repository names ----------------------------------------- */

/* name with the first of SPEC §6.3's module names replaced by the original's. */
static const char *original_name(Arena *a, const char *name)
{
    static const char *const table[][2] = {
        {".self.Wq.", ".self.query."}, {".self.Wk.", ".self.key."},
        {".self.Wv.", ".self.value."}, {".self.Wcq.", ".self.context_for_q."},
        {".self.Wck.", ".self.context_for_k."},
        {".self.lambda_Qc.", ".self.lambda_q_context_layer."},
        {".self.lambda_Q.", ".self.lambda_q_query_layer."},
        {".self.lambda_Kc.", ".self.lambda_k_context_layer."},
        {".self.lambda_K.", ".self.lambda_k_key_layer."},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        const char *at = strstr(name, table[i][0]);
        if (!at)
            continue;
        size_t len = strlen(name) + strlen(table[i][1]) + 1;
        char *out = bertc_arena_alloc(a, len);
        snprintf(out, len, "%.*s%s%s", (int)(at - name), name, table[i][1],
                 at + strlen(table[i][0]));
        return out;
    }
    return name;
}

Test(zoo_cgbert, original_repository_names_load)
{
    BertcError err;
    SafeTensors *st;
    cr_assert_eq(bertc_st_open_file(NULL, QA_CASE "weights.safetensors", &st, &err), 0, "%s",
                 err.msg);
    size_t n = st->n_tensors, renamed = 0;
    StEntry *e = bertc_arena_alloc(arena, sizeof(StEntry) * n);
    Tensor *t = bertc_arena_alloc(arena, sizeof(Tensor) * n);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(bertc_st_load_tensor(st, st->tensors[i].name, arena, &t[i], &err), 0, "%s",
                     err.msg);
        const char *name = original_name(arena, st->tensors[i].name);
        renamed += name != st->tensors[i].name;
        e[i] = bertc_st_entry_tensor(name, &t[i]);
    }
    /* L = 2 layers x 9 modules x {weight, bias} */
    cr_assert_eq(renamed, 2 * 9 * 2, "renamed %zu keys", renamed);
    char path[128];
    snprintf(path, sizeof path, "/tmp/bertc_cg_original_%d.safetensors", (int)getpid());
    cr_assert_eq(bertc_st_write_file(path, e, n, NULL, 0, &err), 0, "%s", err.msg);
    Model qa;
    test_model_build(&qa, arena, QA_CASE "config.json", NULL);
    int rc = bertc_model_load(&qa, path, false, &err);
    remove(path);
    cr_assert_eq(rc, 0, "%s", err.msg);
    for (int i = 0; i < qa.reg->n_params; i++) {
        const StTensorInfo *info = bertc_st_find(st, qa.reg->params[i].name);
        cr_assert(info, "fixture lacks %s", qa.reg->params[i].name);
        const Tensor *v = &qa.reg->params[i].var->value;
        float *want = bertc_arena_alloc(arena, sizeof(float) * (size_t)v->numel);
        cr_assert_eq(bertc_st_read_f32(st, info, want, (size_t)v->numel, &err), 0, "%s", err.msg);
        cr_expect_eq(memcmp(want, v->data, sizeof(float) * (size_t)v->numel), 0,
                     "%s differs after loading the original names", qa.reg->params[i].name);
    }
    bertc_st_close(st);
}

/* ---- the module tree ---------------------------------------------------- */

Test(zoo_cgbert, summary_tree_matches_the_pytorch_repr)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    bertc_registry_print(model.reg, f);
    fclose(f);
    const char *lines[] = {
        "CGBertForSequenceClassification(  # 29,348 params\n",
        "  (bert): ContextBertModel(",
        "      (word_embeddings): Embedding(120, 32)  # 3,840 params\n",
        "      (LayerNorm): BERTLayerNorm()  # 64 params\n",
        "    (encoder): ContextBERTEncoder(",
        "            (self): ContextBERTSelfAttention(",
        "              (Wcq): Linear(in_features=8, out_features=8, bias=True)  # 72 params\n",
        "              (lambda_Qc): Linear(in_features=8, out_features=1, bias=False)  # 8",
        "      (context_layer): ModuleList(",
        "        (1): Linear(in_features=64, out_features=32, bias=True)",
        "      (attention_gate): Sequential(",
        "        (3): Linear(in_features=32, out_features=1, bias=True)  # 33 params\n",
        "    (context_embeddings): Embedding(8, 32)  # 256 params\n",
        "  (classifier): Linear(in_features=32, out_features=3, bias=True)  # 99 params\n",
        "Total parameters: 29,348\n"};
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        cr_expect(strstr(text, lines[i]), "summary lacks \"%s\":\n%s", lines[i], text);
    free(text);
}
