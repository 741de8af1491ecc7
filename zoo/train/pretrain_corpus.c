/* zoo/train/pretrain_corpus.c — a plain-text corpus tokenised once into a
 * binary cache, then read a row at a time (zoo/train/pretrain.h).
 *
 * The cache, all integers little-endian:
 *
 *     offset  size  field
 *          0     8  "BERTCTOK"
 *          8     4  version (1)
 *         12     4  width: bytes a token id (2 when the vocabulary has at most
 *                   65,536 tokens, else 4)
 *         16     8  the corpus's size in bytes
 *         24     8  its modification time, seconds    } the corpus's
 *         32     8  and nanoseconds                     } fingerprint, with
 *         40     4  CRC-32 of its first and last 64 KiB } the sample's CRC
 *         44     4  CRC-32 of the vocabulary (each token and a newline)
 *         48     4  the vocabulary's size
 *         52     4  1 when the tokenizer lowercases
 *         56     8  tokens in the stream
 *         64     8  documents
 *         72        the stream: each document's WordPiece ids, then [SEP]
 *
 * A cache whose header differs from what the corpus and the tokenizer give
 * now is stale and rebuilt; one that is short or damaged too. The cache is
 * written beside its final name and renamed over it when complete, so a
 * run killed while tokenising leaves no half cache.
 *
 * Documents: one a line, or, when the corpus holds a blank line (spaces
 * and tabs only), the lines between blank lines. A line longer than
 * CHUNK_BYTES is tokenised in pieces cut at a space or punctuation (or a
 * character boundary), so memory never depends on the corpus. */
#include "zoo/train/pretrain.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#define CACHE_MAGIC "BERTCTOK"
#define CACHE_VERSION 1
#define HEADER_BYTES 72
#define SAMPLE_BYTES 65536
#define CHUNK_BYTES 65536      /* the longest piece of a line tokenised at once */

typedef struct Header {
    uint32_t width;
    uint64_t corpus_size;
    int64_t mtime_s, mtime_ns;
    uint32_t sample_crc, vocab_crc, vocab_size, lower;
    uint64_t n_tokens, n_docs;
} Header;

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_u32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void header_encode(const Header *h, uint8_t out[HEADER_BYTES])
{
    memcpy(out, CACHE_MAGIC, 8);
    put_u32(out + 8, CACHE_VERSION);
    put_u32(out + 12, h->width);
    put_u64(out + 16, h->corpus_size);
    put_u64(out + 24, (uint64_t)h->mtime_s);
    put_u64(out + 32, (uint64_t)h->mtime_ns);
    put_u32(out + 40, h->sample_crc);
    put_u32(out + 44, h->vocab_crc);
    put_u32(out + 48, h->vocab_size);
    put_u32(out + 52, h->lower);
    put_u64(out + 56, h->n_tokens);
    put_u64(out + 64, h->n_docs);
}

/* ---- the fingerprint of the corpus and the tokenizer ------------------ */

static uint32_t vocab_crc(const Tokenizer *tok)
{
    uint32_t crc = 0;
    for (int32_t id = 0; id < tok->V; id++) {
        const char *s = bertc_tokenizer_token(tok, id);
        crc = bertc_st_crc32(crc, s, strlen(s));
        crc = bertc_st_crc32(crc, "\n", 1);
    }
    return crc;
}

/* CRC-32 of the first and the last SAMPLE_BYTES of the file: an edit that
 * keeps the size and the time (a copy with cp -p) is still seen there. */
static int sample_crc(FILE *fp, uint64_t size, uint32_t *crc, const char *path, BertcError *err)
{
    uint8_t *buf = bertc_sys_alloc(SAMPLE_BYTES);
    if (!buf)
        return bertc_errorf(err, "%s: out of memory", path);
    *crc = 0;
    size_t n = fread(buf, 1, SAMPLE_BYTES, fp);
    *crc = bertc_st_crc32(*crc, buf, n);
    int rc = 0;
    if (size > 2 * SAMPLE_BYTES) {
        if (fseeko(fp, (off_t)(size - SAMPLE_BYTES), SEEK_SET) != 0)
            rc = bertc_errorf(err, "%s: cannot seek: %s", path, strerror(errno));
        n = rc == 0 ? fread(buf, 1, SAMPLE_BYTES, fp) : 0;
        *crc = bertc_st_crc32(*crc, buf, n);
    }
    bertc_sys_free(buf);
    if (rc == 0 && (ferror(fp) || fseeko(fp, 0, SEEK_SET) != 0))
        rc = bertc_errorf(err, "%s: read failed", path);
    return rc;
}

static int fingerprint(const char *corpus, const Tokenizer *tok, Header *h, BertcError *err)
{
    uint64_t size;
    FILE *fp = bertc_open_read(corpus, &size, err);
    if (!fp)
        return -1;
    struct stat sb;
    int rc = fstat(fileno(fp), &sb) != 0
                 ? bertc_errorf(err, "%s: cannot stat: %s", corpus, strerror(errno))
                 : sample_crc(fp, size, &h->sample_crc, corpus, err);
    fclose(fp);
    if (rc != 0)
        return -1;
    h->width = tok->V <= 65536 ? 2 : 4;
    h->corpus_size = size;
    h->mtime_s = (int64_t)sb.st_mtim.tv_sec;
    h->mtime_ns = (int64_t)sb.st_mtim.tv_nsec;
    h->vocab_crc = vocab_crc(tok);
    h->vocab_size = (uint32_t)tok->V;
    h->lower = tok->do_lower_case;
    return 0;
}

/* ---- tokenising --------------------------------------------------------- */

/* The writer's state: the output, the ids waiting to be written, counts. */
typedef struct Writer {
    FILE *out;
    const char *tmp;
    int width;
    uint8_t buf[1 << 16];
    size_t used;
    uint64_t n_tokens, n_docs;
    bool doc_open;            /* the current document has a token */
} Writer;

static int flush_ids(Writer *w, BertcError *err)
{
    if (w->used && fwrite(w->buf, 1, w->used, w->out) != w->used)
        return bertc_errorf(err, "%s: write failed (disk full?)", w->tmp);
    w->used = 0;
    return 0;
}

static int put_id(Writer *w, int32_t id, BertcError *err)
{
    if (w->used + 4 > sizeof w->buf && flush_ids(w, err) != 0)
        return -1;
    for (int i = 0; i < w->width; i++)
        w->buf[w->used++] = (uint8_t)((uint32_t)id >> (8 * i));
    w->n_tokens++;
    return 0;
}

static int end_doc(Writer *w, const Tokenizer *tok, BertcError *err)
{
    if (!w->doc_open)
        return 0;
    w->doc_open = false;
    w->n_docs++;
    return put_id(w, tok->sep_id, err);
}

/* One piece of a line: its WordPiece ids without [CLS] and [SEP]. */
static int tokenise_piece(Writer *w, const Tokenizer *tok, Arena *scratch, const char *text,
                          size_t len, const char *path, int64_t line, BertcError *err)
{
    Encoding enc;
    BertcError why;
    bertc_arena_reset(scratch);
    if (bertc_tokenizer_encode(tok, scratch, text, len, NULL, 0, 0, false, &enc, &why) != 0)
        return bertc_errorf(err, "%s:%lld: %s", path, (long long)line, why.msg);
    for (int32_t t = 1; t + 1 < enc.S; t++) {
        if (put_id(w, enc.input_ids[t], err) != 0)
            return -1;
        w->doc_open = true;
    }
    return 0;
}

static bool is_blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return false;
    return true;
}

/* Where to cut a piece of a line that fills the buffer: after its last
 * space or ASCII punctuation (BERT's basic tokenizer splits there anyway,
 * so "a,b" cut after the comma gives the ids of the whole), else at the
 * start of its last UTF-8 character. */
static size_t cut_point(const char *s, size_t n)
{
    for (size_t i = n; i > n / 2; i--)
        if (s[i - 1] == ' ' || s[i - 1] == '\t' || ispunct((unsigned char)s[i - 1]))
            return i;
    size_t i = n;
    while (i > 1 && ((unsigned char)s[i - 1] & 0xC0) == 0x80)
        i--;
    return i > 1 ? i - 1 : n;
}

/* Reads the corpus a line at a time (a line longer than CHUNK_BYTES in
 * pieces), dropping NUL bytes and a leading byte order mark, and calls
 * each(line or piece, bytes, line number, whole) for each; `whole` is false
 * for every piece of a long line but its last. */
typedef int (*LineFn)(void *ctx, const char *s, size_t n, int64_t line, bool whole,
                      BertcError *err);

static int each_line(const char *path, LineFn each, void *ctx, BertcError *err)
{
    FILE *fp = bertc_open_read(path, NULL, err);
    if (!fp)
        return -1;
    char *buf = bertc_sys_alloc(CHUNK_BYTES + 1);
    if (!buf) {
        fclose(fp);
        return bertc_errorf(err, "%s: out of memory for a line buffer", path);
    }
    size_t n = 0;
    int64_t line = 1;
    bool first = true;
    int c, rc = 0;
    while (rc == 0 && (c = getc_unlocked(fp)) != EOF) {
        if (c == 0)
            continue;   /* NUL: dropped, as clean_text drops it */
        if (c == '\n') {
            size_t skip = first ? bertc_utf8_bom(buf, n) : 0;
            rc = each(ctx, buf + skip, n - skip, line++, true, err);
            n = 0;
            first = false;
            continue;
        }
        buf[n++] = (char)c;
        if (n == CHUNK_BYTES) {
            size_t skip = first ? bertc_utf8_bom(buf, n) : 0, cut = cut_point(buf, n);
            rc = each(ctx, buf + skip, cut - skip, line, false, err);
            memmove(buf, buf + cut, n - cut);
            n -= cut;
            first = false;
        }
    }
    if (rc == 0 && ferror(fp))
        rc = bertc_errorf(err, "%s: read failed", path);
    if (rc == 0 && n > 0) {
        size_t skip = first ? bertc_utf8_bom(buf, n) : 0;
        rc = each(ctx, buf + skip, n - skip, line, true, err);
    }
    bertc_sys_free(buf);
    fclose(fp);
    return rc;
}

typedef struct Tokenising {
    Writer *w;
    const Tokenizer *tok;
    Arena *scratch;
    const char *path;
    bool blank_lines;         /* documents end at blank lines (else at every line) */
    bool saw_blank;           /* the scan: a blank line was seen */
} Tokenising;

static int scan_line(void *ctx, const char *s, size_t n, int64_t line, bool whole,
                     BertcError *err)
{
    (void)line;
    (void)err;
    Tokenising *t = ctx;
    if (whole && is_blank(s, n))
        t->saw_blank = true;
    return t->saw_blank;   /* stop the scan at the first blank line */
}

static int tokenise_line(void *ctx, const char *s, size_t n, int64_t line, bool whole,
                         BertcError *err)
{
    Tokenising *t = ctx;
    if (whole && is_blank(s, n))
        return end_doc(t->w, t->tok, err);
    if (n && tokenise_piece(t->w, t->tok, t->scratch, s, n, t->path, line, err) != 0)
        return -1;
    return whole && !t->blank_lines ? end_doc(t->w, t->tok, err) : 0;
}

static int write_cache(const char *corpus, const Tokenizer *tok, Header *h, const char *tmp,
                       BertcError *err)
{
    Writer *w = bertc_sys_alloc(sizeof *w);
    if (!w)
        return bertc_errorf(err, "out of memory tokenising %s", corpus);
    memset(w, 0, sizeof *w);
    Tokenising t = {.w = w, .tok = tok, .path = corpus,
                    .scratch = bertc_arena_create("corpus line", 1 << 20)};
    int rc = each_line(corpus, scan_line, &t, err);
    if (rc > 0)
        rc = 0;   /* the scan stopped at a blank line */
    t.blank_lines = t.saw_blank;
    w->width = (int)h->width;
    w->tmp = tmp;
    w->out = rc == 0 ? bertc_open_write(tmp, err) : NULL;
    if (!w->out)
        rc = -1;
    uint8_t head[HEADER_BYTES] = {0};
    if (rc == 0 && fwrite(head, 1, sizeof head, w->out) != sizeof head)
        rc = bertc_errorf(err, "%s: write failed", tmp);
    if (rc == 0)
        rc = each_line(corpus, tokenise_line, &t, err);
    if (rc == 0)
        rc = end_doc(w, tok, err) || flush_ids(w, err);
    h->n_tokens = w->n_tokens;
    h->n_docs = w->n_docs;
    header_encode(h, head);
    if (rc == 0 && (fseeko(w->out, 0, SEEK_SET) != 0 ||
                    fwrite(head, 1, sizeof head, w->out) != sizeof head ||
                    fflush(w->out) != 0 || fsync(fileno(w->out)) != 0))
        rc = bertc_errorf(err, "%s: write failed", tmp);
    if (w->out && fclose(w->out) != 0 && rc == 0)
        rc = bertc_errorf(err, "%s: write failed", tmp);
    bertc_arena_destroy(t.scratch);
    bertc_sys_free(w);
    return rc ? -1 : 0;
}

/* ---- opening ------------------------------------------------------------ */

/* The cache at c->path matches h (the fingerprint): 0 and c filled; 1:
 * missing or stale. */
static int try_open(PretrainCorpus *c, const Header *h)
{
    int fd = open(c->path, O_RDONLY);
    if (fd < 0)
        return 1;
    uint8_t head[HEADER_BYTES], want[HEADER_BYTES];
    Header mine = *h;
    struct stat sb;
    bool ok = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) &&
              pread(fd, head, sizeof head, 0) == (ssize_t)sizeof head;
    if (ok) {
        mine.n_tokens = get_u64(head + 56);
        mine.n_docs = get_u64(head + 64);
        header_encode(&mine, want);
        ok = memcmp(head, want, sizeof head) == 0 && get_u32(head + 8) == CACHE_VERSION &&
             (uint64_t)sb.st_size == HEADER_BYTES + mine.n_tokens * h->width;
    }
    if (!ok) {
        close(fd);
        return 1;
    }
    c->fd = fd;
    c->width = (int)h->width;
    c->header_bytes = HEADER_BYTES;
    c->n_tokens = (int64_t)mine.n_tokens;
    c->n_docs = (int64_t)mine.n_docs;
    return 0;
}

int bertc_pretrain_corpus_open(PretrainCorpus *c, const char *corpus, const Tokenizer *tok,
                               const char *cache_path, bool *rebuilt, BertcError *err)
{
    memset(c, 0, sizeof *c);
    c->fd = -1;
    c->cls_id = tok->cls_id;
    c->sep_id = tok->sep_id;
    *rebuilt = false;
    Header h = {0};
    char tmp[BERTC_PATH_MAX];
    if (bertc_path_check(cache_path, "the token cache", err) != 0 ||
        fingerprint(corpus, tok, &h, err) != 0)
        return -1;
    snprintf(c->path, sizeof c->path, "%s", cache_path);
    if (try_open(c, &h) == 0)
        return 0;
    if (bertc_check_replaceable(cache_path, err) != 0)
        return -1;
    int len = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", cache_path, (long)getpid());
    if (len < 0 || (size_t)len >= sizeof tmp)
        return bertc_errorf(err, "%s: the token cache's path is too long", cache_path);
    if (write_cache(corpus, tok, &h, tmp, err) != 0) {
        unlink(tmp);
        return -1;
    }
    if (rename(tmp, cache_path) != 0) {
        int e = errno;
        unlink(tmp);
        return bertc_errorf(err, "%s: cannot rename the new token cache into place: %s",
                            cache_path, strerror(e));
    }
    *rebuilt = true;
    if (try_open(c, &h) != 0)
        return bertc_errorf(err, "%s: the token cache just written does not read back",
                            cache_path);
    return 0;
}

void bertc_pretrain_corpus_close(PretrainCorpus *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

int bertc_pretrain_corpus_read(const PretrainCorpus *c, int64_t first, int64_t n, int32_t *ids,
                               BertcError *err)
{
    uint8_t buf[4096];
    int64_t done = 0;
    if (first < 0 || n < 0 || first + n > c->n_tokens)
        return bertc_errorf(err, "%s: tokens %lld..%lld are outside the stream's %lld", c->path,
                            (long long)first, (long long)(first + n), (long long)c->n_tokens);
    while (done < n) {
        int64_t k = n - done, cap = (int64_t)sizeof buf / c->width;
        k = k < cap ? k : cap;
        off_t at = (off_t)(c->header_bytes + (first + done) * c->width);
        ssize_t got = pread(c->fd, buf, (size_t)(k * c->width), at);
        if (got != (ssize_t)(k * c->width))
            return bertc_errorf(err, "%s: read failed at byte %lld (the cache changed while "
                                "in use?)", c->path, (long long)at);
        for (int64_t i = 0; i < k; i++)
            ids[done + i] = c->width == 2 ? (int32_t)(buf[2 * i] | buf[2 * i + 1] << 8)
                                          : (int32_t)get_u32(buf + 4 * i);
        done += k;
    }
    return 0;
}

int64_t bertc_pretrain_rows(const PretrainCorpus *c, int64_t max_len)
{
    int64_t W = max_len - 2, rows = c->n_tokens / W;
    return rows == 0 && c->n_tokens > 0 ? 1 : rows;
}

int bertc_pretrain_row(const PretrainCorpus *c, int64_t r, int64_t max_len, int32_t pad_id,
                       int32_t *ids, int64_t *l, BertcError *err)
{
    int64_t W = max_len - 2, first = r * W;
    int64_t n = first + W <= c->n_tokens ? W : c->n_tokens - first;
    ids[0] = c->cls_id;
    if (bertc_pretrain_corpus_read(c, first, n, ids + 1, err) != 0)
        return -1;
    ids[n + 1] = c->sep_id;
    for (int64_t t = n + 2; t < max_len; t++)
        ids[t] = pad_id;
    *l = n + 2;
    return 0;
}
