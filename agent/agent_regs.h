/* agent/agent_regs.h - what the agent's stubs (agent_hooks.c, agent_points.c) save of a thread's
 * registers before they call C, and put back after: the general registers C may change are
 * pushed below %rbp (72 bytes), the x87/SSE/AVX/AVX-512 state saved by xsavec or xsave in a
 * 64-byte-aligned area of pa_xsave_size bytes below them (agent_hooks.h; agent.c sets it from
 * cpuid), and RESTORE_ALL takes both back, leaving %rsp at %rbp. Assembly text, for __asm__. */
#ifndef PA_AGENT_REGS_H
#define PA_AGENT_REGS_H

#define SAVE_GPRS                                                                                                      \
	"	push %rax\n	push %rcx\n	push %rdx\n	push %rsi\n	push %rdi\n"                                                 \
	"	push %r8\n	push %r9\n	push %r10\n	push %r11\n"
#define SAVE_VECTORS                                                                                                   \
	"	sub pa_xsave_size(%rip), %rsp\n"                                                                             \
	"	and $-64, %rsp\n"                                                                                            \
	"	xor %eax, %eax\n"                                                                                            \
	"	mov %rax, 512(%rsp)\n	mov %rax, 520(%rsp)\n	mov %rax, 528(%rsp)\n	mov %rax, 536(%rsp)\n"                     \
	"	mov %rax, 544(%rsp)\n	mov %rax, 552(%rsp)\n	mov %rax, 560(%rsp)\n	mov %rax, 568(%rsp)\n"                     \
	"	mov pa_xsave_mask(%rip), %eax\n"                                                                             \
	"	xor %edx, %edx\n"                                                                                            \
	"	cmpb $0, pa_xsavec(%rip)\n"                                                                                  \
	"	je 1f\n"                                                                                                     \
	"	xsavec (%rsp)\n"                                                                                             \
	"	jmp 2f\n"                                                                                                    \
	"1:	xsave (%rsp)\n"                                                                                            \
	"2:\n"
#define RESTORE_ALL                                                                                                    \
	"	mov pa_xsave_mask(%rip), %eax\n"                                                                             \
	"	xor %edx, %edx\n"                                                                                            \
	"	xrstor (%rsp)\n"                                                                                             \
	"	lea -72(%rbp), %rsp\n"                                                                                       \
	"	pop %r11\n	pop %r10\n	pop %r9\n	pop %r8\n"                                                                   \
	"	pop %rdi\n	pop %rsi\n	pop %rdx\n	pop %rcx\n	pop %rax\n"

#endif
