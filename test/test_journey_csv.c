/* test/test_journey_csv.c — issue #15's journey (a), with the binary alone:
 * a CSV of labelled texts -> `bertc finetune` -> `bertc predict --format
 * jsonl` on texts the model never saw, whose labels must beat the majority
 * class by a wide margin. The texts are data/topics.tsv (real fortunes):
 * the first 915 rows train, the last 229 are only predicted. */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N_ROWS 1144
#define N_TRAIN 915

static char dir[128];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/bertc_journey_a_%d", (int)getpid());
    char cmd[256];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
    cr_assert_eq(system(cmd), 0);
}

static void teardown(void)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}

TestSuite(journey_csv, .init = setup, .fini = teardown, .timeout = 120);

/* A CSV field: quoted, its quotes doubled. */
static void put_csv_field(FILE *f, const char *s, size_t n)
{
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"')
            fputc('"', f);
        fputc(s[i], f);
    }
    fputc('"', f);
}

/* train.csv (label,text) from the first N_TRAIN rows; unseen.txt (one text a
 * line) and the labels of the rest into labels[]. */
static int write_data(char labels[][16])
{
    FILE *in = fopen("data/topics.tsv", "r");
    cr_assert(in, "data/topics.tsv");
    char path[256], line[8192];
    snprintf(path, sizeof path, "%s/train.csv", dir);
    FILE *train = fopen(path, "w");
    snprintf(path, sizeof path, "%s/unseen.txt", dir);
    FILE *unseen = fopen(path, "w");
    cr_assert(train && unseen);
    fputs("label,text\n", train);
    int row = 0, n_unseen = 0;
    while (fgets(line, sizeof line, in)) {
        char *tab = strchr(line, '\t');
        cr_assert(tab, "data/topics.tsv:%d: no TAB", row + 1);
        *tab = '\0';
        char *text = tab + 1;
        text[strcspn(text, "\n")] = '\0';
        if (row++ < N_TRAIN) {
            put_csv_field(train, line, strlen(line));
            fputc(',', train);
            put_csv_field(train, text, strlen(text));
            fputc('\n', train);
        } else {
            fprintf(unseen, "%s\n", text);
            snprintf(labels[n_unseen++], 16, "%.15s", line);
        }
    }
    fclose(in);
    fclose(train);
    fclose(unseen);
    cr_assert_eq(row, N_ROWS, "data/topics.tsv has %d rows", row);
    return n_unseen;
}

/* The label of the most frequent class among n. */
static int majority(char labels[][16], int n)
{
    int best = 0;
    for (int i = 0; i < n; i++) {
        int count = 0;
        for (int j = 0; j < n; j++)
            count += strcmp(labels[i], labels[j]) == 0;
        best = count > best ? count : best;
    }
    return best;
}

Test(journey_csv, finetune_then_predict_beats_the_majority_class)
{
    static char labels[N_ROWS][16];
    int n = write_data(labels);
    char cmd[2048], log[8192], path[256];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *cfg = fopen(path, "w");
    fputs("{\"architectures\": [\"BertModel\"], \"vocab_size\": 30522, \"hidden_size\": 64, "
          "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"intermediate_size\": 128, "
          "\"max_position_embeddings\": 64, \"hidden_dropout_prob\": 0.3, "
          "\"attention_probs_dropout_prob\": 0.3}\n", cfg);
    fclose(cfg);
    snprintf(cmd, sizeof cmd, "%s finetune --config %s/config.json --vocab "
             "data/bert-base-uncased-vocab.txt --train %s/train.csv --task seq-cls --out "
             "%s/model --max-len 64 --batch-size 32 --lr 1e-3 --epochs 15 --quiet",
             BERTC_CLI, dir, dir, dir);
    cr_assert_eq(test_shell(cmd, TEST_STDOUT_AND_STDERR, log, sizeof log), 0, "%s", log);
    snprintf(cmd, sizeof cmd, "(%s predict --model %s/model --input %s/unseen.txt --max-len 64 "
             "--format jsonl > %s/predictions.jsonl)", BERTC_CLI, dir, dir, dir);
    cr_assert_eq(test_shell(cmd, TEST_STDERR, log, sizeof log), 0, "%s", log);

    snprintf(path, sizeof path, "%s/predictions.jsonl", dir);
    FILE *f = fopen(path, "r");
    cr_assert(f, "%s", path);
    char line[16384];
    int k = 0, right = 0;
    while (fgets(line, sizeof line, f) && k < n) {
        char want[40];
        snprintf(want, sizeof want, "\"label\": \"%.15s\"", labels[k]);
        right += strstr(line, want) != NULL;
        k++;
    }
    fclose(f);
    cr_assert_eq(k, n, "predict wrote %d lines for %d texts", k, n);
    double accuracy = (double)right / n, baseline = (double)majority(labels, n) / n;
    /* measured 0.67 against 0.35 (81 of 229) on x86-64 AVX-512 */
    cr_expect_geq(accuracy, baseline + 0.2, "unseen accuracy %.3f, majority baseline %.3f",
                  accuracy, baseline);
}
