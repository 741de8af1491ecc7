/* cli/man.c — bertc(1), the manual page, written from the command tables
 * that `bertc CMD --help` prints (cli/cli.h, CliCommand): for each command
 * of the registry its usage, summary, description, the paragraphs only the
 * manual carries (.manual), every option with its argument, help text and
 * default, and its example. `bertc help --man` prints it and `make man`
 * writes docs/bertc.1 with it; test/test_cli_man.c fails when the committed
 * page is not what the tables give, so the page cannot fall behind a new
 * command or flag. The parts no table holds (NAME, SYNOPSIS, DESCRIPTION,
 * ENVIRONMENT, EXIT STATUS, EXAMPLES, FILES, SEE ALSO) are troff text here.
 *
 * Table text is plain: put_text escapes it for troff (a backslash, the
 * hyphens of flags, a '.' or '\'' starting a line, characters past ASCII as
 * \[uXXXX]) and sets every --flag it names in bold; troff hyphenates no
 * word that reads as code (a flag, token-cls, model_max_length, a path). */
#include "cli/cli.h"

#include <string.h>

/* ---- what no table holds ------------------------------------------------- */

static const char man_head[] =
    ".TH BERTC 1 \"2026\" \"bertc " BERTC_VERSION "\" \"User Commands\"\n"
    ".SH NAME\n"
    "bertc \\- run, train, inspect and use BERT models from one binary\n"
    ".SH SYNOPSIS\n"
    ".B bertc\n.I command\n.RI [ options ]\n.RI [ arguments ]\n.br\n"
    ".B bertc help\n.RI [ command ]\n.br\n"
    ".B bertc\n.I command\n.B \\-\\-help\n.br\n"
    ".B bertc \\-\\-version\n"
    ".SH DESCRIPTION\n"
    ".B bertc\n"
    "is the command of the bertc library, a from-scratch C11 implementation of\n"
    "BERT and its variants (the architectures listed under MODELS).\n"
    "It turns text into a model's inputs, runs a model on them, classifies,\n"
    "tags and embeds text, fine-tunes a model on your own labelled texts,\n"
    "prints what a safetensors file holds, draws attention maps, writes a page\n"
    "that walks a model's forward pass, quantises a model to int8, exports a\n"
    "classifier as C sources for a microcontroller, and trains the example\n"
    "models, with no Python.\n"
    ".PP\n"
    "Every option takes its value as\n"
    ".BI \\-\\- flag \" value\"\n"
    "or\n"
    ".BI \\-\\- flag = value\\fR;\n"
    ".B \\-\\-\n"
    "ends the options (a text that starts with two dashes comes after it).\n"
    ".B bertc help\n"
    "lists the commands;\n"
    ".BI \"bertc help \" command\n"
    "and\n"
    ".IB \"bertc \" command \" \\-\\-help\"\n"
    "print the command's usage, every option with its default, and an example:\n"
    "what this page lists under COMMANDS, from the same tables.\n"
    ".PP\n"
    "Wherever a model is taken,\n"
    ".BI \\-\\-model \" DIR\"\n"
    "reads a Hugging Face-style model directory as one unit:\n"
    ".IR config.json ,\n"
    ".I model.safetensors\n"
    "(Hugging Face or bertc parameter names),\n"
    ".I vocab.txt\n"
    "and\n"
    ".I tokenizer_config.json\n"
    "(do_lower_case, the special tokens, model_max_length).\n"
    "The separate\n"
    ".BR \\-\\-config ,\n"
    ".B \\-\\-weights\n"
    "and\n"
    ".B \\-\\-vocab\n"
    "options keep working; giving\n"
    ".B \\-\\-model\n"
    "together with\n"
    ".B \\-\\-config\n"
    "or\n"
    ".B \\-\\-weights\n"
    "is an error naming both.\n"
    ".SH COMMANDS\n";

static const char man_tail[] =
    ".SH ENVIRONMENT\n"
    ".TP\n.B BERTC_THREADS\n"
    "Worker threads, 1 to 64.\n"
    ".TP\n.B BERTC_ISA\n"
    "Forces a SIMD path: scalar, avx2, avx512 or neon.\n"
    "A value outside these, or a path the CPU lacks, is an error (exit 2)\n"
    "before any work.\n"
    ".TP\n.B BERTC_NAIVE\n"
    "1: attention, add-and-norm and the MLM loss run as their unfused ops\n"
    "(matmul, scale, add, softmax, dropout, matmul; add then layernorm; linear\n"
    "then cross_entropy), read once at the first forward.\n"
    "Slower; the same numbers within 1e\\-5 relative.\n"
    "Unset, empty or 0: the fused ops.\n"
    ".TP\n.B BERTC_INT8_ISA\n"
    "Forces the int8 GEMM path of quantised models: scalar, avx2, avxvnni,\n"
    "avx512vnni, neon, neondot or m4dsp (32-bit Arm DSP builds); checked like\n"
    ".BR BERTC_ISA .\n"
    "Unset, it follows\n"
    ".BR BERTC_ISA :\n"
    "with avx2 forced, no AVX-512 instruction runs.\n"
    ".TP\n.B BERTC_DATA_DIR\n"
    "Where\n.B bertc train\nfinds the examples' data/.\n"
    ".SH EXIT STATUS\n"
    "0 on success; 1 when the work failed (a file that cannot be read or is\n"
    "malformed, a model and inputs that do not match); 2 on a usage error (an\n"
    "unknown command or option, a missing or malformed value).\n"
    "Every error is one line on standard error, naming the file, the flag, the\n"
    "key or the tensor.\n"
    ".SH EXAMPLES\n"
    "Run a model directory on two sentences and look at the result:\n"
    ".PP\n.nf\n.RS\n"
    "bertc encode \\-\\-model my\\-model \\-\\-output in.safetensors \\(aqthe cat sat.\\(aq "
    "\\(aqa dog ran.\\(aq\n"
    "bertc run \\-\\-model my\\-model \\-\\-inputs in.safetensors \\-\\-output out.safetensors\n"
    "bertc show out.safetensors \\-\\-values 3\n"
    ".RE\n.fi\n.PP\n"
    "Fine-tune a classifier on a file of labelled texts, then use it:\n"
    ".PP\n.nf\n.RS\n"
    "bertc finetune \\-\\-model bert\\-base \\-\\-train train.csv \\-\\-out my\\-classifier\n"
    "bertc predict \\-\\-model my\\-classifier \\(aqa text to classify\\(aq\n"
    ".RE\n.fi\n.PP\n"
    "See what a model does with a sentence, step by step, in a browser:\n"
    ".PP\n.nf\n.RS\n"
    "bertc explain \\-\\-model my\\-model \\-\\-out page.html \\(aqthe cat sat on the mat.\\(aq\n"
    "bertc attention \\-\\-model my\\-model \\-\\-map lambda_q \\-\\-output gates.svg "
    "\\(aqthe cat sat.\\(aq\n"
    ".RE\n.fi\n.PP\n"
    "Train the topic classifier for 200 steps:\n"
    ".PP\n.nf\n.RS\n"
    "bertc train topics \\-\\-steps 200 \\-\\-out out/topics\n"
    ".RE\n.fi\n"
    ".SH FILES\n"
    ".TP\n.IR PREFIX /libexec/bertc/examples/\n"
    "The example programs\n.B bertc train\nruns.\n"
    ".TP\n.IR PREFIX /share/bertc/data/\n"
    "Their data.\n"
    ".SH SEE ALSO\n"
    "The README and docs/ of the bertc source tree: docs/predict.md,\n"
    "docs/finetune.md, docs/pretraining.md, docs/tokenizer.md,\n"
    "docs/quantization.md, docs/embedded.md, docs/porting.md and the rest;\n"
    "installed, docs/NAME.md is\n"
    ".IR PREFIX /share/doc/bertc/NAME.md\n"
    "(and the README is\n"
    ".IR PREFIX /share/doc/bertc/README.md ).\n";

/* ---- table text as troff ----------------------------------------------- */

static bool flag_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
}

/* "--name" at s[i], starting a word: set in bold. */
static bool flag_at(const char *s, size_t i)
{
    bool word_start = i == 0 || strchr(" ([/\"'`,", s[i - 1]) != NULL;
    return word_start && s[i] == '-' && s[i + 1] == '-' && s[i + 2] >= 'a' && s[i + 2] <= 'z';
}

/* The word at s (up to a space or a line end) reads as code: a --flag, a
 * value such as token-cls, a name such as max_position_embeddings or a
 * path, which troff should not hyphenate. */
static bool code_word(const char *s)
{
    size_t n = strcspn(s, " \n");
    return strcspn(s, "-_/.") < n;
}

/* One character of s at s[*i] (len bytes), escaped; advances *i. */
static void put_char(FILE *out, const char *s, size_t len, size_t *i)
{
    unsigned char c = (unsigned char)s[*i];
    if (c >= 0x80) {
        uint32_t cp;
        int n = bertc_utf8_decode((const uint8_t *)s, len, *i, &cp);
        if (n == 0) {   /* the tables are UTF-8; a stray byte shows as U+FFFD */
            cp = 0xFFFD;
            n = 1;
        }
        fprintf(out, "\\[u%04X]", (unsigned)cp);
        *i += (size_t)n;
        return;
    }
    if (c == '\\')
        fputs("\\e", out);
    else if (c == '-')
        fputs("\\-", out);
    else
        fputc(c, out);
    (*i)++;
}

/* s as troff text lines, from the start of a line: a '\n' ends a line, a
 * blank line starts a paragraph (.PP). Ends with a newline. */
static void put_text(FILE *out, const char *s)
{
    size_t len = strlen(s), i = 0;
    bool line_start = true;
    while (i < len) {
        if (s[i] == '\n') {
            bool paragraph = s[i + 1] == '\n';
            while (s[i] == '\n')
                i++;
            fputs(paragraph ? "\n.PP\n" : "\n", out);
            line_start = true;
            continue;
        }
        if (line_start && (s[i] == '.' || s[i] == '\''))
            fputs("\\&", out);   /* else troff reads the line as a request */
        if ((line_start || s[i - 1] == ' ') && code_word(s + i))
            fputs("\\%", out);   /* at a word's start: never hyphenated */
        line_start = false;
        if (!flag_at(s, i)) {
            put_char(out, s, len, &i);
            continue;
        }
        fputs("\\fB", out);
        while (i < len && flag_char(s[i]))
            put_char(out, s, len, &i);
        fputs("\\fR", out);
    }
    fputc('\n', out);
}

/* ---- one command -------------------------------------------------------- */

/* "Summary." from the table's "summary". */
static void put_sentence(FILE *out, const char *s)
{
    char line[512];
    size_t n = strlen(s);
    snprintf(line, sizeof line, "%s%s", s, n > 0 && s[n - 1] == '.' ? "" : ".");
    if (line[0] >= 'a' && line[0] <= 'z')
        line[0] = (char)(line[0] - 'a' + 'A');
    put_text(out, line);
}

/* .TP, "--flag ARG" (bold flag, italic argument), then its help and default
 * as `bertc CMD --help` writes them. */
static void put_option(FILE *out, const CliOption *o)
{
    fputs(".TP\n\\fB\\%", out);
    size_t len = strlen(o->name);
    for (size_t i = 0; i < len;)
        put_char(out, o->name, len, &i);
    fputs("\\fR", out);
    if (o->arg) {
        size_t n = strlen(o->arg);
        fputs(" \\fI", out);
        for (size_t i = 0; i < n;)
            put_char(out, o->arg, n, &i);
        fputs("\\fR", out);
    }
    fputc('\n', out);
    char help[1024];
    snprintf(help, sizeof help, "%s%s%s%s", o->help, o->def ? " [default: " : "",
             o->def ? o->def : "", o->def ? "]" : "");
    put_text(out, help);
}

static void put_command(FILE *out, const CliCommand *c)
{
    fprintf(out, ".SS \"bertc %s\"\n.B bertc %s\n", c->name, c->name);
    if (c->usage[0])
        put_text(out, c->usage);
    fputs(".PP\n", out);
    put_sentence(out, c->summary);
    if (c->description) {
        fputs(".PP\n", out);
        put_text(out, c->description);
    }
    if (c->manual) {
        fputs(".PP\n", out);
        put_text(out, c->manual);
    }
    for (int i = 0; i < c->n_options; i++)
        put_option(out, &c->options[i]);
    if (c->example) {
        fputs(".PP\nExample:\n.PP\n.nf\n.RS\n", out);
        put_text(out, c->example);
        fputs(".RE\n.fi\n", out);
    }
}

/* MODELS: every architecture of the zoo's table with its one-line summary,
 * read from its descriptor (a new architecture appears here by itself). */
static void put_models(FILE *out)
{
    fputs(".SH MODELS\n"
          "The value of architectures[0] in a model's config.json selects one of:\n", out);
    for (int i = 0; bertc_zoo_arch_at(i); i++) {
        const ModelArch *arch = bertc_zoo_arch_at(i);
        fprintf(out, ".TP\n.B %s\n", arch->name);
        put_sentence(out, arch->summary);
    }
}

void cli_print_man(const CliCommand *const *commands, int n, FILE *out)
{
    fputs(".\\\" bertc(1). Generated by `bertc help --man` (cli/man.c) from the command\n"
          ".\\\" tables of cli/*.c, which `bertc CMD --help` prints too: edit those, then\n"
          ".\\\" run `make man`.\n", out);
    fputs(man_head, out);
    for (int i = 0; i < n; i++)
        put_command(out, commands[i]);
    put_models(out);
    fputs(man_tail, out);
}
