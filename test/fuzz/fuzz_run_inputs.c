/* test/fuzz/fuzz_run_inputs.c — libFuzzer target: the input validation of
 * `bertc run`. Byte 0 picks one of the small fixture models of
 * test/data/zoo/ (one per architecture, loaded once; run from the repository
 * root) and, with its top bit, a backward pass as `bertc run --grad` does;
 * the other bytes are the inputs safetensors file. They go the way bertc_zoo_run
 * takes them: bertc_st_open_memory -> bertc_batch_from_safetensors -> bertc_model_forward
 * (eval mode, no-grad unless backward). Wrong names, dtypes, shapes or
 * values must be errors naming the input file, never a crash. */
#include "test/fuzz/fuzz_util.h"

static const char *const fixtures[] = {
    "bert_model", "bert_seqcls_single", "bert_seqcls_regression", "bert_seqcls_multi",
    "bert_mlm_b", "cgbert_gate", "qacgbert_first", "bertsum_b", "qaconv_given", "spanbert_c",
};
#define N_MODELS (sizeof fixtures / sizeof fixtures[0])

static Model models[N_MODELS];
static Graph *graph;
static Arena *inputs;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setenv("BERTC_THREADS", "1", 0);
    fuzz_load_fixtures(models, fixtures, N_MODELS);
    graph = bertc_ag_graph_create(1 << 20, 0);
    bertc_ag_set_training(graph, false);
    inputs = bertc_arena_create("inputs", 1 << 16);
    return 0;
}

static void check_message(const BertcError *err)
{
    if (!strstr(err->msg, "inputs.safetensors")) {
        fprintf(stderr, "error without the inputs file's name: \"%s\"\n", err->msg);
        abort();
    }
}

static void forward(Model *m, const Batch *in, bool grad)
{
    Outputs out;
    BertcError err = {{0}};
    bertc_ag_set_no_grad(graph, !grad);
    bertc_outputs_init(&out);
    if (bertc_model_forward(m, graph, in, &out, &err) != 0) {
        check_message(&err);
        return;
    }
    Var *loss = bertc_outputs_get(&out, "loss");
    if (grad && loss) {
        bertc_registry_zero_grad(m->reg);
        bertc_ag_backward(graph, loss);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    Model *m = &models[(data[0] & 127) % N_MODELS];
    SafeTensors *st;
    BertcError err = {{0}};
    if (bertc_st_open_memory(NULL, "inputs.safetensors", data + 1, size - 1, &st, &err) != 0)
        return 0;
    Batch in;
    bertc_batch_init(&in, "inputs.safetensors");
    int rc = bertc_batch_from_safetensors(&in, st, inputs, &err);
    bertc_st_close(st);
    if (rc != 0)
        check_message(&err);
    else
        forward(m, &in, data[0] & 128);
    bertc_ag_graph_reset(graph);
    bertc_arena_reset(inputs);
    return 0;
}
