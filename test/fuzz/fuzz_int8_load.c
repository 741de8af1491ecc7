/* test/fuzz/fuzz_int8_load.c — libFuzzer target: any bytes as the
 * model.safetensors of an int8 model (docs/quantization.md). The model is
 * test/data/zoo/bert_seqcls_single built as `bertc quantize` leaves it: its
 * encoder's Linear weights int8 (bertc_registry_int8_plan). Each input
 * builds it afresh and loads the bytes as bertc_model_open does
 * (bertc_st_open_memory -> bertc_registry_load): an I8 weight of the wrong
 * shape, missing or bad scales, -128, I8 where float32 belongs must be
 * errors naming the file, never a crash; whatever loads, the forward on the
 * fixture's inputs must run. When the bytes hold the word embeddings as
 * I8 (`bertc quantize --embeddings`), the model is built with them int8
 * too, as bertc_model_open builds it from the file's I8 names. Seeds: the
 * fixture quantised (corpus/fuzz_int8_load/seqcls_int8) and quantised with
 * --embeddings (seqcls_int8_embeddings). */
#include "test/fuzz/fuzz_util.h"

#define FIXTURE "bert_seqcls_single"
#define WORD "bert.embeddings.word_embeddings.weight"

static BertConfig cfg;
static const char **int8_names;
static int n_int8;
static Batch inputs;
static Graph *graph;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void quiet(const char *msg, void *user) { (void)msg, (void)user; }

/* The names of the Linear weights the plan makes int8, and the inputs. */
static void plan(Arena *a)
{
    Model m;
    BertcError err;
    fuzz_load_fixture(&m, a, FIXTURE);
    cfg = m.cfg;
    cfg.int8_dynamic = true;
    bool *chosen = bertc_arena_calloc(a, (size_t)m.reg->n_params, sizeof *chosen);
    if (bertc_registry_int8_plan(m.reg, NULL, 0, chosen, &err) < 0)
        fuzz_setup_failed(&err);
    int8_names = bertc_arena_alloc(a, sizeof *int8_names * (size_t)(m.reg->n_params + 1));
    for (int i = 0; i < m.reg->n_params; i++)
        if (chosen[i])
            int8_names[n_int8++] = m.reg->params[i].name;
    int8_names[n_int8] = WORD;   /* used when the bytes hold it as I8 */
    SafeTensors *st;
    if (bertc_st_open_file(a, "test/data/zoo/" FIXTURE "/inputs.safetensors", &st, &err) != 0)
        fuzz_setup_failed(&err);
    bertc_batch_init(&inputs, "inputs.safetensors");
    if (bertc_batch_from_safetensors(&inputs, st, a, &err) != 0)
        fuzz_setup_failed(&err);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setenv("BERTC_THREADS", "1", 0);
    bertc_set_warn_hook(quiet, NULL);
    plan(bertc_arena_create("fuzz_int8_load", 1 << 20));
    graph = bertc_ag_graph_create(1 << 20, 0);
    bertc_ag_set_training(graph, false);
    bertc_ag_set_no_grad(graph, true);
    return 0;
}

static void check_message(const BertcError *err)
{
    if (!strstr(err->msg, "model.safetensors")) {
        fprintf(stderr, "error without the weights file's name: \"%s\"\n", err->msg);
        abort();
    }
    fuzz_expect_one_line(err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    SafeTensors *st;
    BertcError err = {{0}};
    if (bertc_st_open_memory(NULL, "model.safetensors", data, size, &st, &err) != 0) {
        check_message(&err);
        return 0;
    }
    Arena *a = bertc_arena_create("int8 model", 1 << 16);
    Model m;
    const StTensorInfo *word = bertc_st_find(st, WORD);
    int n = n_int8 + (word && word->dtype == ST_I8);
    if (bertc_model_build_int8(&m, a, &cfg, int8_names, n, &err) != 0)
        fuzz_setup_failed(&err);
    LoadOptions opts = bertc_model_load_options(&m, false);
    int rc = bertc_registry_load(m.reg, st, &opts, &err);
    bertc_st_close(st);
    if (rc != 0) {
        check_message(&err);
    } else {
        Outputs out;
        bertc_outputs_init(&out);
        if (bertc_model_forward(&m, graph, &inputs, &out, &err) != 0) {
            fprintf(stderr, "the fixture's inputs failed after a good load: %s\n", err.msg);
            abort();
        }
        bertc_ag_graph_reset(graph);
    }
    bertc_arena_destroy(a);
    return 0;
}
