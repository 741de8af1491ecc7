/* test/support_tokenizer_count.c — see test_tokenizer_calls in test_util.h.
 *
 * The linker routes every call of bertc_tokenizer_encode made from another
 * object of the test binary (the CLI's files, the models' batch_from_text,
 * the tests) through this wrapper (-Wl,--wrap=bertc_tokenizer_encode in the
 * Makefile), which counts it and passes it on. */
#include "test/test_util.h"
#include "zoo/text/tokenizer.h"

int __real_bertc_tokenizer_encode(const Tokenizer *t, Arena *a, const char *text_a, size_t len_a,
                                  const char *text_b, size_t len_b, int32_t max_len, bool pad,
                                  Encoding *out, BertcError *err);
int __wrap_bertc_tokenizer_encode(const Tokenizer *t, Arena *a, const char *text_a, size_t len_a,
                                  const char *text_b, size_t len_b, int32_t max_len, bool pad,
                                  Encoding *out, BertcError *err);

static long calls;

int __wrap_bertc_tokenizer_encode(const Tokenizer *t, Arena *a, const char *text_a, size_t len_a,
                                  const char *text_b, size_t len_b, int32_t max_len, bool pad,
                                  Encoding *out, BertcError *err)
{
    calls++;
    return __real_bertc_tokenizer_encode(t, a, text_a, len_a, text_b, len_b, max_len, pad, out,
                                         err);
}

long test_tokenizer_calls(void) { return calls; }
