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
    ArenaChunk *spare;     /* released growth kept for the next (bertc_arena_release) */
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
 * the mark are given back (only before the first reset can there be any):
 * the largest is kept as the arena's spare, which the next growth reuses
 * when it is large enough, so the next layer does not fault in fresh pages. */
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

/* The kernels, the SIMD path and the threads (tensor/kernels.h). */
#include "tensor/kernels.h"

#endif /* BERTC_TENSOR_H */
