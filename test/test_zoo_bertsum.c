/* test/test_zoo_bertsum.c — the Summarizer (SPEC §6.5) beyond parity: each
 * wrong input is an error naming the tensor and the limit, padded sentences
 * are invisible to the loss, the positional table equals PyTorch's, and the
 * module tree prints like the PyTorch model. Parity itself is
 * test/test_zoo_parity.c on test/data/zoo/bertsum_*. */
#include "test/test_util.h"
#include "zoo/zoo.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* H 16, V 90, max_position_embeddings 64, pe_max_len 64, 1 inter layer. */
#define CASE "test/data/zoo/bertsum_b/"
#define B 2
#define S 12
#define N 3

static Arena *arena;
static Graph *graph;
static Model model;
static Batch batch;
static ITensor src, segs, clss, mask, mask_cls, labels;

static ITensor ids(int64_t rows, int64_t cols)
{
    int64_t shape[2] = {rows, cols};
    return bertc_itensor_new(arena, 2, shape);
}

/* A valid batch that each test breaks in one way: row 0 has three sentences
 * of 4 tokens, row 1 two sentences and 4 padding tokens. */
static void setup(void)
{
    test_open(&arena, &graph);
    bertc_ag_set_training(graph, false);
    test_model_build(&model, arena, CASE "config.json", NULL);
    test_model_load(&model, CASE "weights.safetensors");
    src = ids(B, S), segs = ids(B, S), mask = ids(B, S);
    clss = ids(B, N), mask_cls = ids(B, N), labels = ids(B, N);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < S; t++) {
            bool real = b == 0 || t < 8;
            src.data[b * S + t] = real ? (t % 4 == 0 ? 1 : 5 + t) : 0;
            segs.data[b * S + t] = real ? (t / 4) % 2 : 0;
            mask.data[b * S + t] = real;
        }
    for (int b = 0; b < B; b++)
        for (int n = 0; n < N; n++) {
            bool real = b == 0 || n < 2;
            clss.data[b * N + n] = real ? 4 * n : 0;
            mask_cls.data[b * N + n] = real;
            labels.data[b * N + n] = real && n != 1;
        }
    bertc_batch_init(&batch, "inputs.safetensors");
    bertc_batch_put_ids(&batch, "src", src);
    bertc_batch_put_ids(&batch, "segs", segs);
    bertc_batch_put_ids(&batch, "clss", clss);
    bertc_batch_put_ids(&batch, "mask", mask);
    bertc_batch_put_ids(&batch, "mask_cls", mask_cls);
    bertc_batch_put_ids(&batch, "labels", labels);
}

static void teardown(void) { test_close(arena, graph); }

TestSuite(zoo_bertsum, .init = setup, .fini = teardown);

static void expect_error(const char *a, const char *b, const char *c)
{
    test_forward_fails(&model, graph, &batch, a, b, c);
}

static float run_loss(void)
{
    Outputs out;
    test_forward_ok(&model, graph, &batch, &out);
    Var *loss = bertc_outputs_get(&out, "loss");
    cr_assert(loss, "no loss output");
    return loss->value.data[0];
}

Test(zoo_bertsum, valid_batch_gives_every_output)
{
    Outputs out;
    test_forward_ok(&model, graph, &batch, &out);
    Var *top = bertc_outputs_get(&out, "top_vec"), *sents = bertc_outputs_get(&out, "sents_vec");
    Var *scores = bertc_outputs_get(&out, "sent_scores");
    cr_assert(top && sents && scores && bertc_outputs_get(&out, "loss"), "an output is missing");
    cr_expect_eq(top->value.shape[1], S);
    cr_expect_eq(sents->value.shape[1], N);
    cr_expect_eq(scores->value.ndim, 2);
    cr_expect_eq(scores->value.data[B * N - 1], 0.0f, "a padded sentence scores exactly 0");
}

Test(zoo_bertsum, no_labels_no_loss)
{
    batch.n--;   /* labels were put last */
    Outputs out;
    test_forward_ok(&model, graph, &batch, &out);
    cr_expect(bertc_outputs_get(&out, "sent_scores") && !bertc_outputs_get(&out, "loss"));
}

/* loss = Σ mask_cls · BCE: a label on a padded sentence changes nothing. */
Test(zoo_bertsum, label_on_padded_sentence_is_ignored)
{
    float before = run_loss();
    bertc_ag_graph_reset(graph);
    labels.data[B * N - 1] = 1;
    float after = run_loss();
    cr_expect_eq(before, after, "loss %.9g became %.9g", (double)before, (double)after);
}

Test(zoo_bertsum, missing_input_names_it)
{
    batch.n = 0;
    bertc_batch_put_ids(&batch, "src", src);
    bertc_batch_put_ids(&batch, "segs", segs);
    bertc_batch_put_ids(&batch, "mask", mask);
    bertc_batch_put_ids(&batch, "mask_cls", mask_cls);
    expect_error("missing input tensor", "'clss'", "inputs.safetensors");
}

Test(zoo_bertsum, float_src_is_rejected)
{
    int64_t bs[2] = {B, S};
    bertc_batch_put_f32(&batch, "src", bertc_tensor_new(arena, 2, bs));
    expect_error("'src'", "integers", NULL);
}

Test(zoo_bertsum, float_labels_are_rejected)
{
    int64_t bn[2] = {B, N};
    bertc_batch_put_f32(&batch, "labels", bertc_tensor_new(arena, 2, bn));
    expect_error("'labels'", "integers", NULL);
}

Test(zoo_bertsum, sequence_longer_than_positions)
{
    bertc_batch_put_ids(&batch, "src", ids(B, 65));
    expect_error("'src'", "length 65", "max_position_embeddings 64");
}

Test(zoo_bertsum, src_id_outside_vocabulary)
{
    src.data[S + 3] = 90;
    expect_error("'src'[1, 3] = 90", "vocab_size 90", NULL);
}

Test(zoo_bertsum, segment_outside_type_vocab)
{
    segs.data[5] = 2;
    expect_error("'segs'[0, 5] = 2", "type_vocab_size 2", NULL);
}

Test(zoo_bertsum, mask_shape_must_match_src)
{
    bertc_batch_put_ids(&batch, "mask", ids(B, S - 1));
    expect_error("'mask'", "[2, 12]", "[2, 11]");
}

Test(zoo_bertsum, clss_position_past_the_sequence)
{
    clss.data[2] = S;
    expect_error("'clss'[0, 2] = 12", "sequence length S 12", NULL);
}

Test(zoo_bertsum, clss_position_negative)
{
    clss.data[4] = -1;
    expect_error("'clss'[1, 1] = -1", "below 0", NULL);
}

Test(zoo_bertsum, clss_batch_must_match_src)
{
    bertc_batch_put_ids(&batch, "clss", ids(B + 1, N));
    expect_error("'clss'", "[2, *]", "[3, 3]");
}

Test(zoo_bertsum, more_sentences_than_pe_max_len)
{
    bertc_batch_put_ids(&batch, "clss", ids(B, 65));
    expect_error("'clss'", "N = 65", "pe_max_len 64");
}

Test(zoo_bertsum, mask_cls_shape_must_match_clss)
{
    bertc_batch_put_ids(&batch, "mask_cls", ids(B, N + 1));
    expect_error("'mask_cls'", "[2, 3]", "[2, 4]");
}

Test(zoo_bertsum, mask_cls_not_binary)
{
    mask_cls.data[1] = 2;
    expect_error("'mask_cls'[0, 1] = 2", "neither 0 nor 1", NULL);
}

Test(zoo_bertsum, labels_not_binary)
{
    labels.data[3] = 2;
    expect_error("'labels'[1, 0] = 2", "neither 0 nor 1", NULL);
}

Test(zoo_bertsum, labels_shape_must_match_clss)
{
    bertc_batch_put_ids(&batch, "labels", ids(B, N - 1));
    expect_error("'labels'", "[2, 3]", "[2, 2]");
}

/* Without a weights file the buffer holds the sinusoids computed here in
 * float32; PyTorch's (in the fixture) agree to a few float32 ulps. */
Test(zoo_bertsum, positional_table_matches_pytorch)
{
    BertcError err;
    Model fresh;
    cr_assert_eq(bertc_model_build(&fresh, arena, &model.cfg, &err), 0, "%s", err.msg);
    int i = bertc_registry_find(fresh.reg, "encoder.pos_emb.pe");
    cr_assert(i >= 0 && fresh.reg->params[i].buffer, "encoder.pos_emb.pe is not a buffer");
    const Tensor *ours = &fresh.reg->params[i].var->value;
    const Tensor *ref = &model.reg->params[bertc_registry_find(model.reg, "encoder.pos_emb.pe")].var->value;
    cr_assert_eq(ours->numel, 64 * 16);
    for (int64_t k = 0; k < ours->numel; k++)
        cr_assert(fabsf(ours->data[k] - ref->data[k]) <= 1e-5f,
                  "pe[0, %lld, %lld] = %.9g, PyTorch %.9g", (long long)(k / 16),
                  (long long)(k % 16), (double)ours->data[k], (double)ref->data[k]);
}

Test(zoo_bertsum, summary_tree_matches_pytorch_repr)
{
    char buf[1 << 15] = "";
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    bertc_registry_print(model.reg, f);
    fclose(f);
    static const char *const lines[] = {
        "Summarizer(",
        "  (bert): Bert(",
        "    (model): BertModel(",
        "        (word_embeddings): Embedding(90, 16, padding_idx=0)",
        "  (encoder): TransformerInterEncoder(",
        "    (pos_emb): PositionalEncoding(",
        "    (transformer_inter): ModuleList(",
        "      (0): TransformerEncoderLayer(",
        "        (self_attn): MultiHeadedAttention(",
        "          (linear_keys): Linear(in_features=16, out_features=16, bias=True)",
        "          (softmax): Softmax(dim=-1)",
        "        (feed_forward): PositionwiseFeedForward(",
        "          (w_1): Linear(in_features=16, out_features=24, bias=True)",
        "          (layer_norm): LayerNorm((16,), eps=1e-06, elementwise_affine=True)",
        "          (dropout_2): Dropout(p=0.1, inplace=False)",
        "    (wo): Linear(in_features=16, out_features=1, bias=True)",
        "    (sigmoid): Sigmoid()",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        cr_expect(strstr(buf, lines[i]), "the tree lacks \"%s\":\n%s", lines[i], buf);
}
