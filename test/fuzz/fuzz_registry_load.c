/* test/fuzz/fuzz_registry_load.c — libFuzzer target: any bytes as the
 * weights file of a small model. Byte 0 picks one of the fixture models of
 * test/data/zoo/ (one per architecture, built once; run from the repository
 * root); its top bit asks for init_missing (HF's fresh heads), the next bit
 * for a forward pass on the fixture's own inputs after a successful load.
 * The other bytes go the way bertc_model_load takes a file: bertc_st_open_memory ->
 * bertc_registry_load with the architecture's renames. Wrong names, dtypes, shapes
 * or values must be errors naming the weights file, never a crash; whatever
 * finite weights load, the forward must run. Each input starts from the
 * fixture's own weights (restored from a copy), so a run is reproducible. */
#include "test/fuzz/fuzz_util.h"

static const char *const fixtures[] = {
    "bert_model", "bert_seqcls_single", "bert_mlm_b", "cgbert_gate", "qacgbert_first",
    "bertsum_b", "qaconv_given", "spanbert_c",
};
#define N_MODELS (sizeof fixtures / sizeof fixtures[0])

typedef struct Fixture {
    Model m;
    Batch inputs;
    float **weights;   /* a copy of every parameter as the fixture has it */
} Fixture;

static Fixture models[N_MODELS];
static Graph *graph;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void quiet(const char *msg, void *user) { (void)msg, (void)user; }

static void load(Fixture *f, const char *name)
{
    char inputs[256];
    snprintf(inputs, sizeof inputs, "test/data/zoo/%s/inputs.safetensors", name);
    Arena *a = bertc_arena_create(name, 1 << 20);
    fuzz_load_fixture(&f->m, a, name);
    BertcError err;
    SafeTensors *st;
    if (bertc_st_open_file(a, inputs, &st, &err) != 0)
        fuzz_setup_failed(&err);
    bertc_batch_init(&f->inputs, "inputs.safetensors");
    if (bertc_batch_from_safetensors(&f->inputs, st, a, &err) != 0)
        fuzz_setup_failed(&err);
    const Registry *r = f->m.reg;
    f->weights = bertc_arena_alloc(a, sizeof *f->weights * (size_t)r->n_params);
    for (int i = 0; i < r->n_params; i++) {
        const Tensor *v = &r->params[i].var->value;
        f->weights[i] = bertc_arena_alloc(a, sizeof(float) * (size_t)v->numel);
        memcpy(f->weights[i], v->data, sizeof(float) * (size_t)v->numel);
    }
}

static void restore(Fixture *f)
{
    const Registry *r = f->m.reg;
    for (int i = 0; i < r->n_params; i++) {
        const Tensor *v = &r->params[i].var->value;
        memcpy(v->data, f->weights[i], sizeof(float) * (size_t)v->numel);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setenv("BERTC_THREADS", "1", 0);
    bertc_set_warn_hook(quiet, NULL);   /* "unused keys" on every other input */
    for (size_t i = 0; i < N_MODELS; i++)
        load(&models[i], fixtures[i]);
    graph = bertc_ag_graph_create(1 << 20, 0);
    bertc_ag_set_training(graph, false);
    bertc_ag_set_no_grad(graph, true);
    return 0;
}

static void check_message(const BertcError *err)
{
    if (!strstr(err->msg, "weights.safetensors")) {
        fprintf(stderr, "error without the weights file's name: \"%s\"\n", err->msg);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    Fixture *f = &models[(data[0] & 63) % N_MODELS];
    restore(f);
    SafeTensors *st;
    BertcError err = {{0}};
    if (bertc_st_open_memory(NULL, "weights.safetensors", data + 1, size - 1, &st, &err) != 0) {
        check_message(&err);
        return 0;
    }
    LoadOptions opts = bertc_model_load_options(&f->m, data[0] & 128);
    int rc = bertc_registry_load(f->m.reg, st, &opts, &err);
    bertc_st_close(st);
    if (rc != 0) {
        check_message(&err);
        return 0;
    }
    if (data[0] & 64) {
        Outputs out;
        bertc_outputs_init(&out);
        if (bertc_model_forward(&f->m, graph, &f->inputs, &out, &err) != 0) {
            fprintf(stderr, "the fixture's inputs failed after a good load: %s\n", err.msg);
            abort();
        }
        bertc_ag_graph_reset(graph);
    }
    return 0;
}
