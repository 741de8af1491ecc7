/*
 * tensor/tensor.h — the bottom layer of bertc: storage, shapes, arenas, the RNG
 * and the raw kernels. Nothing here knows about graphs or gradients-as-a-tape;
 * a "backward kernel" here is just another function on plain float arrays.
 *
 * Conventions used everywhere in bertc:
 *   - float32, contiguous, row-major, PyTorch dimension order: a batch of token
 *     vectors is (B, S, H), attention scores are (B, nh, S, S).
 *   - Shapes are int64_t; a tensor has 0..TENSOR_MAX_DIMS dimensions.
 *   - Memory comes from an Arena. Nothing in this layer calls malloc except the
 *     arena itself when it needs a new chunk (see arena_* below).
 *   - Backward kernels ACCUMULATE into their gradient outputs (dx += ...), the
 *     way PyTorch accumulates .grad.
 *
 * A small program using only this layer:
 *
 *     Arena *a = bertc_arena_create("scratch", 1 << 20);
 *     int64_t shape[2] = {2, 3};
 *     Tensor x = bertc_tensor_new(a, 2, shape);          // zero-filled (2,3)
 *     Tensor y = bertc_tensor_new(a, 2, shape);
 *     for (int64_t i = 0; i < x.numel; i++) x.data[i] = (float)i;
 *     bertc_kernel_softmax_rows(y.data, x.data, 2, 3);   // softmax over the last dim
 *     bertc_arena_destroy(a);
 */
#ifndef BERTC_TENSOR_H
#define BERTC_TENSOR_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
/* <stdio.h> before <inttypes.h>: newlib (arm-none-eabi) defines the PRI*64
 * macros only when <stdio.h> came first. */
#include <stdio.h>
#include <inttypes.h>

/* The library's version; checkpoints record it (zoo/train/train.h). */
#define BERTC_VERSION "0.1.0"

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */
/* ------------------------------------------------------------------------ */

/* Two kinds of error, as SPEC §3 says:
 *  1. Bad user data (a file, an id, a config): the function returns non-zero and
 *     fills a BertcError whose message names the file, key, shape or offset.
 *  2. Misuse inside the library (an op given incompatible shapes): bertc_fatal()
 *     formats one message naming the op and the shapes and hands it to the error
 *     hook. The default hook prints "bertc: <message>" to stderr and aborts; a
 *     program (or a test) may install its own hook, e.g. one that longjmps. */
#define BERTC_ERROR_LEN 512
typedef struct BertcError {
    char msg[BERTC_ERROR_LEN];
} BertcError;

/* Fill err (may be NULL) with a printf-style message. Always returns -1 so a
 * caller can write `return bertc_errorf(err, "...")`. The message is one
 * line: a control character in it (a newline in a quoted file name or flag
 * value) is written \n, \r or \xNN (a tab stays). A message longer than
 * BERTC_ERROR_LEN has the middle of its longest words (the paths in it)
 * replaced by "...", so the reason after a long path is kept. The same
 * holds for bertc_fatal's and bertc_warn's. */
int bertc_errorf(BertcError *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* An argument (a flag's value, a data cell) as an error message quotes it:
 * its first bytes, control characters written \n, \t, \r or \xNN, so the
 * message stays one line and short. Returns buf (BERTC_SHOWN bytes). */
#define BERTC_SHOWN 80
const char *bertc_shown(const char *arg, char buf[BERTC_SHOWN]);

typedef void (*BertcErrorHook)(const char *msg, void *user);
/* Install a hook (NULL restores the default). Returns the previous hook. */
BertcErrorHook bertc_set_error_hook(BertcErrorHook hook, void *user);
/* Report library misuse through the hook. If the hook returns, abort().
 * Inside a guard (bertc_catch_begin, below) it returns to the guard's setjmp
 * instead. */
_Noreturn void bertc_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Running library code on user input without ever aborting.
 *
 * Some failures cannot be checked for in advance by the function that meets
 * them: an arena that needs memory the machine does not have (a batch too
 * big for RAM), or an op deep inside a forward handed shapes it cannot take
 * because a check upstream was missing. They reach bertc_fatal. The entry
 * points that take user data (bertc_model_build, bertc_model_load, bertc_model_forward,
 * bertc_model_backward, bertc_train_run, bertc_zoo_run, the file readers) catch
 * it with a guard around the call that may fatal, so the function that runs
 * stays in view where the error is caught:
 *
 *     BertcCatch guard;
 *     bertc_catch_begin(&guard, err);      // from here a bertc_fatal ...
 *     if (setjmp(guard.env) != 0)
 *         return -1;                        // ... lands here, its message in err
 *     int rc = m->arch->forward(m->impl, &m->cfg, g, in, out, err);
 *     bertc_catch_end(&guard);
 *     return rc;
 *
 * bertc_fatal inside the call returns to the setjmp with 1, the message in
 * err (may be NULL) and the guard already ended; the error hook is not
 * called. Guards nest (the innermost catches); each thread has its own (a
 * fatal in a GEMM worker thread still aborts). No macro hides this: C
 * allows setjmp only as a whole condition like the one above (C11
 * 7.13.1.1), in the function that stays on the stack until
 * bertc_catch_end, and a reader should see where control comes back. So the
 * rules are setjmp's:
 *  - one call (or a few statements that never return) between
 *    bertc_catch_begin and bertc_catch_end: every path past the setjmp
 *    must reach bertc_catch_end;
 *  - where it lands, read only the parameters and locals set before the
 *    setjmp: a local of this function changed after it is indeterminate
 *    after the jump (C11 7.13.2.1). What the call makes (an arena, a
 *    graph) and the caller must free therefore lives in the caller's frame
 *    (zoo/models/run.c, zoo/train/train.c);
 *  - what the call allocated from arenas stays in those arenas and is freed
 *    with them; it must not hold other resources (a FILE, a malloc) across a
 *    call that may fatal - its caller owns those and releases them after. */
typedef struct BertcCatch {
    jmp_buf env;
    BertcError *err;
    struct BertcCatch *outer;
} BertcCatch;
void bertc_catch_begin(BertcCatch *guard, BertcError *err);
void bertc_catch_end(BertcCatch *guard);

/* The same guard around fn(ctx, err), for a caller whose work already has
 * this shape: fn's result, or -1 and err->msg on a fatal. */
typedef int (*BertcTryFn)(void *ctx, BertcError *err);
int bertc_try(BertcTryFn fn, void *ctx, BertcError *err);

/* Warnings (e.g. "unused keys in the weights file"): one line each, through
 * a hook that prints "bertc: warning: <message>" to stderr by default. */
typedef void (*BertcWarnHook)(const char *msg, void *user);
BertcWarnHook bertc_set_warn_hook(BertcWarnHook hook, void *user);
void bertc_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* bertc's own snprintf (tensor/format.c): d i u x X o c s p % f e g, flags
 * - + space 0, width, precision, '*', lengths hh h l ll z j t; C99's return
 * value. A FREESTANDING build compiles every snprintf/vsnprintf of the
 * library to these (the private tensor/format_internal.h), so the core needs
 * no stdio functions (newlib's printf can malloc).
 * Floats: up to 17 significant digits, then zeros; the same digits as glibc
 * whenever the power of ten that scales them is exact (|10^k| <= 10^22), so
 * %g, %e and %.9g of any float and %.17g of doubles in [1e-6, 1e38]; outside,
 * the 16th-17th digit may be one off. */
int bertc_snprintf(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int bertc_vsnprintf(char *buf, size_t len, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* ------------------------------------------------------------------------ */
/* Opening files (tensor/open_file.c; hosted builds only)                    */
/* ------------------------------------------------------------------------ */

/* The longest path bertc builds or takes, its NUL included: Linux's
 * PATH_MAX. A longer path is refused with an error naming what gave it,
 * never cut. */
#define BERTC_PATH_MAX 4096
/* The room a directory path leaves under BERTC_PATH_MAX for the names bertc
 * reads and writes in it ("/checkpoint.safetensors", and the ".tmp.<pid>.<12
 * letters>" an atomic write adds while it writes): a directory path has at
 * most BERTC_PATH_MAX - 1 - BERTC_PATH_DIR_ROOM bytes. */
#define BERTC_PATH_DIR_ROOM 64


#if !defined(BERTC_FREESTANDING)
/* Every path a user gives is opened through these, so nothing that is not a
 * regular file (a FIFO, a directory, a device such as /dev/zero or /dev/stdin,
 * a socket) can block a reader or feed it garbage: the open does not wait,
 * fstat decides, and the error is one line, "x.json: not a regular file (a
 * FIFO); give the path of a file". bertc_open_read hands back the file opened
 * "rb" and its size in *size (size may be NULL). bertc_open_write creates or
 * truncates a regular file ("wb"); it also accepts a character device, so
 * /dev/null works as an output. Both return NULL with err set on failure. */
FILE *bertc_open_read(const char *path, uint64_t *size, BertcError *err);
/* dir "/" name into out (BERTC_PATH_MAX bytes; no '/' is added after a dir
 * that ends in one). A path that does not fit is an error naming `what`,
 * the flag or role that gave dir ("--out", "the model directory"), and out
 * is then "". Every path bertc builds in a directory is built here. */
int bertc_path_join(char out[BERTC_PATH_MAX], const char *dir, const char *name,
                    const char *what, BertcError *err);
/* path is shorter than BERTC_PATH_MAX, dir short enough for a directory
 * (BERTC_PATH_DIR_ROOM): else an error naming `what`, the flag or role that
 * gave it. */
int bertc_path_check(const char *path, const char *what, BertcError *err);
int bertc_path_check_dir(const char *dir, const char *what, BertcError *err);
FILE *bertc_open_write(const char *path, BertcError *err);
/* As bertc_open_write, appending ("ab"): a log that a resumed run continues. */
FILE *bertc_open_append(const char *path, BertcError *err);
/* each(name, ctx) for every entry of dir but "." and "..", in the order the
 * file system gives, until one returns non-zero (that value is returned);
 * a dir that cannot be listed is an error naming it. The one place bertc
 * reads a directory (newlib, on bare metal, has none: an error there). */
int bertc_dir_each(const char *dir, int (*each)(const char *name, void *ctx), void *ctx,
                   BertcError *err);
/* lstat where there are symbolic links (POSIX), else stat. */
struct stat;
int bertc_link_stat(const char *path, struct stat *sb);
/* bytes[0..n) as the whole file at path (bertc_open_write), closed; a
 * failed write or close is an error naming the path. */
int bertc_write_file(const char *path, const void *bytes, size_t n, BertcError *err);
/* For a writer that renames a finished file over `path`: 0 when path does not
 * exist or is a regular file, else the same error (renaming over /dev/null
 * or a FIFO would replace it). */
int bertc_check_replaceable(const char *path, BertcError *err);
/* Same device and inode: the same file (or directory), whatever the
 * spelling of its path ("m", "./m/", a link to m). */
bool bertc_same_file(const char *a, const char *b);
typedef struct Arena Arena;
/* The whole regular file at `path`, NUL-terminated, in *text (len bytes),
 * held by a new arena *arena that the caller destroys, also on an error
 * (NULL when none was made). A file longer than max_bytes is an error that
 * says it is more than `what` ("a config.json") may have; running out of
 * memory is an error too, and the file is always closed. */
int bertc_read_file(const char *path, size_t max_bytes, const char *what, Arena **arena,
                    char **text, size_t *len, BertcError *err);
#endif

/* ------------------------------------------------------------------------ */
/* Arena allocator                                                           */
/* ------------------------------------------------------------------------ */

/* An arena hands out 64-byte-aligned blocks by bumping a pointer and frees them
 * all at once with bertc_arena_reset(). Two arenas carry a training run:
 *   - a persistent arena: parameters, their gradients, optimizer state;
 *   - a step arena: activations, the tape and non-leaf gradients of one step,
 *     reset after the optimizer step.
 * A growable arena (bertc_arena_create) mallocs a new chunk when the current one is
 * full. On bertc_arena_reset() the chunks are merged into one chunk big enough for
 * the high-water mark, so after the first step a training loop that does the
 * same work every step never calls malloc again (test/test_arena.c proves it).
 * A fixed arena (bertc_arena_init_fixed, for bare-metal targets) never mallocs: when
 * the caller's buffer is full, bertc_fatal says how many bytes were needed. */
typedef struct ArenaChunk ArenaChunk;
typedef struct Arena {
    const char *name;      /* for messages: "params", "step", ... */
    ArenaChunk *chunk;     /* current chunk (linked to older ones) */
    uint8_t *base;         /* start of the current chunk's data */
    size_t cap;            /* bytes in the current chunk */
    size_t used;           /* bytes used in the current chunk */
    size_t used_before;    /* bytes used in older chunks (still live) */
    size_t high_water;     /* max over time of used_before + used */
    size_t n_system_allocs;/* how many times this arena called malloc */
    int n_merges;          /* bertc_arena_reset merges of a grown chain into one chunk */
    bool fixed;            /* caller-owned buffer; never grows */
} Arena;

Arena *bertc_arena_create(const char *name, size_t initial_bytes);
/* bertc_arena_create, or NULL and the reason in err (may be NULL) where the
 * machine has not the memory (bertc_arena_create's bertc_fatal, caught). */
Arena *bertc_arena_create_checked(const char *name, size_t initial_bytes, BertcError *err);
void bertc_arena_init_fixed(Arena *a, const char *name, void *buffer, size_t bytes);
void bertc_arena_destroy(Arena *a);           /* frees chunks; for bertc_arena_create() arenas
                                           also frees the Arena itself */
void *bertc_arena_alloc(Arena *a, size_t bytes);        /* 64-byte aligned, uninitialised */
void *bertc_arena_calloc(Arena *a, size_t count, size_t size); /* zero-filled; checks overflow */
void bertc_arena_reset(Arena *a);
size_t bertc_arena_used(const Arena *a);
size_t bertc_arena_high_water(const Arena *a);

/* All growable arenas together may hold at most this many bytes (default,
 * set at the first use: the machine's RAM, and at most 7/8 of the memory
 * then available to take, MemAvailable + SwapFree on Linux; 0 sets the
 * default again). Growing past it, or a malloc
 * the system refuses, is a bertc_fatal naming the arena and the sizes, which
 * a guard (bertc_catch_begin) turns into an error: a batch too big for the machine is refused
 * before it is touched, not killed by the OS half-way (Linux overcommits). */
void bertc_arena_set_memory_limit(size_t bytes);
size_t bertc_arena_memory_limit(void);
size_t bertc_arena_memory_total(void);       /* bytes the growable arenas hold now */

/* A point to come back to: bertc_arena_release(a, m) frees every block allocated
 * after bertc_arena_mark(a) returned m and keeps the older ones. Inference uses it
 * to drop a layer's temporaries once its output is copied below the mark, so
 * activation memory is one layer's, not the whole model's. Chunks grown after
 * the mark are freed (only before the first reset can there be any). */
typedef struct ArenaMark {
    ArenaChunk *chunk;
    size_t used, used_before;
} ArenaMark;
ArenaMark bertc_arena_mark(const Arena *a);
void bertc_arena_release(Arena *a, ArenaMark m);

/* Every heap allocation bertc makes goes through these two functions, so a
 * test can count them and an embedded port can replace them. */
void *bertc_sys_alloc(size_t bytes);
void bertc_sys_free(void *p);
size_t bertc_sys_alloc_count(void);

/* Numbers from user text (tensor/parse.c): true when the whole
 * of s is one decimal number in range, stored in *out; false (and *out
 * untouched) for an empty string, a leading space or '+', trailing
 * characters ("10x", "1.5" for an integer), overflow or, for
 * bertc_parse_u64, any sign at all. bertc_parse_f64 also refuses "inf",
 * "nan" and values that overflow a double; one that underflows (1e-310, a
 * subnormal; 1e-400, 0) is kept. Every numeric flag of the CLI and
 * of the training engine goes through these. */
bool bertc_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out);
bool bertc_parse_u64(const char *s, uint64_t *out);
bool bertc_parse_f64(const char *s, double *out);

/* 3 when s[0..len) starts with a UTF-8 byte order mark (EF BB BF), else 0.
 * Files saved by Windows tools (Excel's "CSV UTF-8", Notepad) start with
 * one; the readers of text files skip it, as pandas ("utf-8-sig"), Hugging
 * Face datasets and tokenizers do. */
size_t bertc_utf8_bom(const char *s, size_t len);

/* UTF-8 (tensor/utf8.c), strict as Python's decoder (RFC 3629): no overlong
 * forms, no surrogates, nothing past U+10FFFF. bertc_utf8_decode: the length
 * (1-4) of the sequence at s[i] of s[0..len), its code point in *cp; 0 when
 * the bytes there start no valid sequence. bertc_utf8_valid: s[0..len) is
 * valid throughout. bertc_utf8_encode: cp (at most U+10FFFF) into out,
 * returning its length. */
int bertc_utf8_decode(const uint8_t *s, size_t len, size_t i, uint32_t *cp);
bool bertc_utf8_valid(const char *s, size_t len);
int bertc_utf8_encode(uint32_t cp, char out[4]);

/* ------------------------------------------------------------------------ */
/* Tensors                                                                   */
/* ------------------------------------------------------------------------ */

#define TENSOR_MAX_DIMS 6

/* A float32 tensor: a view of numel contiguous floats. The struct is small and
 * passed by value; it does not own its data (an arena does). */
typedef struct Tensor {
    float *data;
    int ndim;
    int64_t shape[TENSOR_MAX_DIMS];
    int64_t numel;
} Tensor;

/* An integer tensor for ids, masks, labels and positions. int32 internally;
 * files may carry I64 or I32 and the loaders convert (range-checked). */
typedef struct ITensor {
    int32_t *data;
    int ndim;
    int64_t shape[TENSOR_MAX_DIMS];
    int64_t numel;
} ITensor;

/* Shapes */
int64_t bertc_shape_numel(int ndim, const int64_t *shape);
bool bertc_shape_equal(int ndim_a, const int64_t *a, int ndim_b, const int64_t *b);
/* Writes "[2, 3, 4]" into buf (always NUL-terminated) and returns buf. */
char *bertc_shape_str(char *buf, size_t len, int ndim, const int64_t *shape);
#define SHAPE_STR_LEN 96
/* Writes the index "[i, j, k]" of flat element k of a row-major tensor of
 * this shape into buf (as bertc_shape_str) and returns buf. */
char *bertc_index_str(char *buf, size_t len, int ndim, const int64_t *shape, int64_t k);

/* NumPy/PyTorch broadcasting of a and b: on success fills out (ndim_out, shape)
 * and returns true; returns false when a dimension pair is neither equal nor 1. */
bool bertc_shape_broadcast(int ndim_a, const int64_t *a, int ndim_b, const int64_t *b,
                     int *ndim_out, int64_t *out);
/* Row-major strides of `shape` aligned to an output of out_ndim dims, with
 * stride 0 on every broadcast dimension. */
void bertc_shape_broadcast_strides(int ndim, const int64_t *shape, int out_ndim,
                             int64_t *strides);

Tensor bertc_tensor_new(Arena *a, int ndim, const int64_t *shape);       /* zero-filled */
Tensor bertc_tensor_empty(Arena *a, int ndim, const int64_t *shape);     /* uninitialised */
Tensor bertc_tensor_view(float *data, int ndim, const int64_t *shape);   /* no allocation */
ITensor bertc_itensor_new(Arena *a, int ndim, const int64_t *shape);     /* zero-filled */
ITensor bertc_itensor_view(int32_t *data, int ndim, const int64_t *shape);
bool bertc_tensor_same_shape(const Tensor *a, const Tensor *b);

/* ------------------------------------------------------------------------ */
/* Random numbers: SplitMix64 (SPEC §6.7.1), the only RNG in bertc          */
/* ------------------------------------------------------------------------ */

typedef struct Rng {
    uint64_t state;
} Rng;

Rng bertc_rng_seed(uint64_t seed);
uint64_t bertc_rng_next_u64(Rng *r);
double bertc_rng_uniform(Rng *r);                      /* ((u64 >> 11) + 0.5) * 2^-53, in (0,1] */
int64_t bertc_rng_geometric(Rng *r, double p);         /* floor(log(U) / log1p(-p)), >= 0 */
int64_t bertc_rng_randint(Rng *r, int64_t lo, int64_t hi); /* lo + u64 mod (hi-lo+1), inclusive */
double bertc_rng_normal(Rng *r);                       /* N(0,1), Box–Muller on two uniforms */

/* SplitMix64 in two halves: bertc_rng_next_u64 adds RNG_GAMMA to the state and
 * returns rng_mix(state). So draw i (0-based) of a stream that starts at state
 * s is rng_mix(s + (i+1) RNG_GAMMA) (mod 2^64): any draw can be computed on its
 * own, which is what lets bertc_kernel_dropout run in SIMD lanes and threads and
 * still give the stream's exact bits. */
#define RNG_GAMMA 0x9E3779B97F4A7C15ull
static inline uint64_t rng_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
/* bertc_rng_uniform's value for a draw u64: ((u64 >> 11) + 0.5) * 2^-53. */
double bertc_rng_uniform_of(uint64_t u64);
/* The integer form of the test `bertc_rng_uniform(r) >= p`: the smallest m in
 * [0, 2^53] with bertc_rng_uniform_of(m << 11) >= p, so that
 *     bertc_rng_uniform(r) >= p   exactly when   (bertc_rng_next_u64(r) >> 11) >= T.
 * (The uniform is non-decreasing in m, so the draws that pass are m >= T;
 * T = 2^53 means none does.) Found by bisection on that very expression, so
 * no rounding question is left open. */
uint64_t bertc_rng_uniform_threshold(double p);

/* ------------------------------------------------------------------------ */
/* CPU features and the SIMD path (tensor/isa.c)                             */
/* ------------------------------------------------------------------------ */

/* The instruction-set path used by GEMM and the row kernels. On x86-64 it is
 * chosen at run time (the best the CPU supports); on ARM, NEON is chosen at
 * compile time. BERTC_ISA=scalar|avx2|avx512|neon forces a path (tests force
 * each in turn); asking for a path the CPU lacks is a fatal error. Each path
 * is one row of the ISA table (tensor/isa.c, docs/adding-an-isa.md). */
typedef enum CpuIsa {
    ISA_SCALAR = 0,
    ISA_AVX2,
    ISA_AVX512,
    ISA_NEON,
    ISA_COUNT   /* how many there are (a loop's bound), not a path */
} CpuIsa;

CpuIsa bertc_cpu_isa(void);                 /* the active path */
bool bertc_cpu_isa_supported(CpuIsa isa);   /* can this CPU run it? */
void bertc_cpu_set_isa(CpuIsa isa);         /* force a path (fatal if unsupported) */
const char *bertc_cpu_isa_name(CpuIsa isa); /* "scalar", "avx2", "avx512", "neon" */
/* The path named `name` ("scalar", "avx2", ...) into *isa; false if none is. */
bool bertc_cpu_isa_from_name(const char *name, CpuIsa *isa);
/* BERTC_ISA, BERTC_INT8_ISA and BERTC_THREADS are user input: a program checks them before
 * any work (the `bertc` command and every example do, and exit 2), so a value
 * the library would quietly clamp (BERTC_THREADS=0) or stop on
 * (BERTC_ISA=bogus, or a path this CPU lacks) is one line naming the
 * variable and what it accepts. 0 when all are unset, empty or valid. */
int bertc_check_env(BertcError *err);

/* ------------------------------------------------------------------------ */
/* Vector math: exp, tanh, erf (tensor/vmath.c)                             */
/* ------------------------------------------------------------------------ */

/* bertc's own expf, tanhf and erff. libm differs between targets (SPEC §10),
 * so every kernel that must give the same bits everywhere uses these instead.
 * Each is range reduction + a polynomial in plain float arithmetic (no libm
 * call, no FMA contraction under -std=c11), so the scalar versions return the
 * same bits on every IEEE-754 target. The SIMD versions run the same algorithm
 * with fused multiply-adds, so they may differ from the scalar twin by an ulp.
 * Max error vs. a double-precision libm reference (test/test_vmath.c checks):
 * see the table at the top of tensor/vmath.c. Special values: NaN -> NaN;
 * expf overflows to +inf and underflows to 0 (through the subnormals);
 * tanhf and erff saturate at +-1. */
float bertc_expf(float x);
float bertc_tanhf(float x);
float bertc_erff(float x);

/* y[i] = f(x[i]) for n floats on the active bertc_cpu_isa() path; y may alias x. */
void bertc_expf_n(float *y, const float *x, int64_t n);
void bertc_tanhf_n(float *y, const float *x, int64_t n);
void bertc_erff_n(float *y, const float *x, int64_t n);

/* ------------------------------------------------------------------------ */
/* Row kernels (tensor/kernels*.c)                                           */
/* ------------------------------------------------------------------------ */

/* Each kernel_* below runs on the active bertc_cpu_isa() path. A scalar reference
 * (tensor/kernels.c, whose table the library's private
 * tensor/kernels_internal.h declares) is the fallback on every target and the
 * oracle the SIMD paths (tensor/row_kernels_simd.inc, compiled once per ISA)
 * are tested against (test/test_kernels_simd.c). All paths use
 * bertc_expf/erff/tanhf, never libm's, so results agree across targets.
 *
 * The backward kernels add into dx when `accumulate` is true; when it is
 * false they write dx, never reading it (it may hold garbage), with the
 * values that adding into zeros would give. */

/* Softmax over the last dim. x, y are (rows, n). y may alias x. */
void bertc_kernel_softmax_rows(float *y, const float *x, int64_t rows, int64_t n);
/* Given y = softmax(x) and dy: dx += y * (dy - sum(dy * y)). */
void bertc_kernel_softmax_rows_backward(float *dx, const float *y, const float *dy,
                                  int64_t rows, int64_t n, bool accumulate);
/* log_softmax over the last dim: y = x - max - log(sum(exp(x - max))). */
void bertc_kernel_log_softmax_rows(float *y, const float *x, int64_t rows, int64_t n);
/* Given y = log_softmax(x): dx += dy - exp(y) * sum(dy). */
void bertc_kernel_log_softmax_rows_backward(float *dx, const float *y, const float *dy,
                                      int64_t rows, int64_t n, bool accumulate);

/* The two passes of a softmax over one long row, for a loss that folds more
 * work around them (the MLM decoder, autograd/ops_linear_ce.c):
 *   bertc_kernel_add_max:  y[j] += b[j] (b NULL: y is only read); returns max_j y[j]
 *   bertc_kernel_exp_sum:  y[j] = exp(x[j] - shift); returns sum_j y[j] in double
 * y, b, x are (n), n >= 1; y may alias x. */
float bertc_kernel_add_max(float *y, const float *b, int64_t n);
double bertc_kernel_exp_sum(float *y, const float *x, float shift, int64_t n);

/* Multi-head attention one query row at a time (tensor/kernels_attention.c),
 * for inference: the (B, nh, Sq, S) scores are never stored.
 *   q, out (B, Sq, H) and k, v (B, S, H), nh heads of d = H / nh columns each
 *   (head h of row (b, i) at (b Sq + i) H + h d in q); mask (B, S) additive (0
 *   keep, a large negative value for padding) or NULL; scratch (B nh S) floats.
 *   out_bhi = sum_j softmax_j(alpha q_bhi . k_bhj + mask[b, j]) v_bhj
 * out may be q itself (each query row is read before its context is
 * written); it must not overlap k or v. Scalar on every path (the softmax
 * is the scalar reference's), so every target gives the same bits; the
 * (b, h) blocks run on the threads. */
void bertc_kernel_attention_rows(float *out, const float *q, const float *k, const float *v,
                                 const float *mask, float *scratch, int64_t B, int64_t Sq,
                                 int64_t S, int64_t H, int64_t nh, float alpha);

/* LayerNorm over the last dim (n), PyTorch semantics (biased variance):
 *   y = (x - mean) * rstd * gamma + beta,  rstd = 1/sqrt(var + eps).
 * x, y are (rows, n); gamma, beta are (n) or NULL (then 1 and 0);
 * mean and rstd are (rows) outputs kept for the backward (may be NULL). */
void bertc_kernel_layernorm_rows(float *y, float *mean, float *rstd, const float *x,
                           const float *gamma, const float *beta,
                           int64_t rows, int64_t n, float eps);
/* Accumulates dgamma (n), dbeta (n) and dx (rows, n), which it writes instead
 * when !dx_accumulate; any of them may be NULL. */
void bertc_kernel_layernorm_rows_backward(float *dx, float *dgamma, float *dbeta,
                                    const float *dy, const float *x,
                                    const float *mean, const float *rstd,
                                    const float *gamma, int64_t rows, int64_t n,
                                    bool dx_accumulate);

/* GELU, erf form (BERT): y = 0.5 x (1 + erf(x / sqrt 2)). x, y are (n). */
void bertc_kernel_gelu(float *y, const float *x, int64_t n);
void bertc_kernel_gelu_backward(float *dx, const float *x, const float *dy, int64_t n,
                          bool accumulate);
/* GELU, tanh form (BertSum, OpenNMT):
 *   y = 0.5 x (1 + tanh( sqrt(2/pi) (x + 0.044715 x^3) )). */
void bertc_kernel_gelu_tanh(float *y, const float *x, int64_t n);
void bertc_kernel_gelu_tanh_backward(float *dx, const float *x, const float *dy, int64_t n,
                               bool accumulate);

/* Inverted dropout on a, out, keep (n), with the randomness of n draws of
 * SplitMix64 from `state` (draw i is rng_mix(state + (i+1) RNG_GAMMA)):
 *   keep[i] = (draw_i >> 11) >= threshold      (threshold: bertc_rng_uniform_threshold(p))
 *   out[i]  = keep[i] ? a[i] * scale : 0
 * This is `keep[i] = bertc_rng_uniform(&r) >= p` for i = 0..n-1 bit for bit, on
 * every path and thread count; the caller advances its Rng by n draws. */
void bertc_kernel_dropout(const float *a, float *out, uint8_t *keep, int64_t n, uint64_t state,
                    uint64_t threshold, float scale);
/* Given keep and scale from the forward: da[i] += scale * dy[i] where keep[i]
 * (elements that were dropped leave da untouched, even a -0). */
void bertc_kernel_dropout_backward(const uint8_t *keep, const float *dy, float scale, float *da,
                             int64_t n);

/* y[i] += x[i] and y[i] += a * x[i] for n floats, on the active bertc_cpu_isa()
 * path. Every path does the same IEEE operations (a multiply, then an add:
 * no FMA), so all match the scalar references bit for bit. */
void bertc_kernel_add_inplace(float *y, const float *x, int64_t n);
void bertc_kernel_axpy(float *y, float a, const float *x, int64_t n);

/* One Adam/AdamW update of n parameters p with gradient g (NULL: zeros) and
 * moments m, v, in torch.optim's single-tensor order (nn/optim.c derives the
 * constants):
 *   decoupled: p *= decay        else: g += wd p
 *   m = m b1 + (1-b1) g;  v = v b2 + ((1-b2) g) g
 *   p += (neg_step m) / (sqrt(v) / bc2_sqrt + eps)
 * The SIMD path does the same IEEE operations in the same order (no FMA;
 * sqrt and division are correctly rounded), so it matches the scalar
 * reference bit for bit. */
typedef struct AdamStep {
    float b1, one_minus_b1, b2, one_minus_b2, neg_step, bc2_sqrt, eps, decay, wd;
    bool decoupled;
} AdamStep;
void bertc_kernel_adam(float *p, const float *g, float *m, float *v, int64_t n, const AdamStep *s);

/* ------------------------------------------------------------------------ */
/* GEMM: C = alpha * op(A) * op(B) + beta * C, row-major (tensor/gemm.c)     */
/* ------------------------------------------------------------------------ */

/* op(A) is (M, K): A itself is (M, K) with row stride lda, or, when trans_a,
 * A is (K, M) and op(A) = A^T. Likewise op(B) is (K, N): B is (K, N), or (N, K)
 * when trans_b. C is (M, N) with row stride ldc. When beta == 0, C is not read
 * (NaNs in C do not propagate), as in BLAS. M, N, K >= 1 (K may be 0 only with
 * beta scaling semantics: C = beta * C). */
void bertc_gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
          const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
          float *C, int64_t ldc);
/* GEMM's pack buffers (at most MC x KC floats of op(A) and KC x NC of op(B),
 * grown to the largest GEMM so far) come from the heap. After
 * bertc_gemm_set_pack_arena(a) they come from `a`, which must outlive every later
 * bertc_gemm call; NULL returns to the heap. FREESTANDING builds, which have no
 * heap, need it. Only with bertc_threads_count() == 1 (always so with NO_THREADS). */
void bertc_gemm_set_pack_arena(Arena *a);
/* The calling thread's pack buffers as they are now: the bytes of op(A)'s
 * and op(B)'s, the largest any GEMM since bertc_gemm_set_pack_arena asked
 * for. bertc_gemm_reserve_packs takes buffers of that size at once (from the
 * pack arena), so a model whose GEMMs were measured never grows them: an
 * arena never gets back a buffer that grew, so growing would cost the sum
 * of the sizes rather than the largest. */
void bertc_gemm_pack_sizes(size_t *a_bytes, size_t *b_bytes);
void bertc_gemm_reserve_packs(size_t a_bytes, size_t b_bytes);
/* batch independent GEMMs; matrix i of A starts at A + i * stride_a, etc.
 * stride_a == 0 reuses one A for every batch entry (likewise B). */
void bertc_gemm_batched(bool trans_a, bool trans_b, int64_t batch, int64_t M, int64_t N,
                  int64_t K, float alpha, const float *A, int64_t lda, int64_t stride_a,
                  const float *B, int64_t ldb, int64_t stride_b, float beta, float *C,
                  int64_t ldc, int64_t stride_c);

/* Pre-packed B: a matrix used as op(B) by many GEMMs (a weight, in inference)
 * is packed once into the exact order the micro-kernel reads, so later GEMMs
 * skip packing it. The layout is the GEMM's own B micro-panels
 * (tensor/gemm_kernel_internal.h), rank-KC block after rank-KC block:
 *     block pc (rows pc..pc+kc of op(B)), panel P (columns P*NR..P*NR+NR):
 *     data[pc * Npad + P * kc * NR + k * NR + j] = op(B)[pc + k][P * NR + j]
 * with Npad = N rounded up to NR (the padding columns are 0). bertc_gemm_prepacked
 * gives bitwise the results bertc_gemm gives on the unpacked matrix: the same
 * kernel, panels and order of sums. The layout belongs to the ISA that was
 * active when it was packed (BERTC_ISA may force another for later GEMMs;
 * a packed B keeps its own). */
typedef struct GemmPackedB {
    int64_t K, N;          /* op(B) is (K, N) */
    const void *kernel;    /* the micro-kernel it is laid out for (private) */
    float *data;           /* bertc_gemm_packed_b_floats(K, N) floats, 64-byte aligned */
} GemmPackedB;
/* Floats the packed op(B) (K, N) takes with the current ISA: K * Npad. Equal
 * to K * N exactly when N is a multiple of the kernel's NR (48 for AVX-512):
 * then a matrix can be packed in place of itself (bertc_gemm_pack_b with dst ==
 * a copy's source, see nn's bertc_registry_prepack). */
size_t bertc_gemm_packed_b_floats(int64_t K, int64_t N);
/* Packs op(B) (K, N) (B is (K, N), or (N, K) when trans_b, row stride ldb)
 * into dst (bertc_gemm_packed_b_floats(K, N) floats, 64-byte aligned, not
 * overlapping B) and describes it in *out. */
void bertc_gemm_pack_b(bool trans_b, int64_t K, int64_t N, const float *B, int64_t ldb, float *dst,
                 GemmPackedB *out);
/* The inverse: writes op(B) back into B (row stride ldb, same trans_b). */
void bertc_gemm_unpack_b(const GemmPackedB *pb, bool trans_b, float *B, int64_t ldb);
/* bertc_gemm with a pre-packed op(B): C = alpha * op(A) pb + beta * C; pb is (K, N). */
void bertc_gemm_prepacked(bool trans_a, int64_t M, float alpha, const float *A, int64_t lda,
                    const GemmPackedB *pb, float beta, float *C, int64_t ldc);

/* ------------------------------------------------------------------------ */
/* Int8 GEMM for inference: y = A W^T + b with int8 W and A (tensor/qgemm.c) */
/* ------------------------------------------------------------------------ */

/* Dynamic quantisation of a Linear, y (M, N) = A (M, K) W^T + bias, W (N, K):
 *
 *   W: int8, symmetric, one scale per output channel (row j of W):
 *        sw[j] = max_k |W[j,k]| / 127,   qw[j,k] = rne(W[j,k] * (1 / sw[j])) in [-127, 127]
 *   A: quantised the same way per row (sa[i], qa[i,k]) on the fly, inside bertc_qgemm
 *   acc[i,j] = sum_k qa[i,k] qw[j,k]                           exact, in int32
 *   y[i,j]   = ((float)acc[i,j] * sa[i]) * sw[j] + bias[j]     in this order, no FMA
 *
 * rne is round to nearest, ties to even; -128 never occurs (so every SIMD trick
 * in tensor/qgemm_*.c is exact). A row whose max |x| is below
 * BERTC_QUANT_MIN_AMAX (all zeros, or tiny enough that 1/scale would
 * overflow) gets scale 1 and all-zero q. Rows holding NaN or Inf give finite,
 * meaningless values (the same on every path), never a crash. Every int8
 * path (below) computes the same int32 accumulators and the same float
 * epilogue as the scalar oracle bertc_qgemm_reference, so all paths and all
 * thread counts give bitwise the same y (test/test_qgemm.c).
 *
 * A Linear's life:
 *     int8_t *qw = ...; float *sw = ...;                    // N*K bytes, N floats
 *     bertc_quantize_rows(W, N, K, K, qw, sw);              // or read them from a file
 *     void *mem = aligned 64: bertc_qgemm_packed_bytes(N, K) bytes;
 *     QuantPackedB pb;
 *     bertc_qgemm_pack_b(qw, sw, N, K, mem, &pb);           // for the active int8 path
 *     bertc_qgemm(M, A, K, &pb, bias, Y, N);                // every forward            */
#define BERTC_QUANT_MIN_AMAX 1e-30f

/* The int8 paths. The default follows bertc_cpu_isa(): AVX-512 VNNI when the
 * fp32 path is avx512 and the CPU has it; else AVX-VNNI (256-bit, VEX) when
 * the fp32 path is avx2 or avx512 and the CPU has it; else AVX2 (pmaddubsw);
 * NEON with sdot when the CPU has the dot-product extension, else NEON with
 * widening multiplies; SXTB16/SMLAD (m4dsp) when compiled for a 32-bit Arm
 * core with the DSP extension (Cortex-M4/M7/M33); else scalar. So
 * BERTC_ISA=avx2 (the laptop case) never runs AVX-512 code.
 * BERTC_INT8_ISA=scalar|avx2|avxvnni|avx512vnni|neon|neondot|m4dsp forces one (bertc_check_env validates it), as does
 * bertc_qgemm_set_isa. */
typedef enum QgemmIsa {
    QGEMM_ISA_SCALAR = 0,
    QGEMM_ISA_AVX2,
    QGEMM_ISA_AVXVNNI,
    QGEMM_ISA_AVX512VNNI,
    QGEMM_ISA_NEON,
    QGEMM_ISA_NEONDOT,
    QGEMM_ISA_M4DSP,
    QGEMM_ISA_COUNT
} QgemmIsa;
QgemmIsa bertc_qgemm_isa(void);                     /* the active int8 path */
bool bertc_qgemm_isa_supported(QgemmIsa isa);        /* can this CPU and build run it? */
/* Force a path (fatal if unsupported); QGEMM_ISA_COUNT returns to the default. */
void bertc_qgemm_set_isa(QgemmIsa isa);
const char *bertc_qgemm_isa_name(QgemmIsa isa);      /* "scalar", "avx2", ... */
/* Do the two paths read the same packed W? (scalar and m4dsp do.) */
bool bertc_qgemm_same_layout(QgemmIsa a, QgemmIsa b);
/* The path that runs W packed for `packed_for` here: itself when this build
 * and CPU can, else scalar when it reads the same layout, else QGEMM_ISA_COUNT. */
QgemmIsa bertc_qgemm_isa_for_pack(QgemmIsa packed_for);
bool bertc_qgemm_isa_from_name(const char *name, QgemmIsa *isa);

/* X (rows, cols), row stride ldx -> q (rows, cols) int8, row stride cols, and
 * scale (rows): the scheme above, row by row. Quantises a weight (N, K) per
 * output channel, or activations per token. */
void bertc_quantize_rows(const float *X, int64_t rows, int64_t cols, int64_t ldx, int8_t *q,
                         float *scale);

/* W quantised and packed for one int8 path's micro-kernel. The layout
 * (private to tensor/qgemm*.c): K padded with zeros to k_pad (a multiple of
 * 4); panels of nr output channels (N padded with zero channels to a multiple
 * of nr); in a panel, for each group of 4 k, the 4 bytes of each channel:
 *     data[P * nr * k_pad + g * nr * 4 + j * 4 + t] = qw[P * nr + j][4 g + t]
 * col_sum[j] = sum_k qw[j][k] and scale[j] = sw[j] (0 on padding channels).
 * A QuantPackedB belongs to the path it was packed for (isa): bertc_qgemm
 * with another path active is a bertc_fatal (pack again). */
typedef struct QuantPackedB {
    int64_t N, K, k_pad;   /* W is (N, K) */
    int nr;                /* channels per panel, for `isa` */
    int isa;               /* the QgemmIsa it was packed for */
    int8_t *data;          /* n_pad * k_pad bytes */
    int32_t *col_sum;      /* n_pad */
    float *scale;          /* n_pad */
} QuantPackedB;
/* Bytes bertc_qgemm_pack_b needs for a (N, K) weight: data, col_sum and
 * scale, each 64-byte aligned. The same for every path (N is padded to 48,
 * a multiple of every path's nr), so a buffer sized once fits any path. */
size_t bertc_qgemm_packed_bytes(int64_t N, int64_t K);
/* Packs qw (N, K) int8 (row stride K) with its scales sw (N) for the active
 * int8 path into mem (bertc_qgemm_packed_bytes(N, K) bytes, 64-byte aligned,
 * owned by the caller) and describes it in *out. */
void bertc_qgemm_pack_b(const int8_t *Wq, const float *scale, int64_t N, int64_t K, void *mem,
                        QuantPackedB *out);
/* Y (M, N) row stride ldc = A (M, K) row stride lda, quantised per row, times
 * the packed W^T, plus bias (N; NULL: none). Threads over row blocks and
 * channel panels (bertc_parallel_for), after quantising A into a buffer of
 * the calling thread (M x k_pad bytes, grown to the largest call so far,
 * from the heap). Bitwise the same result with any thread count. */
void bertc_qgemm(int64_t M, const float *A, int64_t lda, const QuantPackedB *pb,
                 const float *bias, float *C, int64_t ldc);
/* As bertc_gemm_set_pack_arena, for bertc_qgemm's buffer: after
 * bertc_qgemm_set_arena(a) it comes from `a` (which must outlive every later
 * bertc_qgemm); NULL returns to the heap. FREESTANDING builds need it. Only
 * with bertc_threads_count() == 1. With an arena, A is quantised MR rows at
 * a time (the path's register tile), so the buffer is MR x k_pad bytes and
 * MR scales rather than M x k_pad; Y is bitwise the same. */
void bertc_qgemm_set_arena(Arena *a);
/* Its size now (the largest call's rows of A held at once, times k_pad,
 * plus a float scale per row), and taking it at once, as
 * bertc_gemm_pack_sizes / bertc_gemm_reserve_packs. */
size_t bertc_qgemm_scratch_bytes(void);
void bertc_qgemm_reserve(size_t bytes);
/* The oracle: the same y from qw (N, K) (row stride K) and sw (N) by plain
 * loops, quantising A with the portable code. Slow; for tests. */
void bertc_qgemm_reference(int64_t M, const float *A, int64_t lda, const int8_t *Wq,
                           const float *scale, int64_t N, int64_t K, const float *bias,
                           float *C, int64_t ldc);

/* ------------------------------------------------------------------------ */
/* Threads: a small fork-join pool (tensor/threads.c)                        */
/* ------------------------------------------------------------------------ */

/* The number of threads parallel work may use: BERTC_THREADS if set, else the
 * online cores; 1 when built with NO_THREADS=1. bertc_gemm() splits a large GEMM
 * into up to this many pieces. */
int bertc_threads_count(void);
#define THREADS_MAX 64                /* the pool's size limit */
void bertc_threads_set_count(int n);        /* clamped to 1..THREADS_MAX */
/* A thread count given as text (--threads, BERTC_THREADS): a whole number
 * from 1 to THREADS_MAX into *n, else false. */
bool bertc_threads_parse_count(const char *text, int *n);
/* Calls fn(ctx, begin, end) on contiguous chunks covering [0, n), one chunk
 * per thread (at most bertc_threads_count() chunks), and returns when all are done.
 * The caller runs the first chunk. Called from inside a chunk, it runs the
 * whole range serially in the caller (nesting is safe). */
void bertc_parallel_for(int64_t n, void (*fn)(void *ctx, int64_t begin, int64_t end), void *ctx);

#endif /* BERTC_TENSOR_H */
