/* test/fuzz/fuzz_util.h — steps the libFuzzer targets share (they link no
 * test framework, so these live here, not in test/support_*.c): a fixture
 * model loaded once, argv made of the input's bytes, and the rule that an
 * error is one line. */
#ifndef BERTC_FUZZ_UTIL_H
#define BERTC_FUZZ_UTIL_H

#include "zoo/zoo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A target that cannot set itself up (a fixture missing: the targets run
 * from the repository root) says why and exits 1; that is not a finding. */
static inline void fuzz_setup_failed(const BertcError *err)
{
    fprintf(stderr, "%s (run from the repository root)\n", err->msg);
    exit(1);
}

/* test/data/zoo/<name>/'s config and weights into *m, built in arena. */
static inline void fuzz_load_fixture(Model *m, Arena *arena, const char *name)
{
    char config[256], weights[256];
    snprintf(config, sizeof config, "test/data/zoo/%s/config.json", name);
    snprintf(weights, sizeof weights, "test/data/zoo/%s/weights.safetensors", name);
    BertConfig cfg;
    BertcError err;
    if (bertc_bert_config_read(config, &cfg, &err) != 0 || bertc_model_build(m, arena, &cfg, &err) != 0 ||
        bertc_model_load(m, weights, false, &err) != 0)
        fuzz_setup_failed(&err);
}

/* fixtures[0, n) into models[0, n), each built in an arena of its own. */
static inline void fuzz_load_fixtures(Model *models, const char *const *fixtures, size_t n)
{
    for (size_t i = 0; i < n; i++)
        fuzz_load_fixture(&models[i], bertc_arena_create(fixtures[i], 1 << 20), fixtures[i]);
}

/* An error must be one non-empty line; anything else is a finding. */
static inline void fuzz_expect_one_line(const BertcError *err)
{
    if (!err->msg[0] || strchr(err->msg, '\n')) {
        fprintf(stderr, "an error must be one non-empty line: \"%s\"\n", err->msg);
        abort();
    }
}

/* bytes[0, n) split at NUL bytes into strings, appended to argv from argc
 * while argc < max; returns the new argc. The strings live in *text (the
 * bytes and a closing NUL), which the caller frees. */
static inline int fuzz_split_args(const uint8_t *bytes, size_t n, char **text, char **argv,
                                  int argc, int max)
{
    char *t = malloc(n + 1);
    memcpy(t, bytes, n);
    t[n] = '\0';
    for (size_t i = 0; i < n && argc < max; i += strlen(t + i) + 1)
        argv[argc++] = t + i;
    *text = t;
    return argc;
}

#endif
