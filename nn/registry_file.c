/* nn/registry_file.c — printing the module tree to a FILE* as PyTorch's repr
 * does, with parameter counts (`bertc summary`). Bare-metal builds leave
 * this file out. */
#include "nn/nn.h"

#include <stdio.h>

/* Trainable scalars registered in [first, end). A tied alias counts only when
 * its owner was registered outside the range (owners always come first). */
static int64_t count_range(const Registry *r, int first, int end)
{
    int64_t n = 0;
    for (int i = first; i < end; i++) {
        const Param *p = &r->params[i];
        if (!p->buffer && (p->alias_of < 0 || p->alias_of < first))
            n += p->var->value.numel;
    }
    return n;
}

/* 1234567 -> "1,234,567" */
static const char *with_commas(int64_t n, char *buf, size_t len)
{
    char digits[32];
    int nd = snprintf(digits, sizeof digits, "%lld", (long long)n), pos = 0;
    for (int i = 0; i < nd && (size_t)pos + 2 < len; i++) {
        if (i > 0 && (nd - i) % 3 == 0)
            buf[pos++] = ',';
        buf[pos++] = digits[i];
    }
    buf[pos] = '\0';
    return buf;
}

/* Module i and its descendants are modules i .. end-1 (registration order is
 * a pre-order walk). Prints them as torch's repr, plus counts; returns end. */
static int print_module(const Registry *r, int i, FILE *out)
{
    const ModuleInfo *m = &r->modules[i];
    char count[32];
    with_commas(count_range(r, m->first_param, m->end_param), count, sizeof count);
    fprintf(out, "%*s", 2 * m->depth, "");
    if (m->attr)
        fprintf(out, "(%s): ", m->attr);
    if (m->leaf) {
        if (m->first_param < m->end_param)
            fprintf(out, "%s  # %s params\n", m->repr, count);
        else
            fprintf(out, "%s\n", m->repr);
        return i + 1;
    }
    int j = i + 1;
    if (j >= r->n_modules || r->modules[j].depth <= m->depth) {
        fprintf(out, "%s()\n", m->repr);
        return j;
    }
    fprintf(out, "%s(  # %s params\n", m->repr, count);
    while (j < r->n_modules && r->modules[j].depth > m->depth)
        j = print_module(r, j, out);
    fprintf(out, "%*s)\n", 2 * m->depth, "");
    return j;
}

void bertc_registry_print(const Registry *r, FILE *out)
{
    print_module(r, 0, out);
    char total[32];
    fprintf(out, "Total parameters: %s\n", with_commas(bertc_registry_count(r), total, sizeof total));
}
