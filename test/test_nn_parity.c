/* test/test_nn_parity.c — nn modules, losses and optimizers against PyTorch
 * (fixtures written by tools/make_nn_fixtures.py with Debian's python3-torch).
 * Tolerance per tensor, as SPEC §6: max|x - ref| <= 1e-4 max|ref| + 1e-6. */
#include "test/test_util.h"
#include "nn/nn.h"
#include "nn/state.h"

#include <criterion/criterion.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static Arena *arena;
static Graph *graph;
static SafeTensors *fixture;

static void open_fixture(const char *file)
{
    char path[256];
    BertcError err;
    snprintf(path, sizeof path, "test/data/nn/%s", file);
    cr_assert_eq(bertc_st_open_file(NULL, path, &fixture, &err), 0, "%s", err.msg);
}

static void setup(void)
{
    test_open(&arena, &graph);
    bertc_ag_set_training(graph, false);
    fixture = NULL;
}

static void teardown(void)
{
    if (fixture)
        bertc_st_close(fixture);
    test_close(arena, graph);
}

TestSuite(nn_parity, .init = setup, .fini = teardown);

static Tensor load(const char *name)
{
    Tensor t;
    BertcError err;
    cr_assert_eq(bertc_st_load_tensor(fixture, name, arena, &t, &err), 0, "%s", err.msg);
    return t;
}

static ITensor load_ids(const char *name)
{
    ITensor t;
    BertcError err;
    cr_assert_eq(bertc_st_load_itensor(fixture, name, arena, &t, &err), 0, "%s", err.msg);
    return t;
}

/* The SPEC §6 tolerance, per tensor. */
static void expect_close(const char *what, const float *got, const Tensor *ref)
{
    double max_ref = 0, max_err = 0;
    int64_t worst = 0;
    for (int64_t i = 0; i < ref->numel; i++) {
        max_ref = fmax(max_ref, fabs(ref->data[i]));
        double e = fabs((double)got[i] - ref->data[i]);
        if (e > max_err || isnan(e)) {
            max_err = isnan(e) ? INFINITY : e;
            worst = i;
        }
    }
    cr_assert(max_err <= 1e-4 * max_ref + 1e-6,
              "%s: max error %.3g at index %lld (got %.8g, PyTorch %.8g), allowed %.3g", what,
              max_err, (long long)worst, (double)got[worst], (double)ref->data[worst],
              1e-4 * max_ref + 1e-6);
}

static Var *input_var(const char *name, bool requires_grad)
{
    Var *v = bertc_ag_constant(graph, load(name));
    v->requires_grad = requires_grad;
    return v;
}

/* Load a module's parameters by name: the fixture holds other cases too. */
static void load_params(Registry *r)
{
    BertcError err;
    LoadOptions opts = {.quiet_unused = true};
    cr_assert_eq(bertc_registry_load(r, fixture, &opts, &err), 0, "%s", err.msg);
}

/* Seed the backward with the fixture's projection, then compare the output
 * and the gradients of the inputs and of every parameter of r. Fixture keys:
 * "<case>.out", "<case>.proj", "<case>.grad.<input or parameter>". */
static void check_case(const char *c, Registry *r, Var *out, Var **inputs,
                       const char *const *input_names, int n_inputs)
{
    char key[256];
    snprintf(key, sizeof key, "%s.out", c);
    Tensor ref = load(key);
    cr_assert(bertc_shape_equal(out->value.ndim, out->value.shape, ref.ndim, ref.shape),
              "%s: output shape differs from PyTorch's", key);
    expect_close(key, out->value.data, &ref);
    snprintf(key, sizeof key, "%s.proj", c);
    bertc_ag_backward_seeded(graph, out, load(key).data);
    for (int i = 0; i < n_inputs; i++) {
        snprintf(key, sizeof key, "%s.grad.%s", c, input_names[i]);
        Tensor g = load(key);
        expect_close(key, inputs[i]->grad, &g);
    }
    size_t skip = strlen(c) + 1; /* "<case>." */
    for (int i = 0; i < r->n_params; i++) {
        snprintf(key, sizeof key, "%s.grad.%s", c, r->params[i].name + skip);
        Tensor g = load(key);
        expect_close(key, r->params[i].var->grad, &g);
    }
}

Test(nn_parity, losses)
{
    open_fixture("losses.safetensors");
    Var *z = input_var("ce.logits", true);
    ITensor target = load_ids("ce.target");
    Var *loss = bertc_ag_cross_entropy(graph, z, &target, -100);
    Tensor ref = load("ce.loss");
    expect_close("ce.loss", loss->value.data, &ref);
    bertc_ag_backward(graph, loss);
    ref = load("ce.grad");
    expect_close("ce.grad", z->grad, &ref);

    const char *red[2] = {"mean", "sum"};
    for (int k = 0; k < 2; k++) {
        bertc_ag_graph_reset(graph);
        Var *p = input_var("bce.p", true);
        Tensor y = load("bce.y");
        loss = bertc_ag_bce(graph, p, &y, k == 1);
        char key[64];
        snprintf(key, sizeof key, "bce.loss_%s", red[k]);
        ref = load(key);
        expect_close(key, loss->value.data, &ref);
        bertc_ag_backward(graph, loss);
        snprintf(key, sizeof key, "bce.grad_%s", red[k]);
        ref = load(key);
        expect_close(key, p->grad, &ref);
    }

    bertc_ag_graph_reset(graph);
    z = input_var("bcel.z", true);
    Tensor yz = load("bcel.y");
    loss = bertc_ag_bce_with_logits(graph, z, &yz);
    ref = load("bcel.loss");
    expect_close("bcel.loss", loss->value.data, &ref);
    bertc_ag_backward(graph, loss);
    ref = load("bcel.grad");
    expect_close("bcel.grad", z->grad, &ref);

    bertc_ag_graph_reset(graph);
    Var *a = input_var("mse.a", true);
    Tensor t = load("mse.t");
    loss = bertc_ag_mse(graph, a, &t);
    ref = load("mse.loss");
    expect_close("mse.loss", loss->value.data, &ref);
    bertc_ag_backward(graph, loss);
    ref = load("mse.grad");
    expect_close("mse.grad", a->grad, &ref);
}

static const char *const x_name[1] = {"x"};

Test(nn_parity, layernorm)
{
    open_fixture("modules.safetensors");
    Registry *r = bertc_registry_create(arena, "M");
    LayerNorm ln;
    bertc_layernorm_init(&ln, r, "ln", 8, 1e-5f);
    load_params(r);
    Var *x = input_var("ln.x", true);
    check_case("ln", r, bertc_layernorm_forward(graph, &ln, x), &x, x_name, 1);
}

Test(nn_parity, linear)
{
    open_fixture("modules.safetensors");
    Registry *r = bertc_registry_create(arena, "M");
    Linear lin;
    bertc_linear_init(&lin, r, "linear", 5, 4, true);
    load_params(r);
    Var *x = input_var("linear.x", true);
    check_case("linear", r, bertc_linear_forward(graph, &lin, x), &x, x_name, 1);
}

Test(nn_parity, embedding_padding_idx)
{
    open_fixture("modules.safetensors");
    Registry *r = bertc_registry_create(arena, "M");
    Embedding emb;
    bertc_embedding_init(&emb, r, "emb", 6, 3, 0);
    load_params(r);
    ITensor ids = load_ids("emb.ids");
    check_case("emb", r, bertc_embedding_forward(graph, &emb, &ids), NULL, NULL, 0);
}

Test(nn_parity, conv1d)
{
    open_fixture("modules.safetensors");
    Registry *r = bertc_registry_create(arena, "M");
    Conv1d conv;
    bertc_conv1d_init(&conv, r, "conv", 4, 5, 3);
    load_params(r);
    Var *x = input_var("conv.x", true);
    check_case("conv", r, bertc_conv1d_forward(graph, &conv, x), &x, x_name, 1);
}

/* (1 - mask)[:, None, None, :] * finfo(float32).min, as HF BertModel. */
static Var *additive_mask(const ITensor *mask)
{
    int64_t B = mask->shape[0], S = mask->shape[1], shape[4] = {B, 1, 1, S};
    Var *m = bertc_ag_tensor(graph, 4, shape, false);
    for (int64_t i = 0; i < B * S; i++)
        m->value.data[i] = mask->data[i] ? 0.0f : -3.4028234663852886e38f;
    return m;
}

Test(nn_parity, bert_self_attention)
{
    open_fixture("modules.safetensors");
    Registry *r = bertc_registry_create(arena, "M");
    BertSelfAttention attn;
    bertc_nn_push(r, "bert_attn", "BertSelfAttention", false);
    bertc_bert_self_attention_init(&attn, r, 8, 2, 0.1f);
    bertc_nn_pop(r);
    load_params(r);
    Var *x = input_var("bert_attn.x", true), *probs;
    ITensor mask = load_ids("bert_attn.mask");
    Var *ctx = bertc_bert_self_attention_forward(graph, &attn, x, additive_mask(&mask), &probs);
    Tensor ref = load("bert_attn.probs");
    expect_close("bert_attn.probs", probs->value.data, &ref);
    check_case("bert_attn", r, ctx, &x, x_name, 1);
}

Test(nn_parity, onmt_attention)
{
    open_fixture("modules.safetensors");
    Registry *r = bertc_registry_create(arena, "M");
    OnmtAttention attn;
    bertc_onmt_attention_init(&attn, r, "onmt_attn", 8, 2, 0.1f);
    load_params(r);
    Var *x = input_var("onmt_attn.x", true);
    ITensor pad = load_ids("onmt_attn.pad");
    int64_t shape[4] = {pad.shape[0], 1, 1, pad.shape[1]};
    ITensor key_pad = bertc_itensor_view(pad.data, 4, shape);
    Var *out = bertc_onmt_attention_forward(graph, &attn, x, x, x, &key_pad, NULL);
    check_case("onmt_attn", r, out, &x, x_name, 1);
}

/* The fixture's model: fc2(gelu(fc1(x))), Linear(4, 8) and Linear(8, 3). */
typedef struct Mlp {
    Linear fc1, fc2;
} Mlp;

static Registry *mlp_build(Mlp *m)
{
    Registry *r = bertc_registry_create(arena, "Mlp");
    bertc_linear_init(&m->fc1, r, "fc1", 4, 8, true);
    bertc_linear_init(&m->fc2, r, "fc2", 8, 3, true);
    return r;
}

static Var *mlp_loss(const Mlp *m, Tensor x, const ITensor *y)
{
    Var *h = bertc_ag_gelu(graph, bertc_linear_forward(graph, &m->fc1, bertc_ag_constant(graph, x)));
    return bertc_ag_cross_entropy(graph, bertc_linear_forward(graph, &m->fc2, h), y, -100);
}

/* Copy "init.<name>" of the fixture into the parameters. */
static void load_prefixed(Registry *r, const char *prefix)
{
    for (int i = 0; i < r->n_params; i++) {
        char key[128];
        snprintf(key, sizeof key, "%s%s", prefix, r->params[i].name);
        Tensor t = load(key);
        memcpy(r->params[i].var->value.data, t.data, sizeof(float) * (size_t)t.numel);
    }
}

static void run_optimizer_case(const char *name, OptimizerConfig cfg, bool clip_and_schedule)
{
    Mlp m;
    Registry *r = mlp_build(&m);
    load_prefixed(r, "init.");
    Tensor x = load("x");
    ITensor y = load_ids("y");
    Optimizer opt;
    bertc_optimizer_init(&opt, r, cfg);
    Schedule sched = {SCHED_LINEAR, cfg.lr, 3, 10};
    float losses[10];
    for (int step = 0; step < 10; step++) {
        bertc_ag_graph_reset(graph);
        bertc_registry_zero_grad(r);
        Var *loss = mlp_loss(&m, x, &y);
        bertc_ag_backward(graph, loss);
        losses[step] = loss->value.data[0];
        double lr = cfg.lr;
        if (clip_and_schedule) {
            bertc_clip_grad_norm(r, 0.5f);
            lr = bertc_schedule_lr(&sched, step);
        }
        bertc_optimizer_step(&opt, lr);
    }
    char key[128];
    snprintf(key, sizeof key, "%s.losses", name);
    Tensor ref = load(key);
    expect_close(key, losses, &ref);
    for (int i = 0; i < r->n_params; i++) {
        snprintf(key, sizeof key, "%s.%s", name, r->params[i].name);
        ref = load(key);
        expect_close(key, r->params[i].var->value.data, &ref);
    }
}

Test(nn_parity, optimizers_ten_steps)
{
    open_fixture("optim.safetensors");
    OptimizerConfig adamw = bertc_optimizer_defaults(OPT_ADAMW, 1e-2);
    run_optimizer_case("adamw", adamw, false);
    OptimizerConfig adam = bertc_optimizer_defaults(OPT_ADAM, 1e-2);
    adam.weight_decay = 0.1;
    run_optimizer_case("adam", adam, false);
    OptimizerConfig sgd = bertc_optimizer_defaults(OPT_SGD, 0.1);
    sgd.momentum = 0.9;
    sgd.weight_decay = 1e-3;
    run_optimizer_case("sgd", sgd, false);
    OptimizerConfig nesterov = bertc_optimizer_defaults(OPT_SGD, 0.1);
    nesterov.momentum = 0.9;
    nesterov.nesterov = true;
    run_optimizer_case("sgd_nesterov", nesterov, false);
    run_optimizer_case("adamw_clip_linear", bertc_optimizer_defaults(OPT_ADAMW, 3e-2), true);
}

/* ---- loading by name, saving, checkpoints -------------------------------- */

static char warned[BERTC_ERROR_LEN];
static int n_warnings;

static void capture_warning(const char *msg, void *user)
{
    (void)user;
    snprintf(warned, sizeof warned, "%s", msg);
    n_warnings++;
}

Test(nn_parity, pytorch_state_dict_loads_by_name)
{
    Mlp m;
    Registry *r = mlp_build(&m);
    BertcError err;
    n_warnings = 0;
    BertcWarnHook old = bertc_set_warn_hook(capture_warning, NULL);
    int rc = bertc_registry_load_file(r, "test/data/nn/state_dict.safetensors", NULL, &err);
    bertc_set_warn_hook(old, NULL);
    cr_assert_eq(rc, 0, "%s", err.msg);
    cr_assert_eq(n_warnings, 0, "unexpected warning: %s", warned);
    open_fixture("optim.safetensors");
    Tensor ref = load("init.fc2.bias");
    expect_close("fc2.bias", m.fc2.bias->value.data, &ref);
}

static void tmp_path(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "/tmp/bertc_test_%d_%s", (int)getpid(), name);
}

Test(nn_parity, save_load_round_trip_gives_identical_outputs)
{
    open_fixture("optim.safetensors");
    Mlp a, b;
    Registry *ra = mlp_build(&a);
    Rng rng = bertc_rng_seed(8);
    bertc_registry_init_weights(ra, &rng, 0.5f);
    char path[128];
    tmp_path(path, sizeof path, "roundtrip.safetensors");
    BertcError err;
    cr_assert_eq(bertc_registry_save_file(ra, path, &err), 0, "%s", err.msg);
    Registry *rb = mlp_build(&b);
    cr_assert_eq(bertc_registry_load_file(rb, path, NULL, &err), 0, "%s", err.msg);
    remove(path);
    Tensor x = load("x");
    ITensor y = load_ids("y");
    float la = mlp_loss(&a, x, &y)->value.data[0], lb = mlp_loss(&b, x, &y)->value.data[0];
    cr_assert_eq(la, lb, "loss after the round trip: %.9g vs %.9g", (double)la, (double)lb);
    for (int i = 0; i < ra->n_params; i++)
        cr_assert_eq(memcmp(ra->params[i].var->value.data, rb->params[i].var->value.data,
                            sizeof(float) * (size_t)ra->params[i].var->value.numel), 0,
                     "%s differs after the round trip", ra->params[i].name);
}

/* A weights file bertc wrote carries the CRC-32 of its data: one flipped
 * byte in a weight is refused when the file is opened, by name. */
Test(nn_parity, flipped_weight_byte_is_refused)
{
    Mlp a;
    Registry *ra = mlp_build(&a);
    Rng rng = bertc_rng_seed(8);
    bertc_registry_init_weights(ra, &rng, 0.5f);
    char path[128];
    tmp_path(path, sizeof path, "flipped.safetensors");
    BertcError err;
    cr_assert_eq(bertc_registry_save_file(ra, path, &err), 0, "%s", err.msg);
    SafeTensors *st;
    cr_assert_eq(bertc_st_open_file(NULL, path, &st, &err), 0, "%s", err.msg);
    cr_expect_not_null(bertc_st_metadata_get(st, ST_CRC32_KEY), "no " ST_CRC32_KEY " in %s", path);
    cr_expect_str_eq(bertc_st_metadata_get(st, "format"), "pt", "the caller's metadata is kept");
    uint64_t at = st->data_start + st->data_length / 2;
    bertc_st_close(st);
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f);
    fseek(f, (long)at, SEEK_SET);
    int c = fgetc(f);
    fseek(f, (long)at, SEEK_SET);
    fputc(c ^ 0x01, f);
    fclose(f);
    Mlp b;
    Registry *rb = mlp_build(&b);
    cr_expect_neq(bertc_registry_load_file(rb, path, NULL, &err), 0, "byte %" PRIu64 " flipped "
                  "and the weights loaded", at);
    cr_expect(strstr(err.msg, path) && strstr(err.msg, "data section checksum mismatch"),
              "\"%s\" does not name the file and the checksum", err.msg);
    remove(path);
}

typedef struct LoadCase {
    Registry *r;
    const char *path;
} LoadCase;

Test(nn_parity, missing_key_shape_mismatch_and_unused_keys)
{
    BertcError err;
    /* a model with an extra parameter the file lacks */
    Mlp m;
    Registry *r = mlp_build(&m);
    Linear extra;
    bertc_linear_init(&extra, r, "classifier", 3, 2, true);
    cr_assert_neq(bertc_registry_load_file(r, "test/data/nn/state_dict.safetensors", NULL, &err), 0);
    cr_assert(strstr(err.msg, "missing parameter 'classifier.weight'") &&
              strstr(err.msg, "[2, 3]") && strstr(err.msg, "state_dict.safetensors"),
              "message: %s", err.msg);
    /* ... which init_missing accepts, naming what it initialised */
    n_warnings = 0;
    BertcWarnHook old = bertc_set_warn_hook(capture_warning, NULL);
    LoadOptions opts = {.init_missing = true};
    int rc = bertc_registry_load_file(r, "test/data/nn/state_dict.safetensors", &opts, &err);
    bertc_set_warn_hook(old, NULL);
    cr_assert_eq(rc, 0, "%s", err.msg);
    cr_assert_eq(n_warnings, 1);
    cr_assert(strstr(warned, "classifier.weight") && strstr(warned, "classifier.bias"),
              "warning: %s", warned);

    /* wrong shape: fc2 is (8 -> 4) here, (8 -> 3) in the file */
    Registry *r2 = bertc_registry_create(arena, "Mlp");
    Linear fc1, fc2;
    bertc_linear_init(&fc1, r2, "fc1", 4, 8, true);
    bertc_linear_init(&fc2, r2, "fc2", 8, 4, true);
    cr_assert_neq(bertc_registry_load_file(r2, "test/data/nn/state_dict.safetensors", NULL, &err), 0);
    cr_assert(strstr(err.msg, "fc2.weight") && strstr(err.msg, "[3, 8]") &&
              strstr(err.msg, "[4, 8]"), "message: %s", err.msg);

    /* unused keys: a model with only fc1 gets one warning listing fc2.* */
    Registry *r3 = bertc_registry_create(arena, "Half");
    bertc_linear_init(&fc1, r3, "fc1", 4, 8, true);
    n_warnings = 0;
    old = bertc_set_warn_hook(capture_warning, NULL);
    rc = bertc_registry_load_file(r3, "test/data/nn/state_dict.safetensors", NULL, &err);
    bertc_set_warn_hook(old, NULL);
    cr_assert_eq(rc, 0, "%s", err.msg);
    cr_assert_eq(n_warnings, 1, "%d warnings", n_warnings);
    cr_assert(strstr(warned, "2 unused keys") && strstr(warned, "fc2.weight") &&
              strstr(warned, "fc2.bias"), "warning: %s", warned);
}

/* Train 2N steps straight; separately N steps, checkpoint, a fresh model
 * and optimizer loaded from it, N more steps. Dropout is on, so the RNG
 * state must round-trip too. The weights must be bit-identical. */
static void train_steps(Mlp *m, Registry *r, Optimizer *opt, Graph *g, int from, int to)
{
    open_fixture("optim.safetensors");
    Tensor x = load("x");
    ITensor y = load_ids("y");
    Schedule sched = {SCHED_COSINE, 1e-2, 2, 8};
    for (int step = from; step < to; step++) {
        bertc_ag_graph_reset(g);
        bertc_registry_zero_grad(r);
        Var *h = bertc_ag_gelu(g, bertc_linear_forward(g, &m->fc1, bertc_ag_constant(g, x)));
        h = bertc_ag_dropout(g, h, 0.2f);
        Var *loss = bertc_ag_cross_entropy(g, bertc_linear_forward(g, &m->fc2, h), &y, -100);
        bertc_ag_backward(g, loss);
        bertc_clip_grad_norm(r, 1.0f);
        bertc_optimizer_step(opt, bertc_schedule_lr(&sched, step));
    }
    bertc_st_close(fixture);
    fixture = NULL;
}

Test(nn_parity, checkpoint_resume_is_bit_exact)
{
    const int N = 4;
    Mlp a, b, c;
    Registry *ra = mlp_build(&a), *rb = mlp_build(&b);
    Rng init = bertc_rng_seed(21);
    bertc_registry_init_weights(ra, &init, 0.3f);
    init = bertc_rng_seed(21);
    bertc_registry_init_weights(rb, &init, 0.3f);
    Graph *ga = bertc_ag_graph_create(1 << 16, 77), *gb = bertc_ag_graph_create(1 << 16, 77);
    Optimizer oa, ob, oc;
    bertc_optimizer_init(&oa, ra, bertc_optimizer_defaults(OPT_ADAMW, 1e-2));
    bertc_optimizer_init(&ob, rb, bertc_optimizer_defaults(OPT_ADAMW, 1e-2));
    train_steps(&a, ra, &oa, ga, 0, 2 * N);

    train_steps(&b, rb, &ob, gb, 0, N);
    char path[128];
    tmp_path(path, sizeof path, "ckpt.safetensors");
    BertcError err;
    cr_assert_eq(bertc_checkpoint_save(path, rb, &ob, &gb->rng, N, NULL, &err), 0, "%s", err.msg);

    Registry *rc = mlp_build(&c);   /* fresh: zero weights, zero state */
    Graph *gc = bertc_ag_graph_create(1 << 16, 12345);
    bertc_optimizer_init(&oc, rc, bertc_optimizer_defaults(OPT_ADAMW, 1e-2));
    int64_t step = -1;
    cr_assert_eq(bertc_checkpoint_load(path, rc, &oc, &gc->rng, &step, NULL, &err), 0, "%s", err.msg);
    remove(path);
    cr_assert_eq(step, N);
    cr_assert_eq(oc.step, N);
    train_steps(&c, rc, &oc, gc, N, 2 * N);
    for (int i = 0; i < ra->n_params; i++)
        cr_assert_eq(memcmp(ra->params[i].var->value.data, rc->params[i].var->value.data,
                            sizeof(float) * (size_t)ra->params[i].var->value.numel), 0,
                     "%s differs between the straight and the resumed run",
                     ra->params[i].name);
    bertc_ag_graph_destroy(ga);
    bertc_ag_graph_destroy(gb);
    bertc_ag_graph_destroy(gc);
}
