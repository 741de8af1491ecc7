/* test/test_layers.c — the include rules of docs/architecture.md hold
 * (tools/check_layers.sh reads its table), and the check catches what it is
 * for: a lower layer including a higher one, a source file in a folder the
 * table does not know, a document without the table. The failing cases run
 * on a scratch tree that holds the real docs/architecture.md and a few
 * one-line sources. */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

TestSuite(layers);

/* Runs the check on root; its output into out, its exit code back. */
static int check_layers(const char *root, char *out, size_t cap)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "sh tools/check_layers.sh %s", root);
    return test_shell(cmd, TEST_STDOUT_AND_STDERR, out, cap);
}

/* A scratch tree with the real table; text (may be NULL) into root/path. */
static void scratch_tree(char *root, size_t cap, const char *name, bool with_doc)
{
    test_scratch_make(root, cap, name);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "mkdir -p %s/docs %s/tensor %s/nn %s/zoo/text %s/zoo/models", root,
             root, root, root, root);
    cr_assert_eq(system(cmd), 0);
    if (with_doc) {
        snprintf(cmd, sizeof cmd, "cp docs/architecture.md %s/docs/", root);
        cr_assert_eq(system(cmd), 0);
    }
}

static void put(const char *root, const char *path, const char *text)
{
    char full[512];
    snprintf(full, sizeof full, "%s/%s", root, path);
    FILE *f = fopen(full, "w");
    cr_assert(f, "cannot write %s", full);
    fputs(text, f);
    fclose(f);
}

Test(layers, the_tree_follows_docs_architecture_md)
{
    char out[4096];
    int rc = check_layers(".", out, sizeof out);
    cr_assert_eq(rc, 0, "tools/check_layers.sh failed:\n%s", out);
    int includes = 0, files = 0, rules = 0;
    cr_assert_eq(sscanf(out, "check-layers: %d includes in %d files follow the %d rules", &includes,
                        &files, &rules), 3, "unexpected output: %s", out);
    /* The check saw the library, not an empty list. */
    cr_expect_gt(files, 100, "%s", out);
    cr_expect_gt(includes, 150, "%s", out);
    cr_expect_geq(rules, 8, "%s", out);
}

/* The tokenizer needs only tensor/: text including nn/ is refused, with
 * the file, the line and the include named. */
Test(layers, a_lower_layer_including_a_higher_one_fails)
{
    char root[256], out[4096];
    scratch_tree(root, sizeof root, "layers_up", true);
    put(root, "tensor/t.c", "#include \"tensor/t.h\"\n");
    put(root, "zoo/text/tok.c", "#include \"tensor/tensor.h\"\n#include \"nn/nn.h\"\n");
    int rc = check_layers(root, out, sizeof out);
    cr_expect_neq(rc, 0, "zoo/text including nn/ passed:\n%s", out);
    cr_expect(strstr(out, "zoo/text/tok.c:2: #include \"nn/nn.h\": zoo/text/ may include only"),
              "%s", out);
    cr_expect(!strstr(out, "tensor/t.c"), "an allowed include was reported:\n%s", out);

    /* nn/ including the models, and a same-folder include written without
     * its folder, which resolves to the folder it is in. */
    put(root, "zoo/text/tok.c", "#include \"tokenizer.h\"\n");
    put(root, "nn/m.c", "#include \"autograd/autograd.h\"\n#include \"zoo/zoo.h\"\n");
    rc = check_layers(root, out, sizeof out);
    cr_expect_neq(rc, 0, "nn/ including zoo/zoo.h passed:\n%s", out);
    cr_expect(strstr(out, "nn/m.c:2: #include \"zoo/zoo.h\""), "%s", out);
    cr_expect(!strstr(out, "zoo/text/tok.c"), "%s", out);
    test_scratch_remove(root);
}

Test(layers, a_folder_without_a_row_fails)
{
    char root[256], out[4096];
    scratch_tree(root, sizeof root, "layers_row", true);
    put(root, "zoo/loose.c", "#include \"tensor/tensor.h\"\n");
    int rc = check_layers(root, out, sizeof out);
    cr_expect_neq(rc, 0, "a file directly in zoo/ passed:\n%s", out);
    cr_expect(strstr(out, "zoo/loose.c: no row of docs/architecture.md covers it"), "%s", out);
    test_scratch_remove(root);
}

Test(layers, a_document_without_the_table_fails)
{
    char root[256], out[4096];
    scratch_tree(root, sizeof root, "layers_doc", false);
    put(root, "tensor/t.c", "#include \"tensor/t.h\"\n");
    cr_expect_neq(check_layers(root, out, sizeof out), 0, "no document passed:\n%s", out);
    cr_expect(strstr(out, "docs/architecture.md is missing"), "%s", out);
    put(root, "docs/architecture.md", "# Layout\n\n## Who may include whom\n\nNo table.\n");
    cr_expect_neq(check_layers(root, out, sizeof out), 0, "an empty table passed:\n%s", out);
    cr_expect(strstr(out, "has no table"), "%s", out);
    test_scratch_remove(root);
}
