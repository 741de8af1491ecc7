/* test/portable/cortex-m/startup.c — reset and fault handlers for the
 * Cortex-M4F (QEMU mps2-an386): copy .data from flash, zero .bss, turn on
 * the FPU, open the semihosting console, run main() and exit through
 * semihosting with its status. Linked with newlib-nano and librdimon
 * (semihosting system calls); no crt0, our own vector table. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern uint32_t _sidata[], _sdata[], _edata[], _sbss[], _ebss[], _estack[];
extern void initialise_monitor_handles(void);
extern int main(void);

void Reset_Handler(void);
void Fault_Handler(void);

/* CPACR: full access to coprocessors 10 and 11 (the FPU), ARMv7-M ARM B3.2.20. */
#define SCB_CPACR (*(volatile uint32_t *)0xE000ED88u)

void Reset_Handler(void)
{
    memcpy(_sdata, _sidata, (size_t)((char *)_edata - (char *)_sdata));
    memset(_sbss, 0, (size_t)((char *)_ebss - (char *)_sbss));
    SCB_CPACR |= 0xFu << 20;
    __asm volatile("dsb\n\tisb");
    initialise_monitor_handles();
    exit(main());
}

/* Any fault: say so on the semihosting console and stop QEMU with failure. */
void Fault_Handler(void)
{
    printf("FATAL: CPU fault\n0 passed, 1 failed\n");
    exit(1);
}

/* Initial stack pointer, reset, then NMI, HardFault, MemManage, BusFault,
 * UsageFault; the rest unused by this program (no interrupts are enabled). */
__attribute__((section(".isr_vector"), used)) static void (*const vectors[16])(void) = {
    (void (*)(void))(uintptr_t)_estack, Reset_Handler, Fault_Handler, Fault_Handler,
    Fault_Handler, Fault_Handler, Fault_Handler,
};
