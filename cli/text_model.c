/* cli/text_model.c — what `bertc predict` and `bertc embed` share: the
 * model from --model DIR or --config/--weights/--vocab, its token limit
 * and whole-number flags (the texts: cli/text_input.c; their batches:
 * cli/text_batches.c). */
#include "cli/cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int cli_parse_int(const char *flag, const char *value, long lo, long hi, int *out,
                  BertcError *err)
{
    char shown[BERTC_SHOWN];
    char *end;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (end == value || *end != '\0' || errno != 0 || v < lo || v > hi)
        return bertc_errorf(err, "%s '%s': expected a whole number in [%ld, %ld]", flag,
                            bertc_shown(value, shown), lo, hi);
    *out = (int)v;
    return 0;
}

/* cli_open_text_model with trained weights required. */
int cli_model_open(const CliCommand *c, const CliArgs *a, Arena *arena, CliModel *cm,
                   BertcError *err)
{
    CliTextModel t;
    if (cli_open_text_model(c, a, true, arena, &t, err) != 0)
        return -1;
    cm->model = t.model;
    cm->tok = t.tok;
    cm->max_len = t.max_len;
    cm->positions = t.positions;
    cm->name = cli_given(c, a, "--model") ? cli_value(c, a, "--model")
                                          : cli_value(c, a, "--config");
    return 0;
}

void cli_model_prepack(CliModel *cm)
{
    Arena *scratch = bertc_arena_create("prepack", 1 << 20);
    bertc_registry_prepack(cm->model->reg, scratch);
    bertc_arena_destroy(scratch);
}

int cli_max_len(const CliCommand *c, const CliArgs *a, const MaxLen *dflt,
                const MaxLen *positions, int specials, int32_t *out, BertcError *err)
{
    MaxLen m = *dflt;
    const char *given = cli_value(c, a, "--max-len");
    char shown[BERTC_SHOWN];
    if (given) {
        m = (MaxLen){.key = "--max-len"};
        if (cli_parse_max_len(given, &m.n, err) != 0)
            return -1;
        if (m.n > positions->n)
            return bertc_errorf(err, "--max-len %d is more than the model's %d positions "
                                "(max_position_embeddings in %s)", (int)m.n, (int)positions->n,
                                bertc_shown(positions->file, shown));
    }
    if (bertc_max_len_room(&m, specials, err) != 0)
        return -1;
    *out = m.n;
    return 0;
}

int cli_model_max_len(const CliCommand *c, const CliArgs *a, const CliModel *cm,
                      const CliText *texts, int n, int32_t *max_len, BertcError *err)
{
    int specials = 2;
    for (int i = 0; i < n; i++)
        if (texts[i].pair)
            specials = 3;
    return cli_max_len(c, a, &cm->max_len, &cm->positions, specials, max_len, err);
}

int cli_forward(Model *m, Graph *g, const Batch *b, Outputs *out, BertcError *err)
{
    if (bertc_model_forward(m, g, b, out, err) != 0)
        return -1;
    return bertc_outputs_check_finite(m, b, out, err);
}
