/* board.h — what the example firmware (main.c) asks of the board it runs on.
 *
 * cortex-m4f/startup.c implements it for QEMU's mps2-an386 (and, with its
 * memory map changed, for any Cortex-M4F board); host/board.c for a PC, so
 * the same main.c and exported model print the same lines on both.
 * docs/porting.md says how each figure is measured. */
#ifndef BOARD_H
#define BOARD_H

#include <stddef.h>
#include <stdint.h>

/* A counter of the CPU clock, wrapping at 2^32: SysTick on a Cortex-M (CPU
 * cycles on silicon; under `qemu-system-arm -icount shift=0`, one tick per
 * 1e9 / board_tick_hz instructions). Differences of two reads are exact
 * while less than 2^32 ticks apart. */
uint32_t board_ticks(void);
/* The counter's rate, ticks per second; 0 when the board has no counter. */
extern const uint32_t board_tick_hz;

/* Runs a loop of exactly 2 * n instructions (a subtract and a branch per
 * turn): a known instruction count to check the counter against. */
void board_spin(uint32_t n);

/* RAM the program used so far, in bytes (0 where the board cannot tell):
 * the deepest the stack went (its words were painted at reset), newlib's
 * heap (sbrk's break above the end of .bss), and .data + .bss. */
size_t board_stack_used(void);
size_t board_heap_used(void);
size_t board_static_bytes(void);

#endif
