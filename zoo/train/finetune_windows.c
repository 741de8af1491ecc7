/* zoo/train/finetune_windows.c — sequence-level fine-tuning on long texts
 * (`bertc finetune --stride N`, `bertc evaluate --stride N`): a text longer
 * than max_len is not cut but read whole, in the overlapping windows
 * Hugging Face's tokenizer makes with return_overflowing_tokens and a stride
 * (bertc_encoding_windows, as `bertc predict --stride` reads them).
 *
 * Training: each window is an example with its row's label (the text's
 * label holds for every part of it; HF's recipe for long-document
 * classification). Evaluation: a row's logits are the mean of its windows'
 * (predict's --aggregate mean), and its prediction is made from them
 * (finetune_task.c). */
#include "zoo/train/finetune_internal.h"

#include <string.h>

bool bertc_finetune_text_windowed(const FinetuneData *data)
{
    return data->kind != FT_QA && data->text_stride >= 0;
}

int64_t bertc_finetune_train_examples(const FinetuneData *data)
{
    return data->kind == FT_QA || bertc_finetune_text_windowed(data) ? data->n_feat_train
                                                                     : data->n_train;
}

/* Row r's windows: its encoding untruncated, cut by bertc_encoding_windows. */
static int row_windows(const FinetuneData *data, int64_t r, Arena *arena, Encoding **w,
                       int32_t *n, BertcError *err)
{
    const TextExample *ex = &data->ex[r];
    const char *b = ex->text_pair;
    Encoding full;
    if (bertc_tokenizer_encode(data->tok, arena, ex->text, strlen(ex->text), b,
                               b ? strlen(b) : 0, 0, false, &full, err) != 0 ||
        bertc_encoding_windows(&full, data->max_len, data->text_stride, arena, w, n, err) != 0) {
        char why[BERTC_ERROR_LEN];
        snprintf(why, sizeof why, "%s", err->msg);
        return bertc_errorf(err, "%s: %s (--max-len %d, --stride %d)", data->origin[r], why,
                            (int)data->max_len, (int)data->text_stride);
    }
    return 0;
}

int bertc_finetune_text_windows(FinetuneData *data, Arena *arena, BertcError *err)
{
    if (!bertc_finetune_text_windowed(data))
        return 0;
    Encoding **per_row = bertc_arena_alloc(arena, sizeof *per_row * (size_t)data->n);
    int32_t *count = bertc_arena_alloc(arena, sizeof *count * (size_t)data->n);
    int64_t total = 0;
    data->n_feat_train = 0;
    for (int64_t r = 0; r < data->n; r++) {
        if (row_windows(data, r, arena, &per_row[r], &count[r], err) != 0)
            return -1;
        total += count[r];
        data->n_feat_train += r < data->n_train ? count[r] : 0;
    }
    data->n_feat = total;
    int C = bertc_finetune_row_logits(data);
    int64_t n_eval = data->n - data->n_train;
    data->win_logits = bertc_arena_alloc(arena, sizeof(float) * (size_t)(n_eval * C + 1));
    data->win_count = bertc_arena_alloc(arena, sizeof(int32_t) * (size_t)(n_eval + 1));
    data->feat_row = bertc_arena_alloc(arena, sizeof *data->feat_row * (size_t)total);
    data->feat_win = bertc_arena_alloc(arena, sizeof *data->feat_win * (size_t)total);
    data->feat_enc = bertc_arena_alloc(arena, sizeof *data->feat_enc * (size_t)total);
    for (int64_t r = 0, f = 0; r < data->n; r++)
        for (int32_t w = 0; w < count[r]; w++, f++) {
            data->feat_row[f] = r;
            data->feat_win[f] = w;
            data->feat_enc[f] = per_row[r][w];
        }
    return 0;
}
