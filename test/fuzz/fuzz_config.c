/* test/fuzz/fuzz_config.c — libFuzzer target: any bytes as config.json
 * (bertc_bert_config_parse, which runs the JSON parser of nn/json.c). A config
 * that parses must format (bertc_bert_config_format) to a text that parses back
 * to the same config: formatting the second parse gives the same bytes. */
#include "zoo/zoo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* cfg formatted into a malloc'd text of its own size (*n bytes); NULL with
 * err set when it does not format. */
static char *format(const BertConfig *cfg, size_t *n, BertcError *err)
{
    BertcError unused;
    bertc_bert_config_format(cfg, NULL, 0, n, &unused);
    char *text = malloc(*n + 1);
    if (text && bertc_bert_config_format(cfg, text, *n + 1, n, err) == 0)
        return text;
    free(text);
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    BertConfig cfg, again;
    BertcError err = {{0}};
    if (bertc_bert_config_parse(NULL, "fuzz.json", (const char *)data, size, &cfg, &err) != 0) {
        if (!strstr(err.msg, "fuzz.json")) {
            fprintf(stderr, "error without the file's name: \"%s\"\n", err.msg);
            abort();
        }
        return 0;
    }
    size_t n1, n2 = 0;
    char *first = format(&cfg, &n1, &err), *second = NULL;
    bool parsed = first &&
                  bertc_bert_config_parse(NULL, "formatted.json", first, n1, &again, &err) == 0;
    if (parsed)
        second = format(&again, &n2, &err);
    if (!second) {
        fprintf(stderr, "a parsed config does not round-trip: %s\n%s\n", err.msg,
                first ? first : "");
        abort();
    }
    if (n1 != n2 || memcmp(first, second, n1) != 0) {
        fprintf(stderr, "round trip changed the config:\n%s\n---\n%s\n", first, second);
        abort();
    }
    free(first);
    free(second);
    bertc_bert_config_free(&cfg);   /* id2label's names, when too many for the config */
    bertc_bert_config_free(&again);
    return 0;
}
