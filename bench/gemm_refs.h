/* bench/gemm_refs.h — the reference SGEMMs bench/gemm.c compares bertc with:
 * OpenBLAS, oneDNN (dnnl_sgemm) and BLIS (bli_sgemm), each loaded with dlopen
 * when installed (bench/install_refs.sh installs the Debian packages), never
 * linked, each at its best kernels for this CPU unless `avx2_only`:
 *
 * - OpenBLAS 0.3.21 does not know recent CPUs and falls back to weak kernels
 *   (Prescott/SSE3 on AVX-512 Xeons, Zen/AVX2 on AVX-512 EPYCs). It reads
 *   OPENBLAS_CORETYPE once, when it loads: so a child process loads it first
 *   and reports its core; when that core is below what cpuid offers,
 *   OPENBLAS_CORETYPE=SkylakeX (AVX-512) or Haswell (AVX2) is set before the
 *   real dlopen. The user's OPENBLAS_CORETYPE is kept.
 * - oneDNN is capped by DNNL_MAX_CPU_ISA / dnnl_set_max_cpu_isa; its threads
 *   are OpenMP's (omp_set_num_threads from the library's own libgomp).
 * - BLIS picks a sub-configuration by cpuid (BLIS 0.9 calls an AVX-512 Zen 4
 *   "zen3", AVX2); BLIS_ARCH_TYPE (an arch_t number, read at its first call)
 *   forces another: skx, or haswell on the AVX2 path.
 *
 * Static functions in a header, as bench/bench_util.h, so bench/gemm stays one
 * binary. */
#ifndef BERTC_BENCH_GEMM_REFS_H
#define BERTC_BENCH_GEMM_REFS_H

#include <ctype.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Row-major C = op(A) op(B), op(A) M x K, op(B) K x N, C M x N. */
typedef struct RefCall {
    bool ta, tb;
    int64_t M, N, K;
    const float *A, *B;
    float *C;
    int64_t lda, ldb, ldc;
} RefCall;

typedef struct Ref {
    const char *name;                      /* "openblas", "onednn", "blis" */
    void (*sgemm)(const struct Ref *r, const RefCall *c);
    void *fn;                              /* the library's entry point */
    char what[192];                        /* core/ISA/arch and threads it used */
} Ref;

enum { REF_OPENBLAS, REF_ONEDNN, REF_BLIS, REF_COUNT };

/* --- what the CPU offers ------------------------------------------------ */

typedef enum CpuLevel { LEVEL_SSE = 0, LEVEL_AVX = 1, LEVEL_AVX2 = 2, LEVEL_AVX512 = 3 } CpuLevel;

/* The best x86 vector level cpuid and the OS (XCR0) allow. */
static CpuLevel refs_cpu_level(void)
{
#if !defined(__x86_64__) && !defined(__i386__)
    return LEVEL_SSE; /* not x86: no core to force */
#else
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE) || !(c & bit_AVX))
        return LEVEL_SSE;
    unsigned xcr0_lo, xcr0_hi;
    __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    if ((xcr0_lo & 6) != 6)
        return LEVEL_SSE;
    bool fma = c & bit_FMA;
    __cpuid_count(7, 0, a, b, c, d);
    bool avx2 = fma && (b & bit_AVX2);
    bool avx512 = (b & bit_AVX512F) && (b & bit_AVX512DQ) && (b & bit_AVX512BW) &&
                  (b & bit_AVX512VL) && (xcr0_lo & 0xe0) == 0xe0;
    return avx512 && avx2 ? LEVEL_AVX512 : avx2 ? LEVEL_AVX2 : LEVEL_AVX;
#endif
}

/* The vector level of an OpenBLAS core name (openblas_get_corename()). */
static CpuLevel refs_openblas_core_level(const char *core)
{
    char low[64];
    size_t n = 0;
    for (; core[n] && n + 1 < sizeof low; n++)
        low[n] = (char)tolower((unsigned char)core[n]);
    low[n] = 0;
    const char *avx512[] = {"skylakex", "cooperlake", "sapphirerapids"};
    const char *avx2[] = {"haswell", "zen"};
    for (size_t i = 0; i < 3; i++)
        if (strcmp(low, avx512[i]) == 0)
            return LEVEL_AVX512;
    for (size_t i = 0; i < 2; i++)
        if (strcmp(low, avx2[i]) == 0)
            return LEVEL_AVX2;
    return strcmp(low, "sandybridge") == 0 ? LEVEL_AVX : LEVEL_SSE;
}

static void *refs_dlopen(const char *const *names, int n)
{
    void *lib = NULL;
    for (int i = 0; i < n && !lib; i++)
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    return lib;
}

/* --- OpenBLAS ---------------------------------------------------------- */

static const char *const OPENBLAS_NAMES[] = {"libopenblas.so.0", "libopenblas.so"};
typedef char *(*OpenblasCorename)(void);
typedef void (*OpenblasSetThreads)(int);
typedef int (*OpenblasGetThreads)(void);
/* cblas_sgemm(order, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc) */
typedef void (*CblasSgemm)(int, int, int, int, int, int, float, const float *, int,
                           const float *, int, float, float *, int);
enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111, CBLAS_TRANS = 112 };

/* The core OpenBLAS picks by itself, from a child process (the parent must
 * not load it before OPENBLAS_CORETYPE is settled); "" if it cannot tell. */
static void refs_openblas_probe_core(char *core, size_t size)
{
    core[0] = 0;
    int fd[2];
    if (pipe(fd) != 0)
        return;
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        void *lib = refs_dlopen(OPENBLAS_NAMES, 2);
        OpenblasCorename corename = lib ? (OpenblasCorename)dlsym(lib, "openblas_get_corename") : NULL;
        const char *name = corename ? corename() : "";
        ssize_t w = write(fd[1], name, strlen(name));
        _exit(w < 0);
    }
    close(fd[1]);
    ssize_t n = pid > 0 ? read(fd[0], core, size - 1) : -1;
    core[n > 0 ? n : 0] = 0;
    close(fd[0]);
    if (pid > 0)
        waitpid(pid, NULL, 0);
}

static void refs_openblas_sgemm(const Ref *r, const RefCall *c)
{
    ((CblasSgemm)r->fn)(CBLAS_ROW_MAJOR, c->ta ? CBLAS_TRANS : CBLAS_NO_TRANS,
                        c->tb ? CBLAS_TRANS : CBLAS_NO_TRANS, (int)c->M, (int)c->N, (int)c->K,
                        1.0f, c->A, (int)c->lda, c->B, (int)c->ldb, 0.0f, c->C, (int)c->ldc);
}

/* Settles OPENBLAS_CORETYPE before OpenBLAS loads and says why in `why`:
 * Haswell on the AVX2 path; else the best of OpenBLAS's own pick and an
 * inherited OPENBLAS_CORETYPE, raised to SkylakeX/Haswell when both are
 * below what cpuid offers (an environment may pin Haswell on AVX-512). */
static void refs_openblas_coretype(bool avx2_only, char *why, size_t size)
{
    if (avx2_only) {
        setenv("OPENBLAS_CORETYPE", "Haswell", 1);
        snprintf(why, size, "OPENBLAS_CORETYPE=Haswell for --isa avx2");
        return;
    }
    char own[64] = "", user[64] = "";
    if (getenv("OPENBLAS_CORETYPE"))
        snprintf(user, sizeof user, "%s", getenv("OPENBLAS_CORETYPE"));
    unsetenv("OPENBLAS_CORETYPE");
    refs_openblas_probe_core(own, sizeof own);
    CpuLevel cpu = refs_cpu_level(), mine = refs_openblas_core_level(own);
    CpuLevel theirs = user[0] ? refs_openblas_core_level(user) : LEVEL_SSE;
    if (cpu >= LEVEL_AVX2 && (mine > theirs ? mine : theirs) < cpu) {
        const char *best = cpu == LEVEL_AVX512 ? "SkylakeX" : "Haswell";
        setenv("OPENBLAS_CORETYPE", best, 1);
        snprintf(why, size, "forced OPENBLAS_CORETYPE=%s; its own pick %s%s%s", best,
                 own[0] ? own : "?", user[0] ? ", inherited OPENBLAS_CORETYPE=" : "", user);
    } else if (user[0] && theirs >= mine) {
        setenv("OPENBLAS_CORETYPE", user, 1);
        snprintf(why, size, "inherited OPENBLAS_CORETYPE=%s", user);
    } else {
        snprintf(why, size, "its own pick%s%s", user[0] ? " over inherited " : "", user);
    }
}

static bool refs_load_openblas(Ref *r, int threads, bool avx2_only)
{
    /* OpenBLAS's idle threads spin ~2^28 cycles after each call; with
     * alternating runs they would steal a core from bertc's next run. */
    setenv("OPENBLAS_THREAD_TIMEOUT", "4", 0);
    char why[160];
    refs_openblas_coretype(avx2_only, why, sizeof why);
    void *lib = refs_dlopen(OPENBLAS_NAMES, 2);
    if (!lib)
        return false;
    OpenblasCorename corename = (OpenblasCorename)dlsym(lib, "openblas_get_corename");
    OpenblasSetThreads set_threads = (OpenblasSetThreads)dlsym(lib, "openblas_set_num_threads");
    OpenblasGetThreads get_threads = (OpenblasGetThreads)dlsym(lib, "openblas_get_num_threads");
    r->fn = dlsym(lib, "cblas_sgemm");
    if (!r->fn || !set_threads || !get_threads || !corename) {
        fprintf(stderr, "gemm bench: OpenBLAS lacks cblas_sgemm/openblas_*_num_threads/corename\n");
        return false;
    }
    set_threads(threads);
    r->sgemm = refs_openblas_sgemm;
    snprintf(r->what, sizeof r->what, "core %s (%s), %d thread(s)", corename(), why, get_threads());
    return true;
}

/* --- oneDNN ------------------------------------------------------------ */

/* dnnl_sgemm(transa, transb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc), row-major */
typedef int (*DnnlSgemm)(char, char, int64_t, int64_t, int64_t, float, const float *, int64_t,
                         const float *, int64_t, float, float *, int64_t);
typedef int (*DnnlGetIsa)(void);
typedef int (*DnnlSetIsa)(int);
typedef void (*OmpSetThreads)(int);
typedef int (*OmpGetThreads)(void);

/* dnnl_cpu_isa_t of oneDNN 2.x and 3.x (the x86 values both share). */
static const char *refs_dnnl_isa_name(int isa)
{
    switch (isa) {
    case 0x1: return "sse41";
    case 0x3: return "avx";
    case 0x7: return "avx2";
    case 0x407: return "avx2_vnni";
    case 0xc07: return "avx2_vnni_2";
    case 0x27: return "avx512_core";
    case 0x67: return "avx512_core_vnni";
    case 0xe7: return "avx512_core_bf16";
    case 0x1ef: return "avx512_core_fp16";
    case 0x3e7: case 0xfef: return "avx512_core_amx";
    default: return "unknown";
    }
}

static void refs_onednn_sgemm(const Ref *r, const RefCall *c)
{
    ((DnnlSgemm)r->fn)(c->ta ? 'T' : 'N', c->tb ? 'T' : 'N', c->M, c->N, c->K, 1.0f, c->A, c->lda,
                       c->B, c->ldb, 0.0f, c->C, c->ldc);
}

static bool refs_load_onednn(Ref *r, int threads, bool avx2_only)
{
    const char *names[] = {"libdnnl.so.3", "libdnnl.so.2", "libdnnl.so"};
    if (avx2_only)
        setenv("DNNL_MAX_CPU_ISA", "AVX2", 1);
    void *lib = refs_dlopen(names, 3);
    if (!lib)
        return false;
    r->fn = dlsym(lib, "dnnl_sgemm");
    DnnlGetIsa get_isa = (DnnlGetIsa)dlsym(lib, "dnnl_get_effective_cpu_isa");
    DnnlSetIsa set_isa = (DnnlSetIsa)dlsym(lib, "dnnl_set_max_cpu_isa");
    OmpSetThreads omp_set = (OmpSetThreads)dlsym(lib, "omp_set_num_threads");
    OmpGetThreads omp_get = (OmpGetThreads)dlsym(lib, "omp_get_max_threads");
    if (!r->fn || !get_isa) {
        fprintf(stderr, "gemm bench: oneDNN lacks dnnl_sgemm/dnnl_get_effective_cpu_isa\n");
        return false;
    }
    if (avx2_only && set_isa)
        set_isa(0x7); /* dnnl_cpu_isa_avx2, before any primitive is made */
    if (omp_set)
        omp_set(threads);
    r->sgemm = refs_onednn_sgemm;
    const char *cap = getenv("DNNL_MAX_CPU_ISA");
    char used[32] = "its own threading";
    if (omp_get)
        snprintf(used, sizeof used, "%d OpenMP thread(s)", omp_get());
    snprintf(r->what, sizeof r->what, "isa %s (DNNL_MAX_CPU_ISA=%s), %s",
             refs_dnnl_isa_name(get_isa()), cap ? cap : "unset", used);
    return true;
}

/* --- BLIS -------------------------------------------------------------- */

/* bli_sgemm(transa, transb, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc):
 * BLIS takes a row and a column stride per operand, so op(A) and op(B) are
 * passed as views with no transpose flag. */
typedef void (*BliSgemm)(int, int, int64_t, int64_t, int64_t, const float *, const float *,
                         int64_t, int64_t, const float *, int64_t, int64_t, const float *,
                         float *, int64_t, int64_t);
typedef int (*BliArchId)(void);
typedef const char *(*BliArchString)(int);
typedef void (*BliSetThreads)(int64_t);
typedef int64_t (*BliGetThreads)(void);
enum { BLIS_NO_TRANSPOSE_FLAG = 0 };

static void refs_blis_sgemm(const Ref *r, const RefCall *c)
{
    const float one = 1.0f, zero = 0.0f;
    int64_t rsa = c->ta ? 1 : c->lda, csa = c->ta ? c->lda : 1;
    int64_t rsb = c->tb ? 1 : c->ldb, csb = c->tb ? c->ldb : 1;
    ((BliSgemm)r->fn)(BLIS_NO_TRANSPOSE_FLAG, BLIS_NO_TRANSPOSE_FLAG, c->M, c->N, c->K, &one,
                      c->A, rsa, csa, c->B, rsb, csb, &zero, c->C, c->ldc, 1);
}

/* BLIS's arch_t number for `name` ("skx", "haswell"), -1 if it has none. */
static int refs_blis_arch_id(BliArchString arch_string, const char *name)
{
    for (int id = 0; id < 64; id++) {
        const char *s = arch_string(id);
        if (!s)
            break;
        if (strcmp(s, name) == 0)
            return id;
        if (strcmp(s, "generic") == 0)
            break;
    }
    return -1;
}

static bool refs_load_blis(Ref *r, int threads, bool avx2_only)
{
    const char *names[] = {"libblis.so.4", "libblis.so.3", "libblis.so"};
    void *lib = refs_dlopen(names, 3);
    if (!lib)
        return false;
    r->fn = dlsym(lib, "bli_sgemm");
    BliArchId arch_id = (BliArchId)dlsym(lib, "bli_arch_query_id");
    BliArchString arch_string = (BliArchString)dlsym(lib, "bli_arch_string");
    BliSetThreads set_threads = (BliSetThreads)dlsym(lib, "bli_thread_set_num_threads");
    BliGetThreads get_threads = (BliGetThreads)dlsym(lib, "bli_thread_get_num_threads");
    if (!r->fn || !arch_id || !arch_string || !set_threads || !get_threads) {
        fprintf(stderr, "gemm bench: BLIS lacks bli_sgemm/bli_arch_*/bli_thread_*\n");
        return false;
    }
    /* BLIS_ARCH_TYPE is read at BLIS's first call: settle it before any. */
    char why[80] = "its own choice";
    const char *want = avx2_only ? "haswell" : refs_cpu_level() == LEVEL_AVX512 ? "skx" : NULL;
    int id = want && !getenv("BLIS_ARCH_TYPE") ? refs_blis_arch_id(arch_string, want) : -1;
    if (id >= 0) {
        char v[16];
        snprintf(v, sizeof v, "%d", id);
        setenv("BLIS_ARCH_TYPE", v, 1);
        snprintf(why, sizeof why, "BLIS_ARCH_TYPE=%d (%s)", id, want);
    }
    set_threads(threads);
    r->sgemm = refs_blis_sgemm;
    snprintf(r->what, sizeof r->what, "arch %s (%s), %lld thread(s)", arch_string(arch_id()), why,
             (long long)get_threads());
    return true;
}

/* Loads the references `wanted[i]` asks for into refs[]; a missing library is
 * one line on stderr and its slot stays empty (sgemm NULL). */
static int refs_load(Ref refs[REF_COUNT], const bool wanted[REF_COUNT], int threads, bool avx2_only)
{
    bool (*load[REF_COUNT])(Ref *, int, bool) = {refs_load_openblas, refs_load_onednn,
                                                 refs_load_blis};
    const char *names[REF_COUNT] = {"openblas", "onednn", "blis"};
    const char *pkgs[REF_COUNT] = {"libopenblas-dev", "libdnnl-dev", "libblis-dev"};
    int loaded = 0;
    for (int i = 0; i < REF_COUNT; i++) {
        refs[i] = (Ref){.name = names[i]};
        if (!wanted[i])
            continue;
        if (load[i](&refs[i], threads, avx2_only))
            loaded++;
        else {
            const char *e = dlerror();
            refs[i].sgemm = NULL;
            fprintf(stderr, "gemm bench: %s not loaded (%s); bench/install_refs.sh or "
                            "apt-get install %s\n", names[i], e ? e : "missing symbols", pkgs[i]);
        }
    }
    return loaded;
}

#endif
