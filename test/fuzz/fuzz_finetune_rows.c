/* test/fuzz/fuzz_finetune_rows.c — libFuzzer target: any bytes as the data
 * file of `bertc finetune`, past the table (fuzz_dataset) into the rows of
 * each task: byte 0 picks the task (low 3 bits: seq-cls, multi-label,
 * regression, token-cls, qa, mlm), the format (bits 3-4: CSV, TSV, JSONL
 * with the SQuAD JSON it recognises, CoNLL) and, for qa, the window
 * (bits 5-7: --max-len 8 + 6k, --doc-stride k or the default). The rest is
 * the file. The table goes through what bertc_finetune
 * (zoo/train/finetune_data.c) does with it: the label set, the task's rows
 * (labels, regression targets, tags, SQuAD answers and their
 * answer_start), and for qa the windows and every
 * window's start/end positions; token-cls batches its first rows. Errors
 * must be one line; positions must lie in their window. */
#include "zoo/train/finetune_internal.h"
#include "test/fuzz/fuzz_util.h"

#define VOCAB "data/bert-base-uncased-vocab.txt"
#define MAX_FEATURES 64   /* windows checked an input: enough to reach every branch */

static Arena *vocab_arena;   /* kept: the tokenizer lives in it */
static Tokenizer tok;
static Graph *graph;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    BertcError err;
    vocab_arena = bertc_arena_create("vocab", 1 << 20);
    if (bertc_tokenizer_load(&tok, vocab_arena, VOCAB, &err) != 0)
        fuzz_setup_failed(&err);
    graph = bertc_ag_graph_create(1 << 16, 0);
    return 0;
}

/* The arrays zoo/train/finetune_data.c's alloc_rows gives n rows of W words. */
static void alloc_rows(FinetuneData *f, Arena *a, int64_t n, int64_t W)
{
    int64_t C = f->labels.n;
    f->n = f->n_train = n;
    f->ex = bertc_arena_calloc(a, (size_t)n, sizeof *f->ex);
    f->origin = NULL;
    f->label = bertc_arena_calloc(a, (size_t)n, sizeof *f->label);
    f->target = bertc_arena_calloc(a, (size_t)(n * C), sizeof *f->target);
    f->answers = bertc_arena_calloc(a, (size_t)n, sizeof *f->answers);
    f->span = bertc_arena_calloc(a, 2 * (size_t)n, sizeof *f->span);
    f->word_off = bertc_arena_calloc(a, (size_t)n + 1, sizeof *f->word_off);
    f->word_cp = bertc_arena_calloc(a, (size_t)W + 1, sizeof *f->word_cp);
    f->word_tag = bertc_arena_calloc(a, (size_t)W + 1, sizeof *f->word_tag);
}

/* Words over a '|'-joined column, as zoo/train/finetune_data.c counts them. */
static int64_t count_words(const Dataset *d, int column)
{
    int64_t W = 0;
    for (int64_t i = 0; i < d->n_rows; i++) {
        const char *c = bertc_dataset_cell(d, i, column);
        for (W += c && *c ? 1 : 0; c && *c; c++)
            W += *c == '|';
    }
    return W;
}

/* qa: every window's positions lie inside it (0 0: the [CLS]). */
static int check_qa(FinetuneData *f, Arena *a, uint8_t window, BertcError *err)
{
    f->max_len = 8 + 6 * (window & 7);
    f->doc_stride = (window & 7) < 4 ? (int32_t)(window & 7) : -1;
    if (bertc_finetune_qa_windows(f, a, err) != 0)
        return -1;
    Model m = {.cfg = bertc_bert_config_default("BertForQuestionAnswering")};
    for (int64_t k = 0; k < f->n_feat && k < MAX_FEATURES; k++) {
        Batch b;
        Encoding *enc;
        int64_t tokens;
        bertc_ag_graph_reset(graph);
        bertc_batch_init(&b, "fuzz");
        if (bertc_finetune_qa_batch(f, &m, &k, 1, graph, &b, &enc, &tokens, err) != 0)
            return -1;
        int32_t s = bertc_batch_find(&b, "start_positions")->ids.data[0];
        int32_t t = bertc_batch_find(&b, "end_positions")->ids.data[0];
        if (s < 0 || t < s || t >= enc->S || (s == 0) != (t == 0) || enc->S > f->max_len) {
            fprintf(stderr, "feature %lld: positions %d %d in a window of %d (max_len %d)\n",
                    (long long)k, s, t, enc->S, f->max_len);
            abort();
        }
    }
    return 0;
}

static int token_batch(FinetuneData *f, BertcError *err)
{
    Model m = {.cfg = bertc_bert_config_default("BertForTokenClassification")};
    int64_t idx[4] = {0, 1, 2, 3}, n = f->n < 4 ? f->n : 4, tokens;
    int32_t *pos[4];
    Batch b;
    f->max_len = 16;
    bertc_ag_graph_reset(graph);
    bertc_batch_init(&b, "fuzz");
    return bertc_finetune_token_batch(f, &m, idx, n, graph, &b, pos, &tokens, err);
}

static int rows(FinetuneKind kind, const Dataset *d, Arena *a, uint8_t window, BertcError *err)
{
    static const char *const qa_cols[4] = {"question", "context", "answers.text",
                                           "answers.answer_start"};
    FinetuneData f = {.kind = kind, .tok = &tok, .name = d->name, .labels = {.n = 1}};
    int text, label = -1, col[4];
    if (kind == FT_QA) {
        for (int k = 0; k < 4; k++)
            if ((col[k] = bertc_dataset_column(d, qa_cols[k], err)) < 0)
                return -1;
        alloc_rows(&f, a, d->n_rows, 0);
        return bertc_finetune_qa_rows(&f, 0, d, col, err) != 0 ? -1 : check_qa(&f, a, window, err);
    }
    bool tokens = kind == FT_TOKEN_CLS;
    if ((text = bertc_dataset_column(d, tokens ? "tokens" : "text", err)) < 0 ||
        (kind != FT_MLM && (label = bertc_dataset_column(d, tokens ? "tags" : "label", err)) < 0))
        return -1;
    if ((kind == FT_SEQ_CLS || kind == FT_MULTI_LABEL || tokens) &&
        bertc_label_set_build(&f.labels, a, d, label, kind != FT_SEQ_CLS, err) != 0)
        return -1;
    alloc_rows(&f, a, d->n_rows, tokens ? count_words(d, text) : 0);
    if (!tokens)
        return bertc_finetune_add_rows(&f, 0, d, text, -1, label, err);
    return bertc_finetune_token_rows(&f, 0, d, text, label, a, err) != 0 ? -1
                                                                         : token_batch(&f, err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static const FinetuneKind kinds[6] = {FT_SEQ_CLS, FT_MULTI_LABEL, FT_REGRESSION,
                                          FT_TOKEN_CLS, FT_QA, FT_MLM};
    static const DatasetFormat formats[4] = {DATASET_CSV, DATASET_TSV, DATASET_JSONL,
                                             DATASET_CONLL};
    Arena *arena = bertc_arena_create("fuzz_finetune_rows", 1 << 16);
    Dataset d;
    BertcError err = {{0}};
    if (bertc_dataset_parse(&d, arena, "fuzz.data", formats[(data[0] >> 3) & 3],
                            (const char *)data + 1, size - 1, &err) != 0 ||
        rows(kinds[(data[0] & 7) % 6], &d, arena, data[0] >> 5, &err) != 0)
        fuzz_expect_one_line(&err);
    bertc_arena_destroy(arena);
    return 0;
}
