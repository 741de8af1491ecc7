/* test/support_tensors.c — a model directory's weights read back as
 * StEntry rows a test can damage and write again (test/test_util.h). */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

SafeTensors *test_open_weights(const char *dir)
{
    char path[300];
    SafeTensors *st;
    BertcError err;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    cr_assert_eq(bertc_st_open_file(NULL, path, &st, &err), 0, "%s", err.msg);
    return st;
}

/* One tensor as an entry: I8 kept as bytes, every other dtype as F32. */
static StEntry read_one(Arena *arena, SafeTensors *st, const StTensorInfo *ti, TestTensors *t,
                        size_t i)
{
    BertcError err;
    snprintf(t->names[i], sizeof t->names[i], "%s", ti->name);
    memcpy(t->shapes[i], ti->shape, sizeof(int64_t) * (size_t)ti->ndim);
    StEntry e = {.name = t->names[i], .dtype = ti->dtype, .ndim = ti->ndim,
                 .shape = t->shapes[i]};
    size_t n = (size_t)ti->numel;
    if (ti->dtype == ST_I8) {
        int8_t *q = bertc_arena_alloc(arena, n + 1);
        cr_assert_eq(bertc_st_read_i8(st, ti, q, n, &err), 0, "%s", err.msg);
        e.i8 = q;
    } else {
        float *f = bertc_arena_alloc(arena, sizeof(float) * (n + 1));
        cr_assert_eq(bertc_st_read_f32(st, ti, f, n, &err), 0, "%s", err.msg);
        e.dtype = ST_F32;
        e.f32 = f;
    }
    return e;
}

TestTensors *test_read_tensors(Arena *arena, const char *dir)
{
    SafeTensors *st = test_open_weights(dir);
    TestTensors *t = bertc_arena_calloc(arena, 1, sizeof *t);
    cr_assert_lt(st->n_tensors, TEST_TENSORS_MAX);
    for (size_t i = 0; i < st->n_tensors; i++)
        t->e[i] = read_one(arena, st, &st->tensors[i], t, i);
    t->n = st->n_tensors;
    bertc_st_close(st);
    return t;
}

StEntry *test_tensor_entry(TestTensors *t, const char *name)
{
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->e[i].name, name) == 0)
            return &t->e[i];
    cr_assert_fail("no tensor '%s'", name);
    return NULL;
}
