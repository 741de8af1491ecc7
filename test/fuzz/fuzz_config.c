/* test/fuzz/fuzz_config.c — libFuzzer target: any bytes as config.json
 * (bertc_bert_config_parse, which runs the JSON parser of nn/json.c). A config
 * that parses must format (bertc_bert_config_format) to a text that parses back
 * to the same config: formatting the second parse gives the same bytes. */
#include "zoo/zoo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEXT_CAP 8192

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
    static char first[TEXT_CAP], second[TEXT_CAP];
    size_t n1, n2;
    if (bertc_bert_config_format(&cfg, first, sizeof first, &n1, &err) != 0 ||
        bertc_bert_config_parse(NULL, "formatted.json", first, n1, &again, &err) != 0 ||
        bertc_bert_config_format(&again, second, sizeof second, &n2, &err) != 0) {
        fprintf(stderr, "a parsed config does not round-trip: %s\n%s\n", err.msg, first);
        abort();
    }
    if (n1 != n2 || memcmp(first, second, n1) != 0) {
        fprintf(stderr, "round trip changed the config:\n%s\n---\n%s\n", first, second);
        abort();
    }
    return 0;
}
