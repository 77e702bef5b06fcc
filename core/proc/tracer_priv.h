/* core/proc/tracer_priv.h - the inside of the tracer, shared by its files (tracer.c lists them and
 * what each owns); the structs and the calls a trap layer may use are in tracer_traps.h. Not for use
 * outside core/proc/. */
#ifndef PS_TRACER_PRIV_H
#define PS_TRACER_PRIV_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "tracer_traps.h"

static inline int is_stopsig(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

/* tracer_proc.c */
struct ps_tr_thread *ps__tr_th_new(struct ps_tracer *t, pid_t tid, struct ps_tr_proc *p, int state);
void ps__tr_th_free(struct ps_tracer *t, struct ps_tr_thread *th);
struct ps_tr_proc *ps__tr_proc_new(struct ps_tracer *t, pid_t pid);
void ps__tr_proc_free(struct ps_tracer *t, struct ps_tr_proc *p);
int ps__tr_born(struct ps_tracer *t, struct ps_tr_thread *ch, int sig, int ev);
int ps__tr_on_newchild(struct ps_tracer *t, struct ps_tr_thread *th, int ev);
int ps__tr_on_exec(struct ps_tracer *t, struct ps_tr_thread *th);
void ps__tr_detach_all(struct ps_tracer *t);

/* tracer_stop.c */
int ps__tr_handle(struct ps_tracer *t, pid_t pid, int st);
int ps__tr_settle(struct ps_tracer *t);

/* tracer_wait.c */
pid_t ps__tr_wait(struct ps_tracer *t, int *st);
/* Around ps_tracer_run()'s loop: the signals ps__tr_wait() lets in only while it sleeps. */
void ps__tr_wait_begin(struct ps_tracer *t);
void ps__tr_wait_end(struct ps_tracer *t);
int ps__tr_tty_signal(const struct ps_tracer *t, pid_t tid, int sig);

#endif
