/* zoo/train/finetune.c — bertc_finetune (zoo/train/finetune.h): the run.
 *
 *   prepare        the base model, the rows, the head, --max-len, the output
 *                  directory's plan, trainer_state.json (resume), the qa
 *                  windows: everything that can be refused, before anything
 *                  is written;
 *   train_options  the engine's options: the run's size (--epochs as steps,
 *                  the batch capped at the data), the task's defaults, the
 *                  fields --resume must find the same;
 *   run            bertc_train_run over the task (finetune_task.c), then
 *                  log.jsonl, trainer_state.json, loss.svg, the model when
 *                  no evaluation kept one, and the swap into --out. */
#include "zoo/train/finetune_internal.h"
#include "zoo/pictures/svg.h"

#include <math.h>
#include <string.h>
#include <sys/stat.h>

FinetuneOptions bertc_finetune_defaults(void)
{
    FinetuneOptions o = {.task = FT_SEQ_CLS, .doc_stride = -1, .stride = -1, .epochs = 3,
                         .train = bertc_train_defaults(), .out_mode = FINETUNE_OUT_NEW};
    o.train.steps = 0;              /* from epochs */
    o.train.lr = 0;                 /* by the base model */
    o.train.eval_every = -1;        /* a tenth of the run */
    o.train.checkpoint_every = -1;  /* at each evaluation */
    return o;
}

/* What a library caller can get wrong that the flags of `bertc finetune`
 * already refuse. */
int bertc_finetune_check_base(const char *who, const char *model, const char *config_file,
                              const BertConfig *config, const char *vocab, BertcError *err)
{
    int bases = !!model + !!config_file + !!config;
    if (bases != 1)
        return bertc_errorf(err, "%s: give one of model (a directory), config_file or config, "
                            "not %d", who, bases);
    if (!model != !!vocab)
        return bertc_errorf(err, "%s: %s", who, model ? "a model directory has its vocab.txt: "
                            "give no vocab" : "a config needs a vocab");
    return 0;
}

static int check_options(const FinetuneOptions *o, BertcError *err)
{
    if (bertc_finetune_check_base("fine-tuning", o->model, o->config_file, o->config, o->vocab,
                                  err) != 0)
        return -1;
    if (!o->train_file == !o->train_data || (o->eval_file && o->eval_data))
        return bertc_errorf(err, "fine-tuning: give the training rows as train_file or "
                            "train_data, and held-out rows (if any) as eval_file or eval_data");
    if (!o->out)
        return bertc_errorf(err, "fine-tuning: out (the model directory) is required");
    if ((unsigned)o->task > FT_MLM || (unsigned)o->out_mode > FINETUNE_OUT_IN_PLACE)
        return bertc_errorf(err, "fine-tuning: task %d or out_mode %d is not one of the enum's",
                            (int)o->task, (int)o->out_mode);
    if (o->max_len < 0 || o->max_len > INT32_MAX || o->doc_stride < -1 ||
        o->doc_stride > INT32_MAX || o->epochs < 1 || o->patience < 0)
        return bertc_errorf(err, "fine-tuning: max_len %lld, doc_stride %lld, epochs %lld or "
                            "patience %lld is out of range", (long long)o->max_len,
                            (long long)o->doc_stride, (long long)o->epochs,
                            (long long)o->patience);
    if (o->train.batch_size < 1 || o->train.batch_size > TRAIN_MAX_BATCH)
        return bertc_errorf(err, "--batch-size must be 1..%d, got %lld", TRAIN_MAX_BATCH,
                            (long long)o->train.batch_size);
    return 0;
}

/* ---- trainer_state.json ---------------------------------------------------- */

/* The best metric and the plateau so far, so that a resumed run keeps the
 * model it saved unless it beats it. */
static int read_state(const char *path, FinetuneData *data, BertcError *err)
{
    Arena *a;
    char *text;
    size_t n;
    JsonDoc *doc;
    int64_t bad = 0;
    int rc = bertc_read_file(path, 1 << 16, "a trainer_state.json", &a, &text, &n, err);
    if (rc == 0)
        rc = bertc_json_parse(a, path, text, n, &doc, err);
    if (rc == 0)
        rc = bertc_json_get_double(doc->root, "best_metric", &data->best, err) ||
             bertc_json_get_int(doc->root, "bad_evals", &bad, err);
    data->bad_evals = bad;
    /* -1e308 (write_state): no evaluation kept a model yet */
    data->saved = rc == 0 && data->best > -1e308;
    if (!data->saved)
        data->best = -INFINITY;
    if (a)
        bertc_arena_destroy(a);
    return rc == 0 ? 0 : -1;
}

static int write_state(const char *path, const FinetuneData *data, BertcError *err)
{
    FILE *fp = bertc_open_write(path, err);
    if (!fp)
        return -1;
    const char *metric = bertc_finetune_metric_name(data->kind);
    char quoted[64];
    bertc_json_quote(quoted, sizeof quoted, metric, strlen(metric));
    fprintf(fp, "{\"best_metric\": %.17g, \"bad_evals\": %lld, \"metric\": %s}\n",
            isfinite(data->best) ? data->best : -1e308, (long long)data->bad_evals, quoted);
    return fclose(fp) == 0 ? 0 : bertc_errorf(err, "%s: write failed", path);
}

static bool is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* ---- the engine's options ------------------------------------------------ */

double bertc_finetune_default_lr(const BertConfig *cfg, bool pretrained)
{
    if (!pretrained)
        return 5e-4;
    double width = cfg->hidden_size > 0 ? (double)cfg->hidden_size : 768.0;
    double lr = 5e-5 * pow(768.0 / width, 1.5);
    return lr < 1e-3 ? lr : 1e-3;
}

void bertc_train_note(void (*note)(void *user, const char *msg), void *user, const char *fmt,
                      ...)
{
    char msg[BERTC_ERROR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (note)
        note(user, msg);
    else
        bertc_warn("%s", msg);
}

/* The batch size, capped at the training examples (a bigger batch would
 * only repeat them: memory for nothing), and the steps of --epochs, which
 * must be a number of steps the engine takes. */
static int run_size(const FinetuneOptions *o, const FinetuneData *data, TrainOptions *opt,
                    BertcError *err)
{
    int64_t n = bertc_finetune_train_examples(data);   /* qa, --stride: windows */
    const char *what = n != data->n_train || data->kind == FT_QA ? "training windows"
                                                                 : "training rows";
    if (n < 1)
        return 0;   /* the engine refuses a task without examples */
    if (opt->batch_size > n) {
        bertc_train_note(o->note, o->note_user, "--batch-size %lld is more than the %lld %s: "
                         "batches of %lld",
             (long long)opt->batch_size, (long long)n, what, (long long)n);
        opt->batch_size = n;
    }
    /* data-parallel: a step reads batch_size examples on each rank */
    int64_t ranks = opt->collective ? opt->collective->ranks : 1;
    int64_t global = opt->batch_size * ranks;
    int64_t per_epoch = (n + global - 1) / global;
    if (!opt->steps && o->epochs > TRAIN_MAX_STEPS / per_epoch)
        return bertc_errorf(err, "--epochs %lld over %lld %s in batches of %lld is more than "
                            "%lld steps; give fewer --epochs", (long long)o->epochs,
                            (long long)n, what, (long long)opt->batch_size, TRAIN_MAX_STEPS);
    if (!opt->steps)
        opt->steps = o->epochs * per_epoch;
    return 0;
}

/* What --resume must find the same beside the engine's own fields: the
 * examples' length and (qa) the windows' stride. */
typedef struct TaskFields {
    char text[2][32];
    StMetadata meta[2];
} TaskFields;

/* The run's settings: o->train with the task's defaults filled in
 * (opt->task_fields point into *fields). */
static int train_options(const FinetuneOptions *o, const FinetuneData *data,
                         const char *checkpoint, bool pretrained, TaskFields *fields,
                         TrainOptions *opt, BertcError *err)
{
    *opt = o->train;
    if (run_size(o, data, opt, err) != 0)
        return -1;
    if (opt->lr == 0)
        opt->lr = bertc_finetune_default_lr(&data->model->cfg, pretrained);
    if (opt->eval_every < 0)
        opt->eval_every = opt->steps >= 10 ? opt->steps / 10 : 1;
    if (opt->checkpoint_every < 0)
        opt->checkpoint_every = opt->eval_every;
    if (!opt->checkpoint)
        opt->checkpoint = checkpoint;
    snprintf(fields->text[0], sizeof fields->text[0], "%d", (int)data->max_len);
    snprintf(fields->text[1], sizeof fields->text[1], "%d", (int)data->doc_stride);
    fields->meta[0] = (StMetadata){"max_len", fields->text[0]};
    fields->meta[1] = (StMetadata){"doc_stride", fields->text[1]};
    opt->task_fields = fields->meta;
    opt->n_task_fields = data->kind == FT_QA ? 2 : 1;
    return 0;
}

/* ---- the run ------------------------------------------------------------- */

/* log.jsonl (appended to on --resume), trainer_state.json, loss.svg and,
 * when the run is done and no evaluation saved one, the final model. A run
 * cut short (Ctrl-C, --stop-after) writes no model that was never
 * evaluated: its checkpoint holds the weights. */
static int write_outputs(bool resume, const char *dir, FinetuneData *data, const Model *m,
                         const TrainResult *res, bool done, BertcError *err)
{
    char path[BERTC_PATH_MAX];
    if (bertc_path_join(path, dir, "log.jsonl", "--out", err) != 0)
        return -1;
    FILE *log = resume ? bertc_open_append(path, err) : bertc_open_write(path, err);
    if (!log)
        return -1;
    bertc_finetune_write_log(data, res, log);
    if (fclose(log) != 0)
        return bertc_errorf(err, "%s: write failed", path);
    if (bertc_path_join(path, dir, "trainer_state.json", "--out", err) != 0 ||
        write_state(path, data, err) != 0 ||
        bertc_path_join(path, dir, "loss.svg", "--out", err) != 0)
        return -1;
    if (res->n_points && bertc_svg_training_curve(path, res, "bertc finetune",
                                                  bertc_finetune_metric_name(data->kind),
                                                  err) != 0)
        return -1;
    if (done && !data->saved && bertc_model_dir_save(dir, m, data->tok, err) != 0)
        return -1;
    return 0;
}

/* Everything a run needs, in one place for prepare and run. */
typedef struct Run {
    const FinetuneOptions *o;
    FinetuneBase base;
    FinetuneData *data;
    Model m;
    FinetuneOut out;
    Arena *arena;
} Run;

/* One note when training rows are longer than max_len: how many, and how
 * much of their text the model never reads. */
static void note_truncation(const FinetuneOptions *o, const FinetuneData *data)
{
    FinetuneLengths len;
    bertc_finetune_lengths(data, 0, data->n_train, &len);
    if (len.truncated == 0)
        return;
    if (data->text_stride >= 0) {
        bertc_train_note(o->note, o->note_user, "%lld of %lld training texts are longer than "
                         "--max-len %d tokens (the longest is %lld) and are read whole, in "
                         "windows sharing --stride %d tokens", (long long)len.truncated,
                         (long long)len.rows, (int)data->max_len, (long long)len.longest,
                         (int)data->text_stride);
        return;
    }
    bertc_train_note(o->note, o->note_user, "%lld of %lld training texts are longer than "
                     "--max-len %d tokens and are truncated to it (the longest is %lld; %.0f %% "
                     "of the training tokens go unread); --stride N reads them whole, in windows",
                     (long long)len.truncated, (long long)len.rows, (int)data->max_len,
                     (long long)len.longest, 100.0 * (double)len.cut / (double)len.tokens);
}

/* What is checked before anything is written (with train_options, the
 * run's size): the base model, the data, the head, --max-len, --out
 * (bertc_finetune_out_plan), trainer_state.json, the qa windows. */
static int prepare(Run *r, BertcError *err)
{
    const FinetuneOptions *o = r->o;
    FinetuneData *data = r->data;
    char state[BERTC_PATH_MAX];
    /* a checkpoint path that is not a file is refused before the model
     * loads (and warns about the keys it initialised) */
    if ((o->train.checkpoint && bertc_check_replaceable(o->train.checkpoint, err) != 0) ||
        bertc_finetune_open_base(o, &r->base, err) != 0 ||
        bertc_finetune_load_data(o, data, r->arena, err) != 0 ||
        bertc_finetune_build_model(o, &r->base, data, &r->m, r->arena, err) != 0 ||
        bertc_finetune_out_plan(&r->out, o->out, o->model, o->out_mode, o->train.resume,
                                err) != 0 ||
        bertc_path_join(state, r->out.dir, "trainer_state.json", "--out", err) != 0 ||
        (o->train.resume && is_file(state) && read_state(state, data, err) != 0))
        return -1;
    data->out = r->out.dir;
    data->tok = &r->base.tok;
    data->model = &r->m;
    if (data->kind == FT_QA)   /* long contexts are read in windows, never cut */
        return bertc_finetune_qa_windows(data, r->arena, err);
    if (bertc_finetune_text_windows(data, r->arena, err) != 0)
        return -1;
    note_truncation(o, data);   /* with windows, from their lengths: no second tokenizing */
    return 0;
}

/* The result the caller reads, whatever happened. */
static void result(const Run *r, const TrainOptions *opt, FinetuneResult *res)
{
    const FinetuneData *data = r->data;
    res->steps = opt->steps;
    res->batch_size = opt->batch_size;
    res->n_train = data->n_train;
    res->n_eval = data->n - data->n_train;
    res->n_parameters = r->m.reg ? bertc_registry_count(r->m.reg) : 0;
    res->metric_name = bertc_finetune_metric_name(data->kind);
    /* perplexity: data->best holds its negation (higher is better) */
    res->best_metric = res->n_eval == 0        ? NAN
                       : data->kind == FT_MLM ? -data->best
                                              : data->best;
    res->baseline = bertc_finetune_majority_baseline(data);
}

/* Train, then the files and the swap. */
static int run(Run *r, FinetuneResult *res, BertcError *err)
{
    const FinetuneOptions *o = r->o;
    TrainOptions opt;
    char checkpoint[BERTC_PATH_MAX];
    TaskFields fields;
    if (prepare(r, err) != 0)
        return -1;
    snprintf(res->dir, sizeof res->dir, "%s", r->out.dir);
    if (bertc_path_join(checkpoint, r->out.dir, "checkpoint.safetensors", "--out", err) != 0 ||
        train_options(o, r->data, checkpoint, r->base.weights[0] != '\0', &fields, &opt,
                      err) != 0)
        return -1;
    /* data-parallel: every rank has planned --out before rank 0 makes it;
     * rank 0 alone evaluates and writes (zoo/train/train.h) */
    bool writer = bertc_train_is_writer(&o->train);
    if (bertc_train_barrier(&o->train, err) != 0 ||
        (writer && bertc_finetune_out_make(&r->out, o->train.resume, err) != 0))
        return -1;
    TrainTask task = bertc_finetune_task(r->data);
    int rc = bertc_train_run(&r->m, &task, &opt, &res->train, err);
    /* done: every step, or a plateau; anything else keeps no model */
    bool done = rc == 0 && (res->train.stopped_early || res->train.steps_done == opt.steps);
    if (writer && (rc == 0 || res->train.interrupted)) {
        BertcError out_err;
        int out_rc = write_outputs(o->train.resume, r->out.dir, r->data, &r->m, &res->train,
                                   done, &out_err) != 0 ||
                     (done && bertc_finetune_out_commit(&r->out, &out_err) != 0);
        if (out_rc && rc == 0)
            *err = out_err;
        rc = rc || out_rc ? -1 : 0;
    }
    result(r, &opt, res);
    res->kept = rc == 0 && done;
    return rc;
}

int bertc_finetune(const FinetuneOptions *o, FinetuneResult *res, BertcError *err)
{
    memset(res, 0, sizeof *res);
    res->best_metric = res->baseline = NAN;
    if (check_options(o, err) != 0)
        return -1;
    Run r = {.o = o, .arena = bertc_arena_create("finetune", 1 << 20)};
    r.data = bertc_arena_calloc(r.arena, 1, sizeof *r.data);
    *r.data = (FinetuneData){.patience = o->patience, .best = -INFINITY, .best_eval = -1};
    int rc = run(&r, res, err);
    res->out_untouched = r.out.staged && r.out.made && !r.out.kept;
    bertc_finetune_close_base(&r.base);
    bertc_arena_destroy(r.arena);
    return rc;
}
