/* startup.c — reset, faults and the board functions of board.h for a
 * Cortex-M4F, as QEMU's mps2-an386 models it (docs/porting.md).
 *
 * Reset: paint the stack, copy .data from flash, zero .bss, turn on the
 * FPU, start the tick counter, open the semihosting console, run main()
 * and exit through semihosting with its status. Linked with newlib-nano
 * and librdimon (semihosting system calls): no crt0, our own vector table.
 *
 * On your own board: link.ld's memory map; board_tick_hz and board_ticks()
 * (the DWT cycle counter, DWT_CYCCNT at 0xE0001004, is the usual choice:
 * QEMU does not model it); initialise_monitor_handles() becomes your UART's
 * set-up, with a _write() that sends printf's bytes to it. */
#include "board.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* link.ld's symbols: .data's image in flash and place in RAM, .bss, the
 * stack's reserved bottom and top, and `end` (where newlib's heap starts). */
extern uint32_t _sidata[], _sdata[], _edata[], _sbss[], _ebss[], _sstack[], _estack[];
extern char end[];
extern void initialise_monitor_handles(void);   /* librdimon */
extern void *sbrk(ptrdiff_t increment);                /* newlib; not in C11 headers */
extern int main(void);

void Reset_Handler(void);
void Fault_Handler(void);

/* CPACR: full access to coprocessors 10 and 11 (the FPU), ARMv7-M ARM B3.2.20. */
#define SCB_CPACR (*(volatile uint32_t *)0xE000ED88u)
/* mps2-an386's TIMER0, an Arm CMSDK APB timer (Arm DDI 0479C, 4.4): a 32-bit
 * down counter at the peripheral clock, 25 MHz, the same as the CPU's. */
#define TIMER0_CTRL (*(volatile uint32_t *)0x40000000u)
#define TIMER0_VALUE (*(volatile uint32_t *)0x40000004u)
#define TIMER0_RELOAD (*(volatile uint32_t *)0x40000008u)

const uint32_t board_tick_hz = 25000000u;

/* A word no program writes by chance, in every stack word below the
 * caller's frame; board_stack_used() finds the lowest one overwritten. */
static const uint32_t stack_paint = 0x57AC57ACu;

/* The stack pointer now; the painting stops 64 bytes below it (this
 * function's own frame). volatile stores: the compiler must not turn the
 * loop into a memset call, whose frame would sit in the painted words. */
static void paint_stack(void)
{
    uint32_t *sp;
    __asm volatile("mov %0, sp" : "=r"(sp));
    for (volatile uint32_t *p = _sstack; p < sp - 16; p++)
        *p = stack_paint;
}

size_t board_stack_used(void)
{
    const uint32_t *p = _sstack;
    while (p < _estack && *p == stack_paint)
        p++;
    return (size_t)((const char *)_estack - (const char *)p);
}

size_t board_heap_used(void)
{
    return (size_t)((char *)sbrk(0) - end);
}

size_t board_static_bytes(void)
{
    return (size_t)(((char *)_edata - (char *)_sdata) + ((char *)_ebss - (char *)_sbss));
}

/* TIMER0 counts down from 2^32 - 1 and reloads it: the ticks since reset
 * are its complement, wrapping at 2^32 like board.h says. */
static void start_ticks(void)
{
    TIMER0_RELOAD = 0xFFFFFFFFu;
    TIMER0_VALUE = 0xFFFFFFFFu;
    TIMER0_CTRL = 1u;   /* enable; no interrupt, internal clock */
}

uint32_t board_ticks(void)
{
    return 0xFFFFFFFFu - TIMER0_VALUE;
}

void board_spin(uint32_t n)
{
    __asm volatile("1: subs %0, %0, #1\n\tbne 1b" : "+r"(n) : : "cc");
}

void Reset_Handler(void)
{
    paint_stack();
    memcpy(_sdata, _sidata, (size_t)((char *)_edata - (char *)_sdata));
    memset(_sbss, 0, (size_t)((char *)_ebss - (char *)_sbss));
    SCB_CPACR |= 0xFu << 20;
    __asm volatile("dsb\n\tisb");
    start_ticks();
    initialise_monitor_handles();
    exit(main());
}

/* Any fault: say so on the semihosting console and stop QEMU with failure. */
void Fault_Handler(void)
{
    printf("FATAL: CPU fault\n");
    exit(1);
}

/* Initial stack pointer, reset, then NMI, HardFault, MemManage, BusFault,
 * UsageFault; the rest unused by this program (no interrupts are enabled). */
__attribute__((section(".isr_vector"), used)) static void (*const vectors[16])(void) = {
    (void (*)(void))(uintptr_t)_estack, Reset_Handler, Fault_Handler, Fault_Handler,
    Fault_Handler, Fault_Handler, Fault_Handler,
};
