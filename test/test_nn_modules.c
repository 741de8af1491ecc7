/* test/test_nn_modules.c — finite-difference gradients through whole modules
 * (their parameters and inputs), and Dropout's train/eval switch. The PyTorch
 * values of the same modules are in test_nn_parity.c. */
#include "test/test_util.h"
#include "nn/nn.h"

#include <criterion/criterion.h>

static Arena *arena;
static Graph *graph;
static Registry *reg;
static Rng rng;

static void setup(void)
{
    test_open(&arena, &graph);
    bertc_ag_set_training(graph, false);
    reg = bertc_registry_create(arena, "M");
    rng = bertc_rng_seed(17);
}

static void teardown(void) { test_close(arena, graph); }

TestSuite(nn_modules, .init = setup, .fini = teardown);

/* Every parameter of the registry, then the extra inputs. */
static int gather_inputs(Var **out, Var **extra, int n_extra)
{
    int n = 0;
    for (int i = 0; i < reg->n_params; i++)
        out[n++] = reg->params[i].var;
    for (int i = 0; i < n_extra; i++)
        out[n++] = extra[i];
    return n;
}

static void randomise(void)
{
    for (int i = 0; i < reg->n_params; i++)
        test_fill_uniform(reg->params[i].var->value.data, reg->params[i].var->value.numel,
                          &rng, -0.8f, 0.8f);
}

typedef struct AttnCase {
    BertSelfAttention bert;
    OnmtAttention onmt;
    Var *mask;        /* (B,1,1,S) additive */
    ITensor pad;      /* (B,1,1,S) */
} AttnCase;

static Var *f_bert(Graph *g, Var **x, void *u)
{
    AttnCase *c = u;
    return bertc_bert_self_attention_forward(g, &c->bert, x[reg->n_params], c->mask, NULL);
}

Test(nn_modules, bert_self_attention_gradients)
{
    static AttnCase c;
    bertc_bert_self_attention_init(&c.bert, reg, 6, 2, 0.1f);
    randomise();
    int64_t xs[3] = {2, 4, 6}, ms[4] = {2, 1, 1, 4};
    Var *x = test_param(arena, 3, xs, &rng, -1, 1);
    c.mask = bertc_ag_param(arena, 4, ms, "mask");
    c.mask->requires_grad = false;
    c.mask->value.data[7] = -10000.0f;   /* last key of batch 1 is padding */
    Var *in[16];
    int n = gather_inputs(in, &x, 1);
    test_gradcheck("BertSelfAttention", graph, f_bert, in, n, &c);
}

static Var *f_onmt(Graph *g, Var **x, void *u)
{
    AttnCase *c = u;
    Var *h = x[reg->n_params];
    return bertc_onmt_attention_forward(g, &c->onmt, h, h, h, &c->pad, NULL);
}

Test(nn_modules, onmt_attention_gradients)
{
    static AttnCase c;
    static int32_t pad[4] = {0, 0, 0, 1};
    bertc_onmt_attention_init(&c.onmt, reg, "self_attn", 6, 3, 0.1f);
    randomise();
    int64_t xs[3] = {1, 4, 6}, ps[4] = {1, 1, 1, 4};
    Var *x = test_param(arena, 3, xs, &rng, -1, 1);
    c.pad = bertc_itensor_view(pad, 4, ps);
    Var *in[16];
    int n = gather_inputs(in, &x, 1);
    test_gradcheck("OnmtAttention", graph, f_onmt, in, n, &c);
}

typedef struct Stack {
    Linear lin;
    LayerNorm ln;
    Conv1d conv;
} Stack;

/* conv1d over (B, Cin, L), then LayerNorm over L, then Linear L -> 3 */
static Var *f_stack(Graph *g, Var **x, void *u)
{
    Stack *s = u;
    Var *h = bertc_conv1d_forward(g, &s->conv, x[reg->n_params]);
    return bertc_linear_forward(g, &s->lin, bertc_ag_gelu(g, bertc_layernorm_forward(g, &s->ln, h)));
}

Test(nn_modules, conv_layernorm_linear_gradients)
{
    static Stack s;
    bertc_conv1d_init(&s.conv, reg, "conv", 3, 4, 3);
    bertc_layernorm_init(&s.ln, reg, "ln", 5, 1e-5f);
    bertc_linear_init(&s.lin, reg, "lin", 5, 3, true);
    randomise();
    int64_t xs[3] = {2, 3, 5};
    Var *x = test_param(arena, 3, xs, &rng, -1, 1);
    Var *in[16];
    int n = gather_inputs(in, &x, 1);
    test_gradcheck("Conv1d+LayerNorm+Linear", graph, f_stack, in, n, &s);
}

Test(nn_modules, dropout_follows_train_eval_mode)
{
    Dropout d;
    bertc_dropout_init(&d, reg, "dropout", 0.5f);
    int64_t xs[1] = {1000};
    Var *x = test_param(arena, 1, xs, &rng, 1, 2);
    Var *eval = bertc_dropout_forward(graph, &d, x);
    for (int i = 0; i < 1000; i++)
        cr_assert_eq(eval->value.data[i], x->value.data[i], "eval changed element %d", i);
    bertc_ag_set_training(graph, true);
    Var *train = bertc_dropout_forward(graph, &d, x);
    int zeros = 0;
    for (int i = 0; i < 1000; i++)
        zeros += train->value.data[i] == 0.0f;
    cr_assert(zeros > 400 && zeros < 600, "p = 0.5 zeroed %d of 1000", zeros);
}
