/* test/test_arch_names.c — everything about an architecture is in its zoo
 * file (docs/adding-a-model.md): no string in the CLI, nn/, autograd/,
 * tensor/ or the other zoo/ folders names one. A name there (a task mapped
 * to "BertForMaskedLM", a message listing what export-c writes) is a second
 * place a new architecture would have to be added; they read the
 * descriptor instead (ModelArch.task, finetune_head, export_c, explain). */
#include "zoo/zoo.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <string.h>

/* The folders that must not name an architecture. */
static const char *const folders[] = {"cli", "nn", "autograd", "tensor", "zoo/train",
                                      "zoo/text", "zoo/pictures"};

/* Besides every name of the table, the openings of the names bertc has
 * (`grep '"Bert\|"CGBert\|...'`), so a string naming a module class of
 * those families is caught too. */
static const char *const prefixes[] = {"\"Bert", "\"CGBert", "\"QACGBert", "\"Summarizer",
                                       "\"QAConv", "\"SpanBert"};

static bool is_source(const char *name)
{
    size_t n = strlen(name);
    return n > 2 && name[n - 2] == '.' && (name[n - 1] == 'c' || name[n - 1] == 'h');
}

/* The first `needle` in the file at path: its line, 0 if none. */
static int line_of(const char *path, const char *needle)
{
    static char text[1 << 20];
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    const char *at = strstr(text, needle);
    if (!at)
        return 0;
    int line = 1;
    for (const char *c = text; c < at; c++)
        line += *c == '\n';
    return line;
}

/* Every `"NAME` (NAME from the table) and prefix in the sources of folder;
 * returns how many it found, each reported as FILE:LINE. */
static int scan(const char *folder, bool report)
{
    DIR *d = opendir(folder);
    cr_assert(d, "cannot open %s/ (run the tests from the repository root)", folder);
    int found = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (!is_source(e->d_name))
            continue;
        char path[512], needle[80];
        snprintf(path, sizeof path, "%s/%s", folder, e->d_name);
        int n_names = 0;
        while (bertc_zoo_arch_at(n_names))
            n_names++;
        int n_prefixes = (int)(sizeof prefixes / sizeof prefixes[0]);
        for (int i = 0; i < n_names + n_prefixes; i++) {
            if (i < n_names)
                snprintf(needle, sizeof needle, "\"%s", bertc_zoo_arch_at(i)->name);
            else
                snprintf(needle, sizeof needle, "%s", prefixes[i - n_names]);
            int line = line_of(path, needle);
            if (line && report)
                cr_expect(false, "%s:%d names an architecture: %s... (read its descriptor "
                          "instead, zoo/models/model.h)", path, line, needle);
            found += line > 0;
        }
    }
    closedir(d);
    return found;
}

Test(arch_names, none_outside_the_models)
{
    for (size_t i = 0; i < sizeof folders / sizeof folders[0]; i++)
        scan(folders[i], true);
}

/* The scan finds them where they belong: it can fail. */
Test(arch_names, the_scan_finds_the_models_own)
{
    cr_expect_gt(scan("zoo/models", false), 10, "the scan found no name in zoo/models/");
}
