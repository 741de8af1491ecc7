/* main.c — the porting kit's example firmware (docs/porting.md): the
 * classifier `bertc export-c` wrote (model.h, model.c, model_data.c) in one
 * static arena of MODEL_ARENA_BYTES, classifying every line of
 * firmware_texts (texts.c) one at a time. For each it prints
 *
 *     text I: label K logits XXXXXXXX ... ticks T
 *
 * (K the arg max, each logit's float bits in hex: two builds agree when
 * these lines are equal; T the board's ticks for that one classification),
 * then what RAM the run used:
 *
 *     ram: arena A B of MODEL_ARENA_BYTES, stack S B, static D B, heap H B
 *
 * A: the arena's high water, found as the stack's is: the arena is painted
 * before model_init and the last word the model changed ends it. D: .data +
 * .bss without the arena. Before the texts, `spin: N turns, T ticks` times
 * board_spin, a loop of 2 N instructions, to check the tick counter.
 * The same file builds for the host (host/board.c). */
#include "board.h"
#include "model.h"

#include <stdio.h>
#include <string.h>

/* texts.c: the texts, one a line (newline-separated, in flash). */
extern const unsigned char firmware_texts[];
extern const unsigned long firmware_texts_len;

static unsigned char arena[MODEL_ARENA_BYTES] __attribute__((aligned(64)));

static const uint32_t arena_paint = 0xA5A5A5A5u;

static void paint_arena(void)
{
    for (size_t i = 0; i < sizeof arena; i += 4)
        memcpy(arena + i, &arena_paint, 4);
}

/* Bytes from the arena's start to the end of the last word not painted. */
static size_t arena_used(void)
{
    size_t n = sizeof arena;
    while (n >= 4 && memcmp(arena + n - 4, &arena_paint, 4) == 0)
        n -= 4;
    return n;
}

static int arg_max(const float *x, int n)
{
    int k = 0;
    for (int j = 1; j < n; j++)
        if (x[j] > x[k])
            k = j;
    return k;
}

/* Classifies text i (len bytes, read in place: no copy, no NUL) and prints
 * its line; 0, or -1 after printing the error. */
static int classify(int i, const char *text, size_t len)
{
    float logits[MODEL_N_LABELS];
    uint32_t t0 = board_ticks();
    int n = model_classify_bytes(text, len, logits, MODEL_N_LABELS);
    uint32_t ticks = board_ticks() - t0;
    if (n != MODEL_N_LABELS) {
        printf("text %d: error: %s\n", i, model_error());
        return -1;
    }
    printf("text %d: label %d logits", i, arg_max(logits, n));
    for (int j = 0; j < n; j++) {
        uint32_t bits;
        memcpy(&bits, &logits[j], 4);
        printf(" %08lx", (unsigned long)bits);
    }
    printf(" ticks %lu\n", (unsigned long)ticks);
    return 0;
}

/* Each line of firmware_texts classified where it lies (flash). A text of
 * any length is fine: the model reads its first MODEL_MAX_TOKENS - 2
 * wordpieces. */
static int classify_texts(void)
{
    int failed = 0, i = 0;
    const unsigned char *p = firmware_texts, *stop = firmware_texts + firmware_texts_len;
    while (p < stop) {
        const unsigned char *eol = memchr(p, '\n', (size_t)(stop - p));
        size_t len = (size_t)((eol ? eol : stop) - p);
        failed |= classify(i, (const char *)p, len) != 0;
        i++;
        p += len + 1;
    }
    printf("texts: %d classified, %s\n", i, failed ? "with errors" : "no error");
    return failed;
}

int main(void)
{
    uint32_t t0 = board_ticks();
    board_spin(1000000);
    printf("spin: 1000000 turns, %lu ticks at %lu Hz\n", (unsigned long)(board_ticks() - t0),
           (unsigned long)board_tick_hz);
    paint_arena();
    if (model_init(arena, sizeof arena) != 0) {
        printf("model_init: %s\n", model_error());
        return 1;
    }
    int failed = classify_texts();
    size_t data_bss = board_static_bytes();   /* 0 where the board cannot tell */
    printf("ram: arena %lu B of %lu, stack %lu B, static %lu B, heap %lu B\n",
           (unsigned long)arena_used(), (unsigned long)sizeof arena,
           (unsigned long)board_stack_used(),
           (unsigned long)(data_bss > sizeof arena ? data_bss - sizeof arena : 0),
           (unsigned long)board_heap_used());
    return failed;
}
